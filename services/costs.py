"""What a miss costs, for the apps to sort and say: a job's late price, a guarantee's penalty cap, a hard
date's refusal, a lapse's returned hold. One place, read by the customer portal, the delivery portal and the
owner console; set queries per page, never one per row."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from calendars import words
from calendars.models import Clock

from . import registry
from .models import Job, MoneyLine
from .money import usd


@dataclass(frozen=True)
class Cost:
    cents: int  # what the brand pays or returns if it is missed (0: nothing charged)
    says: str  # readable: "$60.00 off the return's price if late; a hard date: the step is refused after it"
    late: int = 0  # of ``cents``: the late price (a job's)
    held: int = 0  # of ``cents``: the hold a lapse returns (a job's)


def clock_costs(clocks: Iterable[Clock]) -> dict[str, Cost]:
    """By clock id. A hard date refuses its step once it passes; a clock that carries a guarantee credits a
    penalty from the brand's line up to its cap; a job's deadline written before the clock takes the late
    price off the job's charge."""
    clocks = list(clocks)
    jobs = {j.id: j for j in Job.objects.filter(pk__in={c.owner_ref for c in clocks if c.owner_ref.startswith("job_")})}
    out: dict[str, Cost] = {}
    for clock in clocks:
        cents, says = 0, []
        job = jobs.get(clock.owner_ref)
        if job is not None:
            svc = registry.get(job.service, job.version)
            if svc.within is not None and svc.within.anchor == clock.name and svc.price.late:
                # As the deadline's firing credits it: off the job's own charge, so nothing for a job the
                # plan includes (said, so the owner sees why a late date there costs nothing).
                late = svc.price.late_cents(job.price_cents)
                cents += late
                says.append(f"{usd(late)} off the price if the work is late" if late else
                            "the plan includes this work: a late price comes off no charge")
        if clock.guarantee:
            cap = clock.guarantee_cap_cents
            cents += cap
            says.append(f"penalties credited from the brand's line, up to {usd(cap)}")
        if clock.hard:
            says.append("a hard date: its step is refused once it passes")
        out[clock.id] = Cost(cents, "; ".join(says) or "a reminder to whoever answers for it")
    return out


def customer_says(says: str, hard: bool, brand: str) -> str:
    """What a miss costs, from the customer's side (``Cost.says`` is the owner's): the customer portal and a
    reminder's email say it so."""
    out = []
    for part in [p.strip() for p in says.split(";") if p.strip()]:
        if part.startswith("$") and " off the price" in part:
            out.append(f"you pay {part.split(' off', 1)[0]} less if it's late")
        elif part.startswith("the plan includes this work"):
            out.append("included in your plan")
        elif part.startswith("penalties credited"):
            cap = part.rsplit("up to ", 1)[-1]
            out.append(f"{brand} pays any penalty, up to {cap}")
    if hard:
        out.append(words.kind("hard"))
    return "; ".join(out) or "a reminder only"


def job_costs(jobs: Iterable[Job]) -> dict[str, Cost]:
    """By job id: the late price, and the hold a lapse returns."""
    jobs = list(jobs)
    held: dict[str, int] = {}
    for job_id, cents in MoneyLine.objects.filter(job__in=jobs, kind="hold").values_list("job_id", "amount_cents"):
        held[job_id] = held.get(job_id, 0) + cents
    out: dict[str, Cost] = {}
    for job in jobs:
        svc = registry.get(job.service, job.version)
        late = svc.price.late_cents(job.price_cents) if svc.price.late else 0
        says = [f"{usd(late)} off the price if late"] if late else []
        if held.get(job.id):
            says.append(f"a lapse returns the {usd(held[job.id])} hold")
        out[job.id] = Cost(late + held.get(job.id, 0), "; ".join(says) or "no charge of its own", late=late,
                           held=held.get(job.id, 0))
    return out
