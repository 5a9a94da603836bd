"""Money: a line posted as owed with the money timer that collects it, the amounts the API, the CLI and the
record take (whole cents, one currency), and how an amount is said (``usd``).

A money line's id is seeded by what it is for (its owner, kind and occurrence), so posting the same line
again inside the tick finds it taken, and a replay posts the same ids.
"""

from __future__ import annotations

from datetime import datetime

from timers import batch as batches
from timers.armer import Armer
from timers.domains import domain_id
from timers.errors import KeepingTimeError

from .kinds import MONEY
from .models import Job, MoneyLine, Subscription

CURRENCIES = ("usd",)  # what a brand's lines are kept in; every amount is in its smallest unit (cents)
MAX_AMOUNT = 99_999_999  # Stripe's most for one usd amount ($999,999.99); a line's sum stays a 32-bit integer


def usd(cents: int) -> str:
    return f"${cents / 100:,.2f}"


def money_line_id(domain: str, key_owner: str, kind: str, occurrence: str) -> str:
    """A money line's id, seeded by what it is for: posting the same line again finds it taken."""
    return domain_id("mny", domain, key_owner, kind, occurrence)


def post_money(*, armer: Armer, brand_id: str, domain: str, kind: str, cents: int, memo: str, owed_at: datetime,
               key_owner: str, occurrence: str, subscription: Subscription | None = None,
               job: Job | None = None, step: str = "", member_id: int | None = None) -> MoneyLine:
    """Post a line as owed and arm the money timer (place 8) that collects it. ``member_id``: a pay line's
    member (the user who did the act)."""
    line = MoneyLine(
        id=money_line_id(domain, key_owner, kind, occurrence), brand_id=brand_id, domain=domain,
        subscription=subscription, job=job, kind=kind, amount_cents=cents, memo=memo, owed_at=owed_at, step=step,
        member_id=member_id,
    )
    batches.create(line)
    pinned = job or subscription
    armer.arm(f"{key_owner}:money:{kind}:{occurrence}", owed_at=owed_at, handler=MONEY, data={"line": line.id},
              opened_at=pinned.opened_at, version=pinned.version)
    return line


def check_amount(amount: object, currency: object = "usd", *, param: str = "amount") -> tuple[int, str]:
    """An amount as the API, the CLI and the record take it: a positive whole number in the currency's
    smallest unit (Stripe's ``amount``: 30000 is $300.00), never a float or a dollar string."""
    if isinstance(amount, bool) or not isinstance(amount, int) or not 0 < amount <= MAX_AMOUNT:
        shown = f"{amount!r}" if isinstance(amount, str) else str(amount)
        raise _bad(f"{param}: a whole number of cents from 1 to {MAX_AMOUNT} (30000 is $300.00), not {shown}",
                   "invalid_amount", param)
    if currency not in CURRENCIES:
        raise _bad(f"currency: one of {', '.join(CURRENCIES)}, not {currency!r}", "invalid_currency", "currency")
    return amount, str(currency)


def _bad(message: str, code: str, param: str) -> KeepingTimeError:
    err = KeepingTimeError(message, code=code)
    err.param = param  # the API's answer names the field (timers.api.errors)
    return err
