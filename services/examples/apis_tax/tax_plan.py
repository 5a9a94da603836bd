from services.declare import Period, Price, Schedule, Service, SubjectSpec

tax_plan = Service(
    name="tax-plan",
    title="Tax Plan",
    subject=SubjectSpec(kind="taxpayer", key="ein", period=Period(of="tax_year",
                                                                  ends=lambda i: i.get("year_end", "12-31")),
                        keeps=("carryforwards", "tax")),
    schedule={
        "annual": Schedule(order="annual-return", each="tax_year", at="1mo after end", catch_up="open"),
        "estimate": Schedule(order="estimate", each="quarter", at="10d before pay",
                             when=lambda i: i.get("entity") == "C corp"),
    },
    on={"notice.received": "notice-response"},
    price=Price(usd=2_400, every="year", includes={"annual-return": 1, "information-returns": 25, "estimate": 4,
                                                  "question": 12, "notice-response": 2}),
)
