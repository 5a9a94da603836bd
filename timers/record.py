"""The record, as it is read back and as it leaves: a commit's JSON, an event's JSON (what ``GET /events/<id>``
answers and what a webhook delivery POSTs: one body, so the two never drift), the canonical JSON and the
record's hash over it, which the four ways of ``tick --compare`` compare and the benches print.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any, TypedDict

from .ids import is_live
from .models import Commit, Event
from .timeutil import duration_text, iso_z


class CommitJSON(TypedDict):
    """A timer's commit as the API shows it: the gate's outcome and the events it landed, in order."""

    id: str
    outcome: str
    code: str | None
    at: str | None
    events: list[str]


class EventJSON(TypedDict):
    """One event of the record as ``GET /events/<id>`` answers it and a webhook delivery POSTs it."""

    id: str
    object: str
    type: str
    subject: str
    owed_at: str | None
    fired_at: str | None
    late_by: str | None
    key: str | None
    data: dict[str, Any]
    test_clock: str | None


def commit_json(commit: Commit | None, *, events: list[str] | None = None) -> CommitJSON | None:
    if commit is None:
        return None
    if events is None:
        events = list(
            Event.objects.filter(domain=commit.domain, key=commit.key).order_by("seq").values_list("id", flat=True)
        )
    return {"id": commit.id, "outcome": commit.outcome, "code": commit.code or None, "at": iso_z(commit.at),
            "events": events}


def event_json(e: Event) -> EventJSON:
    return {
        "id": e.id,
        "object": "event",
        "type": e.type,
        "subject": e.subject,
        "owed_at": iso_z(e.owed_at),
        "fired_at": iso_z(e.fired_at),
        "late_by": duration_text(e.late_by),
        "key": e.key or None,
        "data": e.data,
        "test_clock": None if is_live(e.domain) else e.domain,
    }


def canonical(obj: Any) -> str:
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)


def record_hash(domain: str, *, after_seq: int = 0) -> tuple[int, str]:
    """sha256 over the record in order: each event's type, subject, owed time, key and data.

    Fired time, late_by, attempt and wakes are left out (they differ by way), and so are the test
    clock's own events, which say how the clock was driven rather than what happened.
    """
    digest = hashlib.sha256()
    count = 0
    rows = (
        Event.objects.filter(domain=domain, seq__gt=after_seq)
        .exclude(type__startswith="test_clock.")
        .order_by("seq")
        .values_list("type", "subject", "owed_at", "key", "data")
    )
    for type_, subject, owed_at, key, data in rows.iterator(chunk_size=5000):
        digest.update(canonical([type_, subject, iso_z(owed_at), key, data]).encode())
        digest.update(b"\n")
        count += 1
    return count, digest.hexdigest()
