from services.declare import Period, Price, Service, SubjectSpec, clock

from . import tax

estimate = Service(
    name="estimate",
    title="the {period} estimate",
    subject=SubjectSpec(kind="taxpayer", key="ein", pattern=r"[0-9]{2}-[0-9]{7}", example="12-3456789",
                        period=Period(of="quarter")),
    price=Price(usd=300, within="2d before pay"),
    clocks={
        "pay": clock("pay", due=tax.estimate_due, items=("US",), hard=True, rungs=("notice 7d",),
                     answers_for="customer:officer", title="pay", calendar=tax.FEDERAL),
    },
)
