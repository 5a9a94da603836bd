"""Who hears a lapse: a Notification row per recipient and one email each, through the armer of the lapse.

Inside the tick the armer is the firing's: the rows are written in its atomic handler (the gate commits them
with the lapse, or nothing) and the emails leave through the outbox after the commit, exactly once. The
unique constraint (domain, key, recipient, kind) is what makes a replay or a redelivered wake notify no one
twice: one INSERT … ON CONFLICT DO NOTHING skips a duplicate, and only rows created now are emailed.
"""

from __future__ import annotations

from typing import Any
from zoneinfo import ZoneInfo

from django.conf import settings
from django.db import transaction

from calendars.clock_keys import DUE_HANDLER
from calendars.models import Calendar
from timers import batch as batches
from timers import outbox
from timers.clock import wall_now
from timers.engine import Firing
from timers.ids import new_id
from timers.models import Brand, Outbox
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


def notify(armer: Any, *, kind: str, subject: str, recipients: list[str], message: str,
           key: str | None = None) -> list[Notification]:
    """Notify each recipient (a person or role by name) of a lapse once; returns the rows created now.

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
    rows = [Notification(brand_id=brand_id, domain=domain, recipient=name, kind=kind, subject=subject, key=key,
                         message=message, created_at=now)
            for name in dict.fromkeys(r for r in recipients if r)]
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
    messages = _emails(brand_id, created)
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
        keys = {key} | {t.key for t in f.holding((DUE_HANDLER,)) if t.key not in cache}
        cache.loaded = True
        with b.quiet():
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


def _emails(brand_id: str, rows: list[Notification]) -> list[dict]:
    people = settings.KEEPING_TIME.get("PEOPLE", {})
    brand = _brand_name(brand_id)
    out = []
    for n in rows:
        address = people.get(n.recipient)
        if not address:
            continue  # no address for this name: the row is there for the apps, no email
        out.append({"to": [address], "ref": n.id, "subject": f"[{brand}] {n.kind} · {n.message}"[:200],
                    "body": f"{n.message}\n\n{n.kind} · {n.subject} · {n.created_at.isoformat()} · to {n.recipient}\n"})
    return out


def _send_in_firing(f: Firing, messages: list[dict]) -> None:
    # Part of the firing's proposal: the outbox sends it once the gate has committed the firing.
    f.send(EMAIL_TRANSPORT, {"messages": messages})


def _send_direct(domain: str, brand_id: str, key: str, messages: list[dict]) -> None:
    # Outside the tick: the outbox row is written with the notifications, and sent after the commit.
    sid = new_id("sub", seed=f"{domain}|{key}|1")
    Outbox.objects.create(id=sid, domain=domain, brand_id=brand_id, key=key, attempt=1, transport=EMAIL_TRANSPORT,
                          payload={"messages": messages}, created_at=wall_now())
    transaction.on_commit(lambda: outbox.deliver(domain))


def clock_lapsed(armer: Any, item: Any, kind: str, hears: list[str], message: str) -> None:
    """calendars' lapse hook (registered in ServicesConfig.ready): a clock date came unsatisfied or passed."""
    notify(armer, kind=kind, subject=item.owner_key, recipients=hears, message=message)
