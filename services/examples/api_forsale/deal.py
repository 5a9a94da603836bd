from services.declare import Period, Pool, Price, Scope, Service, Signal, Step, SubjectSpec

ACCOUNT = SubjectSpec(kind="account", key="domain", pattern=r"[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?(\.[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?)+",
                      example="alpha.example", period=Period(of="month"))

deal = Service(
    name="deal",
    title="the {period} deal",
    subject=ACCOUNT,
    # The buyer's $1,500 is held from the open; each act done is charged from it, and if the deal lapses
    # the rest returns. The broker who does an act is paid their share as it commits, whatever follows.
    price=Price(usd=1500, within="30d", late={"percent": 10}, hold=True),
    # Who is a broker is the brand's data (the console's Pools page; loadexample puts grace and linus in).
    pools={"brokers": Pool(hold="2d")},
    scopes={"registrar": Scope(party="the buyer", term="5d")},
    policy={"stall_days": 14},
    steps=(
        Step("appraise", pool="brokers", within="5d", usd=200, pay=120),
        Step("offer", party="the buyer", expires="7d"),
        Step("transfer", pool="brokers", needs="registrar", within="3d", usd=300, pay=180),
    ),
    # The account went quiet for stall_days (the brand's policy): the deal goes back to the buyer.
    signals={"gone_dark": Signal(silent="stall_days", goto="offer")},
)
