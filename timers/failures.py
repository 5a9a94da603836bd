"""A timer an error pushed out ("failed, held for the owner console") is the owner's to see: one email to the
brand's owners, through the outbox's ``email`` transport as a lapse's notices go, written in the transaction
that records ``timer.failed`` (timers/store.py, beside the webhooks' fan-out), so it leaves exactly when the
failure is on the record, after the commit, and never for a batch that rolled back.

Who hears it: each owner of the brand with an address (their account's email), and ``KT_PEOPLE``'s ``owner``
when it names one, as a lapse's ``owner`` is told.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from django.conf import settings
from django.db.models import Model

from .clock import wall_now
from .ids import new_id
from .models import Brand, Membership, Outbox, Timer, is_live
from .rows import insert_rows
from .timeutil import trace_z

EMAIL_TRANSPORT = "email"  # KEEPING_TIME["TRANSPORTS"]["email"], as services.notifications sends lapses


def owners_addresses(brand_ids: set[str]) -> dict[str, list[str]]:
    """Each brand's owners' addresses, in one query (and KT_PEOPLE's owner for every brand)."""
    out: dict[str, list[str]] = {b: [] for b in brand_ids}
    for brand_id, email in (Membership.objects.filter(brand_id__in=brand_ids, role=Membership.Role.OWNER,
                                                      user__is_active=True).exclude(user__email="")
                            .order_by("id").values_list("brand_id", "user__email")):
        out[brand_id].append(email)
    extra = (settings.KEEPING_TIME.get("PEOPLE") or {}).get("owner")
    for addresses in out.values():
        if extra:
            addresses.append(extra)
        addresses[:] = list(dict.fromkeys(a.lower() for a in addresses))
    return out


def email_owners(events: Sequence[Sequence[Any]]) -> int:
    """For each ``timer.failed`` among ``events`` (the batch's, just written: ``(id, domain, brand id, type,
    subject, owed_at, key, data, fired_at, late_by)``), one email submission to the brand's owners. Returns
    the submissions written."""
    failed = [e for e in events if e[3] == "timer.failed" and e[2]]
    if not failed:
        return 0
    to = owners_addresses({e[2] for e in failed})
    names = dict(Brand.objects.filter(pk__in=list(to)).values_list("id", "name"))
    timer_ids = dict(Timer.objects.filter(domain__in={e[1] for e in failed}, key__in=[e[6] for e in failed])
                     .values_list("key", "id"))
    rows: list[Model] = []
    now = wall_now()
    for e in failed:
        if not to[e[2]]:
            continue
        event_id, domain, brand_id, key, data, at = e[0], e[1], e[2], e[6], e[7] or {}, e[8]
        timer = timer_ids.get(key, "")
        error = str(data.get("error", ""))
        where = "the live clock" if is_live(domain) else f"test clock {domain}"
        body = (f"A timer of {names.get(brand_id, '')} failed on {where} at {trace_z(at)} and is held for the "
                f"owner console:\n\n  {key}\n  {error}\n\nIt runs again when you press Retry beside it in the "
                f"console's alarms (the dashboard), or with:\n\n  python manage.py timers retry {timer}\n")
        rows.append(Outbox(
            id=new_id("sub", seed=f"{domain}|{event_id}|failed|1"), domain=domain, brand_id=brand_id,
            key=f"{key}|failed:{event_id}", attempt=1, seq=0, transport=EMAIL_TRANSPORT,
            payload={"messages": [{"to": to[brand_id], "ref": event_id, "body": body,
                                   "subject": f"[{names.get(brand_id, '')}] A timer failed: {error}"[:200]}]},
            status="pending", error="", claimed_by="", tries=0, created_at=now))
    if rows:
        insert_rows(rows)
    return len(rows)
