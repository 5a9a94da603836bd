"""calendars create --name "New York office" --zone America/New_York [--holidays US-DC] [--weekends sat,sun]
[--closes 23:59] [--dst-skipped next_minute|skip] [--dst-repeated first|second] [--closed 2028-03-01="IRS disaster day"]
[--default] [--brand] · calendars list [--brand]"""

from __future__ import annotations

from calendars.brand_calendars import calendar_create
from calendars.models import Calendar, ClosedDay
from timers.clock import wall_now
from timers.management.base import KTCommand

DAYS = ("mon", "tue", "wed", "thu", "fri", "sat", "sun")


def _weekends(text: str) -> list:
    return [DAYS.index(d[:3].lower()) if d[:3].lower() in DAYS else d for d in text.split(",") if d] if text else []


class Command(KTCommand):
    help = "A brand's calendars: where its subjects' dates fall (zone, weekends, holidays, closed days)."

    def add_arguments(self, parser):
        sub = parser.add_subparsers(dest="action", required=True)
        mk = sub.add_parser("create", help="a calendar of the brand's (its first is its default)")
        mk.add_argument("--name", required=True)
        mk.add_argument("--zone", required=True, help="an IANA zone: America/New_York")
        mk.add_argument("--weekends", default="sat,sun", help="days nothing is due on: sat,sun (or none: '')")
        mk.add_argument("--closes", default="23:59", help="the local minute a due closes, HH:MM")
        mk.add_argument("--dst-skipped", default="next_minute",
                        help="a local time the spring change skips: next_minute (default) or skip")
        mk.add_argument("--dst-repeated", default="first",
                        help="a local time the fall change repeats: first (default) or second")
        mk.add_argument("--holidays", default="", help="the holidays package's country[-subdivision]: US, US-DC, GB")
        mk.add_argument("--closed", action="append", metavar='DATE="WHY"', help="a closed day of the brand's own")
        mk.add_argument("--default", action="store_true", help="make it the brand's default calendar")
        mk.add_argument("--brand")
        ls = sub.add_parser("list")
        ls.add_argument("--brand")

    def handle(self, *args, **o):
        brand = self.brand(o["brand"])
        if o["action"] == "create":
            country, _, subdiv = o["holidays"].partition("-")
            closed = []
            for text in o["closed"] or []:
                day, _, why = text.partition("=")
                closed.append({"date": day.strip(), "why": why.strip().strip('"') or "closed"})
            cal = calendar_create(brand=brand, name=o["name"], zone=o["zone"], weekends=_weekends(o["weekends"]),
                                  closes=o["closes"], holiday_country=country, holiday_subdivision=subdiv,
                                  closed_days=closed, default=o["default"], dst_skipped=o["dst_skipped"],
                                  dst_repeated=o["dst_repeated"], now=wall_now())
            self.stdout.write(self.line(cal))
            return
        for cal in Calendar.objects.filter(brand=brand).order_by("name", "id"):
            self.stdout.write(self.line(cal))

    @staticmethod
    def line(cal: Calendar) -> str:
        holidays = "-".join(p for p in (cal.holiday_country, cal.holiday_subdiv) if p) or "no holidays"
        weekends = ",".join(DAYS[d] for d in sorted(cal.weekends)) or "no weekends"
        own = ClosedDay.objects.filter(calendar=cal).count()
        return " · ".join([cal.id, cal.name, cal.zone, f"closes {cal.closes:%H:%M}", weekends, holidays,
                           f"{own} closed day{'s' if own != 1 else ''} of its own"]
                          + ([f"skipped times: {cal.dst_skipped}"] if cal.dst_skipped != "next_minute" else [])
                          + ([f"repeated times: {cal.dst_repeated}"] if cal.dst_repeated != "first" else [])
                          + (["the brand's default"] if cal.is_default else []))
