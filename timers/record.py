"""The record, as it is read back: a commit's JSON and the record's canonical hash."""

from __future__ import annotations

from .models import Commit, Event
from .timeutil import iso_z


def commit_json(commit: Commit | None, *, events: list[str] | None = None) -> dict | None:
    if commit is None:
        return None
    if events is None:
        events = list(
            Event.objects.filter(domain=commit.domain, key=commit.key).order_by("seq").values_list("id", flat=True)
        )
    return {"id": commit.id, "outcome": commit.outcome, "code": commit.code or None, "at": iso_z(commit.at),
            "events": events}
