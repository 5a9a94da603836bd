from services.declare import Period, Price, Service, SubjectSpec, Wait, clock

from . import tax

annual_return = Service(
    name="annual-return",
    title="the {period} return",
    subject=SubjectSpec(kind="taxpayer", key="ein", pattern=r"[0-9]{2}-[0-9]{7}", example="12-3456789",
                        period=Period(of="tax_year", ends=lambda i: i.get("year_end", "12-31")),
                        keeps=("carryforwards", "tax")),
    # The return waits on the organizer's books from the mint: its deadline counts only once they arrive.
    waits=Wait(on="the organizer", until="books.received"),
    price=Price(usd=1_200, within="5d before file", late={"usd": 200}),
    clocks={
        "file": clock(
            "file", due=tax.file_due, items=tax.items, moves={"extend": tax.extended_due},
            rungs=("notice 90d", "notice 30d", "escalate 7d", "ack daily 7d", "run tentative 3d"),
            runs={"tentative": "extend"}, follows=tax.follows, answers_for="customer:officer", title="file",
            calendar=tax.FEDERAL,
        ),
        # The federal extension pays what is owed: the pay step commits with it, and the date is kept.
        "pay": clock("pay", due=tax.pay_due, items=("US",), hard=True, rungs=("notice 30d",),
                     answers_for="customer:officer", title="pay", kept_with={"extend": "with the extension"},
                     calendar=tax.FEDERAL),
        # A credit the return carries forward: it lives on the subject, so it outlives the return's job, and
        # repins when a newer return joins the subject; it expires 20 years on.
        "carryforward": clock("carryforward", due=tax.carryforward_expires, items=tax.carryforwards, hard=True,
                              lives_on="subject", rungs=("notice 90d",), answers_for="customer:officer",
                              title="use the carryforward", calendar=tax.FEDERAL),
    },
)
