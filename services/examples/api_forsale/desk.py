from services.declare import Period, Price, Service, SubjectSpec

deal_desk = Service(
    name="deal-desk",
    subject=SubjectSpec(kind="account", key="domain", pattern=r"[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?(\.[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?)+",
                        example="alpha.example", period=Period(of="month")),
    price=Price(usd=0),
    on={"deal.opened": "deal"},  # each deal opened on the account is a deal job, priced as the deal
)
