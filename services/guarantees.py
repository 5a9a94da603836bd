"""A brand's guarantee on a clock: a penalty notice for the clock's period is credited from the brand's
line, up to the guarantee's cap, less the time the job waited on the party when the guarantee excludes it.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from django.db import transaction

from calendars.answers import customers_clock
from calendars.models import Clock
from timers.armer import Armer
from timers.errors import KeepingTimeError
from timers.models import Event

from .models import Job, MoneyLine
from .money import check_amount, money_line_id, post_money


def _held_on_party(clock: Clock, job: Job, start: datetime, end: datetime) -> timedelta:
    """How much of [start, end) the job waited on the party (job.waiting .. job.resumed on the record)."""
    held, since = timedelta(0), None
    for type_, at_ in (Event.objects.filter(domain=clock.domain, subject=job.id, type__in=("job.waiting", "job.resumed"),
                                            owed_at__lt=end).order_by("seq").values_list("type", "owed_at")):
        if type_ == "job.waiting":
            since = at_ if since is None else since
        elif since is not None:
            held += max(timedelta(0), min(at_, end) - max(since, start))
            since = None
    if since is not None:
        held += max(timedelta(0), end - max(since, start))
    return held


@transaction.atomic
def penalty_notice(*, armer: Armer, clock: Clock, amount_cents: int, notice: str,
                   currency: str = "usd") -> MoneyLine | None:
    """A penalty notice for a clock's period. If the clock carries a guarantee (the brand answers for it),
    the penalty is credited from the brand's line, up to the guarantee's cap; AI and members' pay stay whole
    (a credit is the brand's own line: it never names a member, and no pay line changes).

    Only a clock the brand answers for (the brand, or one of its people, of record) carries the brand's
    guarantee: on a clock the customer answers for the notice is refused ``409 guarantee_not_brands``.
    With ``excludes: 'held'`` the time the job waited on the party, between the date and the notice, is left
    out: the credit is the penalty's share of the late time that was the brand's.

    One notice at a time per clock (its row is locked: the cap is read, then spent), and a notice already
    credited returns its line again and records nothing (its line's id is seeded by the notice)."""
    amount_cents, currency = check_amount(amount_cents, currency)
    Clock.objects.select_for_update().filter(pk=clock.pk).first()
    if clock.guarantee and customers_clock(clock):
        raise KeepingTimeError(f"{clock.answers_for or 'the customer'} answers for this date, not the brand: the brand's guarantee "
                               "covers only dates the brand or its people of record answer for",
                               code="guarantee_not_brands", status=409)
    job = Job.objects.filter(pk=clock.owner_ref).first()
    occurrence = f"guarantee {notice}"
    if job is not None:
        seen = MoneyLine.objects.filter(pk=money_line_id(clock.domain, job.id, "credit", occurrence)).first()
        if seen is not None:
            return seen
    cap = clock.guarantee_cap_cents
    already = sum(MoneyLine.objects.filter(job=job, kind="credit", memo__startswith=f"guarantee · {clock.id}")
                  .values_list("amount_cents", flat=True)) if job else 0
    covered, held = amount_cents, timedelta(0)
    if clock.guarantee and job is not None and (clock.guarantee or {}).get("excludes") == "held":
        due = clock.items.order_by("due_at").values_list("due_at", flat=True).first()
        if due is not None and armer.now > due:
            late = armer.now - due
            held = _held_on_party(clock, job, due, armer.now)
            covered = amount_cents * (late - held) // late  # floor: the brand never credits a cent it doesn't owe
    credit = max(0, min(covered, cap - already)) if clock.guarantee else 0
    armer.record("clock.penalty", subject=clock.id, data={
        "notice": notice, "amount": amount_cents, "currency": currency, "credited": credit, "cap": cap,
        "period": clock.period, **({"held_on_party_s": int(held.total_seconds())} if held else {})})
    if not credit or job is None:
        return None
    return post_money(armer=armer, brand_id=clock.brand_id, domain=clock.domain, kind="credit", cents=credit,
                      memo=f"guarantee · {clock.id} · {notice}", owed_at=armer.now, key_owner=job.id,
                      occurrence=occurrence, subscription=job.subscription, job=job)
