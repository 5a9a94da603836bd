"""Small Services for the domain tests: a monthly plan whose renewal and mint share an instant, a job with
a deadline and a late price, and yearly plans that catch up each way."""

from services.declare import Period, Price, Schedule, Service, Signal, SubjectSpec

SUBJECT = SubjectSpec(kind="account", key="domain", period=Period(of="month"), keeps=("carryforwards",))

task_job = Service(name="t-task", subject=SUBJECT, price=Price(usd=100, within="10d", late={"usd": 30}))

monthly_plan = Service(
    name="t-monthly", subject=SUBJECT,
    price=Price(usd=49, every="month", includes={"t-task": 1}),
    schedule={"job": Schedule(order="t-task", each="month", at="1d after start")},
)

evening_plan = Service(
    name="t-evening", subject=SUBJECT, price=Price(usd=49, every="month", includes={"t-task": 1}),
    schedule={"job": Schedule(order="t-task", each="month", at="1d after start", time="17:30")},
)

yearly_open = Service(
    name="t-yearly-open", subject=SUBJECT, price=Price(usd=10, every="year", includes={"t-task": 9}),
    schedule={"job": Schedule(order="t-task", each="year", at="1mo after end", catch_up="open")},
)

yearly_latest = Service(
    name="t-yearly-latest", subject=SUBJECT, price=Price(usd=10, every="year", includes={"t-task": 9}),
    schedule={"job": Schedule(order="t-task", each="year", at="1mo after end", catch_up="latest")},
)

deal = Service(name="t-deal", subject=SUBJECT, signals={"gone_dark": Signal(silent="14d", goto="dark")})
