"""A Service whose dates answer to members of record: the filing date to whoever takes the job's preparing Task
(``member:preparers``, the pool's name), the review to the job's reviewer (``member:reviewer``), whom the owner
names with Assign."""

from datetime import date

from calendars.specs import DueInput
from services.declare import Period, Pool, Price, Service, Step, SubjectSpec, clock

FIRM = SubjectSpec(kind="firm", key="code", pattern=r"[A-Z]{3}", example="ABC", period=Period(of="tax_year"))


def april_15(x: DueInput) -> date:
    return date(int(x.period) + 1, 4, 15)


def april_1(x: DueInput) -> date:
    return date(int(x.period) + 1, 4, 1)


prepared = Service(
    name="t-prepared", subject=FIRM, price=Price(usd=10), pools={"preparers": Pool(hold="2d")},
    steps=(Step("prepare", pool="preparers", within="30d"),),
    clocks={"file": clock("file", due=april_15, items=("US",), answers_for="member:preparers"),
            "review": clock("review", due=april_1, items=("US",), answers_for="member:reviewer")})
