from services.declare import Input, Period, Price, Schedule, Service, SubjectSpec

tax_plan = Service(
    name="tax-plan",
    title="Tax Plan",
    subject=SubjectSpec(kind="taxpayer", key="ein", pattern=r"[0-9]{2}-[0-9]{7}", example="12-3456789",
                        period=Period(of="tax_year", ends=lambda i: i.get("year_end", "12-31")),
                        keeps=("carryforwards", "tax")),
    schedule={
        "annual": Schedule(order="annual-return", each="tax_year", at="1mo after end", catch_up="open"),
        "estimate": Schedule(order="estimate", each="quarter", at="10d before pay",
                             when=lambda i: i.get("entity") == "C corp"),
    },
    on={"notice.received": "notice-response"},
    # What the plan and the returns it mints read: the estimates' schedule the entity, the file clock one item
    # per state (US-CA …, so a state is two capitals: it goes into timer keys), the tax year its end.
    input={
        "entity": Input("text", choices=("C corp", "S corp", "partnership", "individual"),
                        help="C corps also pay quarterly estimates"),
        "states": Input("list", of="text", pattern=r"[A-Z]{2}", max=60,
                        help="the states it files in besides the federal return, e.g. ['CA', 'NY']"),
        "year_end": Input("month_day", help="the tax year's last day, MM-DD; 12-31 when absent"),
    },
    price=Price(usd=2_400, every="year", includes={"annual-return": 1, "information-returns": 25, "estimate": 4,
                                                  "question": 12, "notice-response": 2}),
)
