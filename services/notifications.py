"""Who hears a date: a Notification row per person and one email each to that person's address, through the
armer of what raised it (a lapse, a notice, a reminder). A person is a record: a contact of the customer's or
a member of the brand (calendars/answers.py's Person); "owner" stands for the brand's owners, each by name.

Inside the tick the armer is the firing's: the rows are written in its atomic handler (the gate commits them
with the lapse, or nothing) and the emails leave through the outbox after the commit, exactly once. The
unique constraint (domain, key, recipient, kind) is what makes a replay or a redelivered wake notify no one
twice: one INSERT … ON CONFLICT DO NOTHING skips a duplicate, and only rows created now are emailed.
"""

from __future__ import annotations

from typing import Any
from zoneinfo import ZoneInfo

from django.db import transaction

from calendars.answers import Person
from calendars.clock_keys import DUE_HANDLER, RUNG_HANDLER
from calendars.models import Calendar
from timers import batch as batches
from timers import outbox
from timers.clock import wall_now
from timers.engine import Firing
from timers.ids import new_id
from timers.models import Brand, Membership, Outbox
from timers.rows import insert_new
from timers.timeutil import local_text

from .models import Notification

EMAIL_TRANSPORT = "email"  # KEEPING_TIME["TRANSPORTS"]["email"]


def brand_zone(brand_id: str) -> ZoneInfo:
    """The zone a brand's notices say times in: its default calendar's (read once a batch), else UTC."""
    b = batches.current()
    cache = None if b is None else b.cache("services.brand_zones", tables=("calendars_calendar",))
    if cache is not None and brand_id in cache:
        return cache[brand_id]
    name = Calendar.objects.filter(brand_id=brand_id, is_default=True).values_list("zone", flat=True).first()
    try:
        zone = ZoneInfo(name) if name else ZoneInfo("UTC")
    except (KeyError, ValueError):
        zone = ZoneInfo("UTC")
    if cache is not None:
        cache[brand_id] = zone
    return zone


def when(value, brand_id: str) -> str:
    """An instant as a notice says it: in the brand's zone, named ('Fri 22 Oct 2027, 07:30 PDT')."""
    return local_text(value, brand_zone(brand_id))


OWNER = "owner"  # a recipient that stands for the brand's owners

# What an email's subject line calls each kind, in people's words.
SUBJECTS = {
    "clock.due": "A date was missed",
    "clock.passed": "A fixed date was missed",
    "clock.notice": "A date is coming up",
    "clock.escalate": "A date is close",
    "clock.reminder": "A reminder",
    "task.hold_ending": "Your hold is ending",
    "job.lapsed": "Work stopped",
}


def _owners(brand_id: str) -> list[Person]:
    """The brand's owners, as people to reach (read once a batch inside the tick)."""
    b = batches.current()
    cache = None if b is None else b.cache("services.owners", tables=("timers_membership", "auth_user"))
    if cache is not None and brand_id in cache:
        return cache[brand_id]
    found = [Person.of_member(m) for m in Membership.objects.filter(brand_id=brand_id, role=Membership.Role.OWNER,
                                                                    user__isnull=False)  # an invite is no one yet
             .select_related("user").order_by("id")]
    if cache is not None:
        cache[brand_id] = found
    return found


def people(brand_id: str, recipients: list[Person | str]) -> list[Person]:
    """Each recipient as a person to reach, in order, once: "owner" is each of the brand's owners (or, with none,
    "owner" with no address: the row is there for the console); another name is a person with no address."""
    out: dict[str, Person] = {}
    for r in recipients:
        if isinstance(r, Person):
            out.setdefault(r.name, r)
        elif r == OWNER:
            for owner in _owners(brand_id) or [Person(OWNER)]:
                out.setdefault(owner.name, owner)
        elif r:
            out.setdefault(r, Person(r))
    return list(out.values())


def notify(armer: Any, *, kind: str, subject: str, recipients: list[Person | str], message: str,
           key: str | None = None, body: str = "") -> list[Notification]:
    """Notify each recipient (a person record, or "owner") once; returns the rows created now.

    ``armer`` is the lapse's Firing, a FiringArmer (its ``firing``), or a DirectArmer outside the tick
    (then ``key`` names what raised it). A future ``job.lapsed`` (a link expired twice) calls
    ``notify(f, kind="job.lapsed", subject=job.id, recipients=[buyer, "owner"], message=…)`` from its handler.
    """
    firing: Firing | None = armer if isinstance(armer, Firing) else armer.firing
    if firing is not None:
        domain, brand_id, now, key = firing.domain, firing.timer.brand_id, firing.now, key or firing.timer.key
    else:
        domain, brand_id, now = armer.domain, armer.brand_id, armer.now
        if not key:
            raise ValueError("a notification outside the tick names the key that raised it")
    rows = [Notification(brand_id=brand_id, domain=domain, recipient=p.name[:200], contact_id=p.contact_id,
                         user_id=p.user_id, email=p.email, kind=kind, subject=subject, key=key, message=message,
                         created_at=now)
            for p in people(brand_id, recipients)]
    # A recipient who already heard this lapse (a replay, a redelivered wake) is skipped: in the tick, asked
    # of the batch (one query for its lapses), the rows kept and sent with the batch's other inserts; the
    # unique constraint backs both ways.
    heard = _heard(firing, domain, key) if firing is not None else None
    if heard is None:
        created = insert_new(rows)
    else:
        created = [r for r in rows if (r.recipient, kind) not in heard]
        for r in created:
            heard.add((r.recipient, kind))
            batches.create(r, skip_taken=True, kept_by=(HEARD,))
    messages = _emails(brand_id, created, body=body)
    if messages:
        if firing is not None:
            _send_in_firing(firing, messages)
        else:
            _send_direct(domain, brand_id, f"{key}|notify:{created[0].id}", messages)
    return created


HEARD = "services.heard"


def _heard(f: Firing, domain: str, key: str) -> set | None:
    """Who has heard the lapse ``key`` (recipient, kind), read ahead for the batch's dues; None outside a
    batch that keeps writes. The set is the cache's own: notify adds to it what it keeps."""
    b = batches.current()
    if b is None or not b.keep_writes:
        return None
    cache = b.cache(HEARD, tables=("services_notification",))
    if key not in cache:
        keys = {key} | {t.key for t in f.holding((DUE_HANDLER, RUNG_HANDLER)) if t.key not in cache}
        cache.loaded = True
        # While the cache holds anything, every notification the batch keeps unsent is under a key it holds
        # (notify adds it there; a write that drops the cache empties it whole), and this read asks only for
        # keys it lacks: the kept inserts need not go first (one INSERT a batch, not one a read).
        with b.quiet(sees_kept=not cache):
            for k in keys:
                cache[k] = set()
            for k, recipient, kind in (Notification.objects.filter(domain=domain, key__in=keys)
                                       .values_list("key", "recipient", "kind")):
                cache[k].add((recipient, kind))
    return cache[key]


def _brand_name(brand_id: str) -> str:
    b = batches.current()
    cache = None if b is None else b.cache("timers.brand_names", tables=("timers_brand",))
    if cache is not None and brand_id in cache:
        return cache[brand_id]
    name = Brand.objects.filter(pk=brand_id).values_list("name", flat=True).first() or ""
    if cache is not None:
        cache[brand_id] = name
    return name


def _emails(brand_id: str, rows: list[Notification], *, body: str = "") -> list[dict]:
    """One email to each row's person at their address (a row with none is for the apps only): ``body``, else
    the message signed by the brand."""
    brand = _brand_name(brand_id)
    return [{"to": [n.email], "ref": n.id, "subject": f"[{brand}] {SUBJECTS.get(n.kind, 'A notice')}: {n.message}"[:200],
             "body": body or f"{n.message}\n\n{brand}\n"} for n in rows if n.email]


def _send_in_firing(f: Firing, messages: list[dict]) -> None:
    # Part of the firing's proposal: the outbox sends it once the gate has committed the firing.
    f.send(EMAIL_TRANSPORT, {"messages": messages})


def _send_direct(domain: str, brand_id: str, key: str, messages: list[dict]) -> None:
    # Outside the tick: the outbox row is written with the notifications, and sent after the commit.
    sid = new_id("sub", seed=f"{domain}|{key}|1")
    Outbox.objects.create(id=sid, domain=domain, brand_id=brand_id, key=key, attempt=1, transport=EMAIL_TRANSPORT,
                          payload={"messages": messages}, created_at=wall_now())
    transaction.on_commit(lambda: outbox.deliver(domain))


def clock_told(armer: Any, item: Any, kind: str, hears: list[Person | str], message: str) -> None:
    """calendars' hook (registered in ServicesConfig.ready): a clock's notice rang, or its date came unsatisfied
    or passed."""
    notify(armer, kind=kind, subject=item.owner_key, recipients=hears, message=message)
