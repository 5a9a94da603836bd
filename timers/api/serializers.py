"""The API's timers and events as JSON (Stripe-like objects with an "object" field; instants in UTC with Z),
and what their endpoints take: arm a timer, list timers, list events."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from django.db.models import Q
from drf_spectacular.extensions import OpenApiSerializerExtension, OpenApiSerializerFieldExtension
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from timers.record import CommitJSON, commit_json

from .. import handlers
from ..keys import KEY_PATTERN, KINDS, MAX_KEY_LENGTH
from ..models import Commit, Event, Timer, is_live
from ..timeutil import duration_text, iso_z
from .inputs import InstantField, ListQuerySerializer, StrictCharField, plain_json, query_field
from .openapi import Choice, const

if TYPE_CHECKING:
    from drf_spectacular.openapi import AutoSchema
    from drf_spectacular.utils import Direction


def timers_json(timers: list[Timer]) -> list[dict[str, Any]]:
    """Many timers with their commits in two queries, not two per fired timer."""
    fired = [t for t in timers if t.status == Timer.Status.FIRED]
    if not fired:
        return [timer_json(t) for t in timers]
    match = Q()
    for t in fired:
        match |= Q(domain=t.domain, key=t.key)
    commits = {(c.domain, c.key): c for c in Commit.objects.filter(match)}
    events: dict[tuple[str, str], list[str]] = {}
    for domain, key, event_id in Event.objects.filter(match).order_by("seq").values_list("domain", "key", "id"):
        events.setdefault((domain, key), []).append(event_id)
    return [
        timer_json(t, commit=commit_json(commits.get((t.domain, t.key)), events=events.get((t.domain, t.key), [])))
        for t in timers
    ]


_UNSET: Any = object()  # no commit given: timer_json reads it


def timer_json(t: Timer, *, commit: CommitJSON | None = _UNSET) -> dict[str, Any]:
    if commit is _UNSET:
        commit = commit_json(t.commit()) if t.status == Timer.Status.FIRED else None
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
        "commit": commit,
        "superseded_by": t.superseded_by or None,
        "by": t.by or None,
        "held_since": iso_z(t.held_since),
        "held_by": t.held_by or None,
        "remaining": duration_text(t.remaining),
        "opened_at": iso_z(t.opened_at),
        "armed_by": t.armed_by or None,
        "test_clock": None if is_live(t.domain) else t.domain,
        "data": t.data,
    }


# -- what the API takes ------------------------------------------------------------------------------
@extend_schema_field({"type": "string", "pattern": KEY_PATTERN, "maxLength": MAX_KEY_LENGTH,
                      "example": "job_1:task:prep:2027"})
class KeyField(StrictCharField):
    """A timer key; keys.parse (in the service) says what is wrong with a bad one (invalid_key)."""


class HandlerField(StrictCharField):
    """A registered handler's name: the schema lists the names registered when it is asked for."""


class HandlerSchema(OpenApiSerializerFieldExtension):
    target_class = HandlerField

    def map_serializer_field(self, auto_schema: AutoSchema, direction: Direction) -> dict[str, Any]:
        return {"type": "string", "enum": handlers.names()}


class TimerCreateSerializer(serializers.Serializer[Any]):
    key = KeyField(trim_whitespace=False,
                   help_text="<owner>:<kind>:<name>:<occurrence>[@<move>], unique per clock domain")
    owed_at = InstantField()
    handler = HandlerField(required=False, allow_null=True, allow_blank=True, max_length=64,
                           help_text="A registered handler; defaults to the key's kind when a handler of that "
                                     "name is registered")
    data = serializers.DictField(required=False, default=dict)  # type: ignore[assignment]  # the field, not Serializer.data
    test_clock = StrictCharField(required=False, allow_null=True, allow_blank=True, max_length=64,
                                 help_text="Arm on this test clock; the live clock when absent")

    def validate_data(self, value: dict[str, Any]) -> dict[str, Any]:
        plain_json(value)
        return value


class TimerCreateSchema(OpenApiSerializerExtension):
    """The schema says handler is required when no key kind names a registered handler, as then an arm
    without one is refused (unknown_handler); the serializer still takes it absent for the day one does."""

    target_class = TimerCreateSerializer

    def map_serializer(self, auto_schema: AutoSchema, direction: Direction) -> dict[str, Any]:
        schema: dict[str, Any] = auto_schema._map_basic_serializer(self.target, direction)
        if direction == "request" and not set(KINDS) & set(handlers.names()):
            schema.setdefault("required", [])
            if "handler" not in schema["required"]:
                schema["required"].append("handler")
            schema["properties"]["handler"] = {**schema["properties"]["handler"]}
            schema["properties"]["handler"].pop("nullable", None)
        return schema


class TimerListQuerySerializer(ListQuerySerializer):
    on = query_field("The owner: exactly, or a clock's occurrences (owner#…)", max_length=160)
    status = Choice(required=False, choices=Timer.Status.choices, component="TimerStatus")
    test_clock = query_field("The test clock's timers; the live clock's when absent")


class EventListQuerySerializer(ListQuerySerializer):
    type = query_field("An event type, or a prefix ending in * (timer.*)")
    test_clock = query_field("Only this test clock's events; every domain when absent")


# -- what the API answers: these only describe the JSON above, for the OpenAPI schema ------------------
class CommitSerializer(serializers.Serializer[Any]):
    id = serializers.CharField()
    outcome = Choice(choices=Commit.Outcome.choices, component="CommitOutcome")
    code = serializers.CharField(allow_null=True)
    at = serializers.DateTimeField()
    events = serializers.ListField(child=serializers.CharField())


class TimerSerializer(serializers.Serializer[Any]):
    id = serializers.CharField()
    object = const("timer", "TimerObject")
    key = serializers.CharField()
    status = Choice(choices=Timer.Status.choices, component="TimerStatus")
    place = serializers.IntegerField(min_value=1, max_value=8)
    kind = Choice(choices=list(KINDS), component="TimerKind")
    on = serializers.CharField()
    handler = serializers.CharField()
    owed_at = serializers.DateTimeField(allow_null=True)
    armed_at = serializers.DateTimeField()
    fired_at = serializers.DateTimeField(allow_null=True)
    late_by = serializers.CharField(allow_null=True, help_text="e.g. 3d 4h")
    attempt = serializers.IntegerField()
    wakes = serializers.IntegerField()
    version = serializers.CharField(allow_null=True)
    commit = CommitSerializer(allow_null=True)
    superseded_by = serializers.CharField(allow_null=True)
    by = serializers.CharField(allow_null=True)
    held_since = serializers.DateTimeField(allow_null=True)
    held_by = serializers.CharField(allow_null=True)
    remaining = serializers.CharField(allow_null=True)
    opened_at = serializers.DateTimeField()
    armed_by = serializers.CharField(allow_null=True)
    test_clock = serializers.CharField(allow_null=True)
    data = serializers.DictField()  # type: ignore[assignment]  # the field, not Serializer.data


class EventSerializer(serializers.Serializer[Any]):
    id = serializers.CharField()
    object = const("event", "EventObject")
    type = serializers.CharField()
    subject = serializers.CharField()
    owed_at = serializers.DateTimeField(allow_null=True)
    fired_at = serializers.DateTimeField(allow_null=True)
    late_by = serializers.CharField(allow_null=True, help_text="how late the firing that wrote it was (live), "
                                    "e.g. 6m 2s; 0s on a test clock; null outside the tick")
    key = serializers.CharField(allow_null=True)
    data = serializers.DictField()  # type: ignore[assignment]  # the field, not Serializer.data
    test_clock = serializers.CharField(allow_null=True)


class WakeSerializer(serializers.Serializer[Any]):
    replayed = serializers.BooleanField(help_text="true for a fired timer: the answer is its first commit")
    status = Choice(choices=Timer.Status.choices, component="TimerStatus")
    commit = CommitSerializer(allow_null=True)
