from datetime import date

from services.declare import Input, Period, Price, Service, SubjectSpec, clock

from .tax import FEDERAL

notice_response = Service(
    name="notice-response",
    title="the reply to notice {period}",
    subject=SubjectSpec(kind="taxpayer", key="ein", pattern=r"[0-9]{2}-[0-9]{7}", example="12-3456789",
                        period=Period(of="tax_year")),
    price=Price(usd=450, within="3d before reply"),
    input={"reply_by": Input("date", required=True, help="the day the notice says to reply by, YYYY-MM-DD")},
    clocks={
        # The reply is due on the notice's reply_by: a date the IRS sets, read from the event.
        "reply": clock("reply", due=lambda x: date.fromisoformat(x.input["reply_by"]), items=("US",),
                       rungs=("notice 14d", "escalate 3d"), answers_for="customer:officer", title="reply",
                       calendar=FEDERAL),
    },
)
