"""The API's JSON shapes (Stripe-like objects with an "object" field; instants in UTC with Z)."""

from __future__ import annotations

from ..models import Event, TestClock, Timer
from ..services import commit_json
from ..timeutil import duration_text, iso_z


def timer_json(t: Timer) -> dict:
    return {
        "id": t.id,
        "object": "timer",
        "key": t.key,
        "status": t.status,
        "place": t.place,
        "kind": t.kind,
        "on": t.owner,
        "handler": t.handler,
        "owed_at": iso_z(t.owed_at),
        "armed_at": iso_z(t.armed_at),
        "fired_at": iso_z(t.fired_at),
        "late_by": duration_text(t.late_by),
        "attempt": t.attempt,
        "wakes": t.wakes,
        "version": t.version or None,
        "commit": commit_json(t.commit()) if t.status == Timer.Status.FIRED else None,
        "superseded_by": t.superseded_by or None,
        "by": t.by or None,
        "held_since": iso_z(t.held_since),
        "held_by": t.held_by or None,
        "remaining": duration_text(t.remaining),
        "opened_at": iso_z(t.opened_at),
        "armed_by": t.armed_by or None,
        "test_clock": None if t.domain == "live" else t.domain,
        "data": t.data,
    }


def test_clock_json(c: TestClock) -> dict:
    return {
        "id": c.id,
        "object": "test_clock",
        "name": c.name,
        "frozen_time": iso_z(c.frozen_time),
        "status": c.status,
        "status_details": {"advancing": {"target_frozen_time": iso_z(c.advance_to), "redeliver": c.redeliver}}
        if c.status == TestClock.Status.ADVANCING
        else {},
        "created": iso_z(c.created_at),
    }


def event_json(e: Event) -> dict:
    return {
        "id": e.id,
        "object": "event",
        "type": e.type,
        "subject": e.subject,
        "owed_at": iso_z(e.owed_at),
        "fired_at": iso_z(e.fired_at),
        "key": e.key or None,
        "data": e.data,
        "test_clock": None if e.domain == "live" else e.domain,
    }
