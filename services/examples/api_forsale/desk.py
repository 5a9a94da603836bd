from services.declare import Period, Price, Service, SubjectSpec

deal_desk = Service(
    name="deal-desk",
    subject=SubjectSpec(kind="account", key="domain", period=Period(of="month")),
    price=Price(usd=0),
    on={"deal.opened": "deal"},  # each deal opened on the account is a deal job, priced as the deal
)
