"""A Service that writes its calendar (seed keeping-time: "Every date falls on one calendar, written on Brand() or
on a Service"), and a key grammar of its own."""

from services.declare import CalendarSpec, Period, Price, Service, SubjectSpec

club = Service(
    name="t-club",
    subject=SubjectSpec(kind="club", key="code", pattern=r"[A-Z]{3}", example="ABC", period=Period(of="month")),
    price=Price(usd=10),
    calendar=CalendarSpec(name="Paris office", zone="Europe/Paris", holidays=("FR",), closes="18:00",
                          closed=(("2027-05-07", "bridge day"),)),
)
