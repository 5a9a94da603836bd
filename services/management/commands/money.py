"""money balance · money statements --subject sbj_… · money earnings MEMBER [--since …] [--until …] ·
money penalty --clock clk_… --notice CP14 --amount 30000 [--currency usd]

Amounts are whole cents with their currency, as the API takes them: --amount 30000 is $300.00, and 300.00 or
$300 is refused in one line (invalid_amount), exit 1. Each figure prints in cents and as dollars.
"""

from __future__ import annotations

import re

from calendars.models import Clock, Subject
from services.guarantees import penalty_notice
from services.ledger import brand_balance, member_earnings, subject_statements
from services.members import member_get, member_says
from services.money import check_amount, usd
from timers.armer import DirectArmer
from timers.errors import NotFound
from timers.management.base import KTCommand
from timers.models import live_domain
from timers.timeutil import parse_instant, trace_z

_DIGITS = re.compile(r"[0-9]{1,15}")
START, END = "0001-01-01T00:00:00Z", "9999-12-31T23:59:59Z"


def cents_option(text: str) -> int:
    """--amount as whole cents: digits only (a dollar figure is refused, never read as dollars)."""
    return check_amount(int(text) if _DIGITS.fullmatch(text) else text, param="--amount")[0]


def _figure(cents: int, currency: str = "usd") -> str:
    return f"{cents} {currency} ({usd(cents)})"


class Command(KTCommand):
    help = "The ledger: the brand's balance, a subject's statements, a member's earnings; record a penalty."

    def add_arguments(self, parser):
        sub = parser.add_subparsers(dest="action", required=True)
        bal = sub.add_parser("balance", help="the brand's balance, and whether every hold is charged or returned")
        st = sub.add_parser("statements", help="a subject's statement for each cycle")
        st.add_argument("--subject", required=True, help="sbj_…")
        earn = sub.add_parser("earnings", help="what a member earned in a period")
        earn.add_argument("member", help="mem_… or the username")
        earn.add_argument("--since", default=START, help="an instant (2027-10-01T00:00Z); the start of time if absent")
        earn.add_argument("--until", default=END, help="an instant, not included; the end of time if absent")
        pen = sub.add_parser("penalty", help="record a penalty notice for a clock's period")
        pen.add_argument("--clock", required=True, help="clk_…")
        pen.add_argument("--notice", required=True, help="the notice that assessed it: CP14")
        pen.add_argument("--amount", required=True, help="whole cents: 30000 is $300.00")
        pen.add_argument("--currency", default="usd")
        for p in (bal, earn):
            p.add_argument("--brand", help="the brand's name or id (needed when there are several)")
            p.add_argument("--test-clock", help="tc_…: its ledger; the live clock's when absent")

    def handle(self, *args, **o):
        getattr(self, f"_{o['action']}")(o)

    def _domain(self, o, brand) -> str:
        tc = self.test_clock(o.get("test_clock"))
        return tc.id if tc is not None else live_domain(brand.id)

    def _balance(self, o):
        brand = self.brand(o.get("brand"))
        b = brand_balance(brand_id=brand.id, domain=self._domain(o, brand))
        for label, cents in (("charged", b.charged), ("credited", b.credited), ("refunded", b.refunded),
                             ("pay", b.pay), ("net", b.net), ("held", b.held), ("owed", b.owed)):
            self.stdout.write(f"{label:<9} {_figure(cents, b.currency)}")
        self.stdout.write("balanced: every hold is charged or returned" if b.balanced else
                          f"NOT balanced: {', '.join(b.unbalanced)} (hold != charges + release)")

    def _statements(self, o):
        subject = Subject.objects.select_related("calendar").filter(pk=o["subject"]).first()
        if subject is None:
            raise NotFound(f"--subject: no subject {o['subject']!r}")
        for s in subject_statements(subject=subject):
            what = f"{s.service} cycle {s.cycle}" if s.subscription else f"orders {s.service}"
            ends = trace_z(s.ends) if s.ends else "now"
            included = ", ".join(f"{k} x{v}" for k, v in sorted(s.included.items())) or "nothing"
            self.stdout.write(f"{what} · {trace_z(s.starts)} → {ends} · included {included} · charged "
                              f"{_figure(s.charged)} · credited {_figure(s.credited)} · refunded "
                              f"{_figure(s.refunded)} · total {_figure(s.total)}")

    def _earnings(self, o):
        brand = self.brand(o.get("brand"))
        membership = member_get(brand=brand, ref=o["member"], param="member")
        e = member_earnings(brand_id=brand.id, domain=self._domain(o, brand), user_id=membership.user_id,
                            since=parse_instant(o["since"]), until=parse_instant(o["until"]))
        for a in e.acts:
            self.stdout.write(f"{trace_z(a['owed_at'])} · {a['job__service']} for {a['job__subject__name']} · "
                              f"{a['step']} · {_figure(a['amount_cents'])} · {a['status']}")
        self.stdout.write(f"{member_says(membership)} earned {_figure(e.earned)}, of which {_figure(e.paid)} paid")

    def _penalty(self, o):
        cents = cents_option(o["amount"])
        clock = Clock.objects.filter(pk=o["clock"]).first()
        if clock is None:
            raise NotFound(f"--clock: no clock {o['clock']!r}")
        line = penalty_notice(armer=DirectArmer(brand=clock.brand, domain=clock.domain), clock=clock,
                              amount_cents=cents, notice=o["notice"], currency=o["currency"])
        credited = line.amount_cents if line is not None else 0
        self.stdout.write(f"penalty {o['notice']} on {clock.id} · {_figure(cents, o['currency'])} · credited "
                          f"{_figure(credited, o['currency'])}" + (f" · {line.id}" if line is not None else ""))
