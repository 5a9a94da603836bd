"""The ledger, read back: it balances, and says so. Every figure is an integer in the currency's smallest unit
(cents for usd), summed by the database: one grouped query per question, never one per job or line.

- per job with a hold: hold = charges + release once the job ends (while open, what is still held is the rest);
- per brand: a balance, what the brand keeps after credits, refunds and its members' pay;
- per subject: a statement for each cycle of each subscription (included, charged, credited, refunded);
- per member: what they earned in a period (their pay lines).

A void line (a test clock's lines when it is deleted) counts nowhere.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from datetime import datetime
from zoneinfo import ZoneInfo

from django.db.models import Count, Q, Sum

from calendars.models import Subject

from .models import Job, MoneyLine, Subscription

KINDS = tuple(MoneyLine.Kind.values)
CURRENCY = "usd"


def _lines(**filters) -> object:
    return MoneyLine.objects.filter(**filters).exclude(status=MoneyLine.Status.VOID)


@dataclass(frozen=True)
class JobLedger:
    job: str
    status: str
    held: int
    charged: int
    released: int
    credited: int
    refunded: int
    pay: int

    @property
    def still_held(self) -> int:
        """What the hold still keeps aside: nothing, once the job has ended."""
        return self.held - self.charged - self.released if self.held else 0

    @property
    def balanced(self) -> bool:
        """hold = charges + release for an ended job; an open one has charged and released no more than it
        holds. A job with no hold has nothing to balance."""
        if not self.held:
            return True
        if self.status == Job.Status.OPEN:
            return self.still_held >= 0
        return self.still_held == 0


def _sums(qs, *by: str) -> dict[tuple, dict[str, int]]:
    out: dict[tuple, dict[str, int]] = defaultdict(lambda: dict.fromkeys(KINDS, 0))
    for row in qs.values(*by, "kind").annotate(cents=Sum("amount_cents")).order_by():
        out[tuple(row[b] for b in by)][row["kind"]] = row["cents"] or 0
    return out


def job_ledgers(jobs) -> list[JobLedger]:
    """Each job's lines by kind, in one grouped query."""
    jobs = list(jobs)
    sums = _sums(_lines(job__in=[j.pk for j in jobs]), "job_id")
    out = []
    for job in jobs:
        s = sums[(job.pk,)]
        out.append(JobLedger(job.pk, job.status, s["hold"], s["charge"], s["release"], s["credit"], s["refund"],
                             s["pay"]))
    return out


@dataclass(frozen=True)
class Balance:
    currency: str
    charged: int
    credited: int
    refunded: int
    pay: int
    held: int  # what holds still keep aside, for jobs still open
    owed: int  # of all the lines above, what is not collected yet
    lines: int
    unbalanced: list[str] = field(default_factory=list)  # jobs whose hold != charges + release

    @property
    def net(self) -> int:
        """What the brand keeps: its charges less what came off its line and what it owes its members."""
        return self.charged - self.credited - self.refunded - self.pay

    @property
    def balanced(self) -> bool:
        return not self.unbalanced


def brand_balance(*, brand_id: str, domain: str) -> Balance:
    """The brand's balance on one clock domain: two queries, whatever the number of lines (the lines grouped
    by job, kind and status; the status of the jobs with a hold)."""
    total: dict[str, int] = dict.fromkeys(KINDS, 0)
    per_job: dict[str, dict[str, int]] = defaultdict(lambda: dict.fromkeys(KINDS, 0))
    owed = lines = 0
    for row in (_lines(brand_id=brand_id, domain=domain).values("job_id", "kind", "status")
                .annotate(cents=Sum("amount_cents"), n=Count("id")).order_by()):
        cents = row["cents"] or 0
        total[row["kind"]] += cents
        lines += row["n"]
        if row["status"] == MoneyLine.Status.OWED and row["kind"] not in ("hold", "release"):
            owed += cents
        if row["job_id"] is not None:
            per_job[row["job_id"]][row["kind"]] += cents
    # Per job, only for jobs with a hold: hold = charges + release (ended), or no more than the hold (open).
    held = {job_id: s for job_id, s in per_job.items() if s["hold"]}
    status = dict(Job.objects.filter(pk__in=held).values_list("pk", "status")) if held else {}
    still, unbalanced = 0, []
    for job_id, s in sorted(held.items()):
        ledger = JobLedger(job_id, status.get(job_id, Job.Status.OPEN), s["hold"], s["charge"], s["release"],
                           s["credit"], s["refund"], s["pay"])
        still += max(ledger.still_held, 0)
        if not ledger.balanced:
            unbalanced.append(job_id)
    return Balance(CURRENCY, total["charge"], total["credit"], total["refund"], total["pay"], still, owed, lines,
                   unbalanced)


@dataclass(frozen=True)
class Statement:
    subscription: str | None  # None: the subject's orders outside any plan, one statement per month
    service: str
    cycle: int | None
    starts: datetime
    ends: datetime | None  # None: the cycle still running
    included: dict[str, int]  # jobs the plan included this cycle, by Service
    charged: int
    credited: int
    refunded: int
    held: int  # what a holding job's hold still keeps aside
    currency: str = CURRENCY

    @property
    def total(self) -> int:
        """What the subject paid for the cycle: its charges less its credits and refunds."""
        return self.charged - self.credited - self.refunded


def subject_statements(*, subject: Subject) -> list[Statement]:
    """A statement for each cycle of each of the subject's subscriptions, newest first; the lines of jobs
    ordered outside a plan by the month (in the subject's zone) they were owed in. Three queries."""
    return statements_of(subjects=[subject]).get(subject.pk, [])


def statements_of(*, subjects: list[Subject]) -> dict[str, list[Statement]]:
    """``subject_statements`` for many subjects (the console's export): the same three queries for all."""
    if not subjects:
        return {}
    domains = {s.domain for s in subjects}
    by_id = {s.pk: s for s in subjects}
    subs = list(Subscription.objects.filter(subject__in=subjects, domain__in=domains).order_by("opened_at", "id"))
    lines = list(_lines(domain__in=domains).filter(Q(subscription__in=subs) | Q(job__subject__in=subjects))
                 .values_list("subscription_id", "job_id", "kind", "amount_cents", "owed_at", "job__subject_id",
                              "subscription__subject_id")
                 .order_by("owed_at", "id"))
    jobs = list(Job.objects.filter(subscription__in=subs, domain__in=domains).values_list(
        "subscription_id", "service", "price_cents", "opened_at"))
    # A cycle starts at its charge: the plan's own lines (no job) of kind charge, in order.
    starts: dict[str, list[datetime]] = defaultdict(list)
    per_sub: dict[str, list] = defaultdict(list)
    for r in lines:
        if r[0]:
            per_sub[r[0]].append(r)
            if r[1] is None and r[2] == "charge":
                starts[r[0]].append(r[4])
    included_by: dict[str, list] = defaultdict(list)
    for sub_id, service, cents, opened in jobs:
        if not cents:
            included_by[sub_id].append((service, opened))
    out: dict[str, list[Statement]] = defaultdict(list)
    for sub in subs:
        begins = starts.get(sub.id) or [sub.opened_at]
        for n, start in enumerate(begins, start=1):
            end = begins[n] if n < len(begins) else None

            def within(at: datetime, start=start, end=end) -> bool:
                return at >= start and (end is None or at < end)

            included: dict[str, int] = defaultdict(int)
            for service, opened in included_by[sub.id]:
                if within(opened):
                    included[service] += 1
            out[sub.subject_id].append(_statement(sub.id, sub.service, n, start, end, dict(included),
                                                  [r for r in per_sub[sub.id] if within(r[4])]))
    # Orders outside a plan: one statement per month (in the subject's zone) they were owed in.
    months: dict[tuple[str, str], list] = defaultdict(list)
    for r in lines:
        if r[0] is None and r[5] in by_id:
            at = r[4].astimezone(_zone(by_id[r[5]]))
            months[(r[5], f"{at:%Y-%m}")].append(r)
    for (subject_id, month), rows in months.items():
        out[subject_id].append(_statement(None, month, None, rows[0][4], None, {}, rows))
    return {k: sorted(v, key=lambda s: (s.starts, s.subscription or ""), reverse=True) for k, v in out.items()}


def _zone(subject: Subject) -> ZoneInfo:
    """The subject's calendar's zone (select_related("calendar") reads it with the subject); UTC without one."""
    return ZoneInfo(subject.calendar.zone) if subject.calendar_id else ZoneInfo("UTC")


def _statement(sub_id, service, cycle, start, end, included, rows) -> Statement:
    s = dict.fromkeys(KINDS, 0)
    for row in rows:
        s[row[2]] += row[3]
    held = max(s["hold"] - s["charge"] - s["release"], 0) if s["hold"] else 0
    return Statement(sub_id, service, cycle, start, end, included, s["charge"], s["credit"], s["refund"], held)


@dataclass(frozen=True)
class Earnings:
    member_id: int  # the user
    since: datetime
    until: datetime
    earned: int
    paid: int  # of which collected (its money timer has run)
    acts: list[dict]
    currency: str = CURRENCY


def member_earnings(*, brand_id: str, domain: str, user_id: int, since: datetime, until: datetime) -> Earnings:
    """What a member earned in [since, until): their pay lines, one query."""
    rows = list(_lines(brand_id=brand_id, domain=domain, kind="pay", member_id=user_id, owed_at__gte=since,
                       owed_at__lt=until).order_by("owed_at", "id")
                .values("id", "job_id", "job__service", "job__subject__name", "step", "amount_cents", "status",
                        "owed_at"))
    earned = sum(r["amount_cents"] for r in rows)
    paid = sum(r["amount_cents"] for r in rows if r["status"] == MoneyLine.Status.COLLECTED)
    return Earnings(user_id, since, until, earned, paid, rows)
