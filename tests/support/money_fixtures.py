"""Small Services for the money property test (tests/services/test_money_property.py): a monthly plan that renews, and
a job that holds the buyer's funds, whose two acts are done by members of a pool (each with its pay) and
whose one date the brand answers for with a guarantee."""

from datetime import date

from services.declare import Pool, Price, Service, Step, SubjectSpec, clock

SUBJECT = SubjectSpec(kind="account", key="domain")


def filing_due(x) -> date:
    return date(2031, 9, 1)  # far off: the tick a renewal runs never brings it


plan = Service(name="m-plan", subject=SUBJECT, price=Price(usd=49, every="month"))

job = Service(
    name="m-job", subject=SUBJECT,
    price=Price(usd=1_000, hold=True),
    pools={"crew": Pool(hold="2d")},
    steps=(Step("draft", pool="crew", usd=200, pay=150), Step("review", pool="crew", usd=300, pay=100)),
    clocks={"filing": clock("filing", due=filing_due, answers_for="the brand", guarantee={"cap_usd": 250},
                            title="filing")},
)
