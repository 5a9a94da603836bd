"""Services whose clocks name the calendar that binds their dates (calendars/closed_days.py, binding_calendar),
and one that names none: a filer's return due 15 April after its year, as the example's federal date."""

from datetime import date

from calendars.specs import DueInput
from services.declare import CalendarSpec, Period, Price, Service, SubjectSpec, clock

FEDERAL = CalendarSpec("t federal", zone="America/New_York", holidays="US-DC")
FILER = SubjectSpec(kind="filer", key="code", pattern=r"[A-Z]{3}", example="ABC", period=Period(of="tax_year"))


def april_15(x: DueInput) -> date:
    return date(int(x.period) + 1, 4, 15)


# Every item bound to the federal calendar, the Service's way: written once on the Service.
bound = Service(name="t-bound", subject=FILER, price=Price(usd=10), calendar=FEDERAL,
                clocks={"file": clock("file", due=april_15, items=("US", "US-CA"))})
# Each item its own: the federal date on the federal calendar, California's on the brand's calendar of that name.
by_item = Service(name="t-by-item", subject=FILER, price=Price(usd=10),
                  clocks={"file": clock("file", due=april_15, items=("US", "US-CA"),
                                        calendar={"US": FEDERAL, "US-CA": "California"})})
# Nothing named: the brand's default binds. A kind of its own, since a subject of a kind whose Service writes a
# calendar keeps its dates on it when it names none.
plain = Service(name="t-plain", subject=SubjectSpec(kind="payer", key="code", period=Period(of="tax_year")),
                price=Price(usd=10),
                clocks={"file": clock("file", due=april_15, items=("US",))})
