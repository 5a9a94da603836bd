"""The API's JSON shapes (Stripe-like objects with an "object" field; instants in UTC with Z)."""

from __future__ import annotations

import math
import re
from datetime import UTC, datetime

from django.db.models import Q
from drf_spectacular.extensions import OpenApiSerializerFieldExtension
from drf_spectacular.plumbing import ResolvedComponent
from drf_spectacular.utils import extend_schema_field, inline_serializer
from rest_framework import serializers

from ..errors import KeepingTimeError
from ..keys import KINDS
from ..models import Commit, Event, TestClock, Timer
from ..services import commit_json
from ..timeutil import duration_text, iso_z, parse_instant


def timers_json(timers: list[Timer]) -> list[dict]:
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


_UNSET = object()


def timer_json(t: Timer, *, commit=_UNSET) -> dict:
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


class Choice(serializers.ChoiceField):
    """A ChoiceField whose enum is a named schema component (Timer's and TestClock's ``status`` differ)."""

    def __init__(self, *, component: str, **kwargs):
        self.component = component
        super().__init__(**kwargs)


class ChoiceSchema(OpenApiSerializerFieldExtension):
    target_class = Choice

    def map_serializer_field(self, auto_schema, direction):
        field = self.target
        component = ResolvedComponent(name=field.component, type=ResolvedComponent.SCHEMA, object=field.component,
                                      schema={"type": "string", "enum": list(field.choices)})
        auto_schema.registry.register_on_missing(component)
        return {"allOf": [component.ref], "nullable": True} if field.allow_null else component.ref


def const(value: str, component: str) -> Choice:
    """The ``object`` field: one fixed string."""
    return Choice(choices=[value], component=component)


# -- what the API takes: bodies and query strings ------------------------------------------------------
# These parse and validate; the views hand validated_data to the service functions.

_INSTANT_SCHEMA = {
    "oneOf": [
        {"type": "string", "format": "date-time", "example": "2026-12-01T09:00:00Z",
         "description": "ISO 8601 with Z or an offset"},
        {"type": "integer", "example": 1796115600, "description": "unix seconds"},
    ]
}
_DIGITS = re.compile(r"^-?[0-9]{1,12}$")


@extend_schema_field(_INSTANT_SCHEMA)
class InstantField(serializers.Field):
    """An instant: ISO 8601 with Z or an offset (a naive time is refused), or integer unix seconds."""

    default_error_messages = {
        "invalid": "expected an ISO 8601 instant with Z or an offset (e.g. 2026-12-01T09:00Z) "
                   "or integer unix seconds",
        "range": "{value!r} is out of range",
    }

    def to_internal_value(self, data):
        if isinstance(data, bool):
            self.fail("invalid")
        if isinstance(data, int) or (isinstance(data, str) and _DIGITS.match(data.strip())):
            try:
                return datetime.fromtimestamp(int(data), UTC)
            except (OverflowError, OSError, ValueError):
                self.fail("range", value=data)
        if not isinstance(data, str):
            self.fail("invalid")
        try:
            return parse_instant(data)
        except KeepingTimeError as exc:
            raise serializers.ValidationError(exc.message, code=exc.code) from None
        except (OverflowError, ValueError):  # e.g. 0001-01-01T00:00+01:00 has no UTC instant
            self.fail("range", value=data)

    def to_representation(self, value):
        return iso_z(value)


def _plain_json(value, path: str = "") -> None:
    """What jsonb stores: no NUL characters and no infinite numbers (PostgreSQL refuses both)."""
    where = f" at {path}" if path else ""
    if isinstance(value, str):
        if "\x00" in value:
            raise serializers.ValidationError(f"contains a NUL character{where}")
    elif isinstance(value, float):
        if not math.isfinite(value):
            raise serializers.ValidationError(f"contains a number out of range{where}")
    elif isinstance(value, dict):
        for k, v in value.items():
            _plain_json(k, path)
            _plain_json(v, f"{path}.{k}" if path else str(k))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            _plain_json(v, f"{path}[{i}]")


class TimerCreateSerializer(serializers.Serializer):
    key = serializers.CharField(trim_whitespace=False, allow_blank=True,
                                help_text="<owner>:<kind>:<name>:<occurrence>[@<move>], unique per clock domain")
    owed_at = InstantField()
    handler = serializers.CharField(required=False, allow_null=True, allow_blank=True, max_length=64,
                                    help_text="A registered handler; defaults to the key's kind")
    data = serializers.DictField(required=False, default=dict)
    test_clock = serializers.CharField(required=False, allow_null=True, allow_blank=True, max_length=64,
                                       help_text="Arm on this test clock; the live clock when absent")

    def validate_data(self, value):
        _plain_json(value)
        return value


class TestClockCreateSerializer(serializers.Serializer):
    frozen_time = InstantField()
    name = serializers.CharField(required=False, allow_null=True, allow_blank=True, max_length=200, default="")


class TestClockAdvanceSerializer(serializers.Serializer):
    to = InstantField(help_text="The new frozen time; never before the current one")
    redeliver = serializers.BooleanField(required=False, default=False,
                                         help_text="Deliver every wake twice (each second one replays)")


class ListQuerySerializer(serializers.Serializer):
    limit = serializers.IntegerField(required=False, default=10, min_value=1, max_value=100)
    starting_after = serializers.CharField(required=False, max_length=64,
                                           help_text="An object id: the page starts after it")


class TimerListQuerySerializer(ListQuerySerializer):
    on = serializers.CharField(required=False, max_length=160,
                               help_text="The owner: exactly, or a clock's occurrences (owner#…)")
    status = Choice(required=False, choices=Timer.Status.choices, component="TimerStatus")
    test_clock = serializers.CharField(required=False, max_length=64,
                                       help_text="The test clock's timers; the live clock's when absent")


class EventListQuerySerializer(ListQuerySerializer):
    type = serializers.CharField(required=False, max_length=64,
                                 help_text="An event type, or a prefix ending in * (timer.*)")
    test_clock = serializers.CharField(required=False, max_length=64,
                                       help_text="Only this test clock's events; every domain when absent")


# -- what the API answers: these only describe the JSON above, for the OpenAPI schema ------------------
class CommitSerializer(serializers.Serializer):
    id = serializers.CharField()
    outcome = Choice(choices=Commit.Outcome.choices, component="CommitOutcome")
    code = serializers.CharField(allow_null=True)
    at = serializers.DateTimeField()
    events = serializers.ListField(child=serializers.CharField())


class TimerSerializer(serializers.Serializer):
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
    data = serializers.DictField()


class AdvancingSerializer(serializers.Serializer):
    target_frozen_time = serializers.DateTimeField()
    redeliver = serializers.BooleanField()


class StatusDetailsSerializer(serializers.Serializer):
    advancing = AdvancingSerializer(required=False)


class TestClockSerializer(serializers.Serializer):
    id = serializers.CharField()
    object = const("test_clock", "TestClockObject")
    name = serializers.CharField()
    frozen_time = serializers.DateTimeField()
    status = Choice(choices=TestClock.Status.choices, component="TestClockStatus")
    status_details = StatusDetailsSerializer()
    created = serializers.DateTimeField()


class DeletedTestClockSerializer(serializers.Serializer):
    id = serializers.CharField()
    object = const("test_clock", "TestClockObject")
    deleted = serializers.BooleanField()


class EventSerializer(serializers.Serializer):
    id = serializers.CharField()
    object = const("event", "EventObject")
    type = serializers.CharField()
    subject = serializers.CharField()
    owed_at = serializers.DateTimeField(allow_null=True)
    fired_at = serializers.DateTimeField(allow_null=True)
    key = serializers.CharField(allow_null=True)
    data = serializers.DictField()
    test_clock = serializers.CharField(allow_null=True)


class WakeSerializer(serializers.Serializer):
    replayed = serializers.BooleanField(help_text="true for a fired timer: the answer is its first commit")
    status = Choice(choices=Timer.Status.choices, component="TimerStatus")
    commit = CommitSerializer(allow_null=True)


class ErrorDetailSerializer(serializers.Serializer):
    type = Choice(choices=["invalid_request_error", "api_error"], component="ErrorType")
    code = serializers.CharField(help_text="e.g. invalid_key, resource_missing, test_clock_backward")
    message = serializers.CharField()
    param = serializers.CharField(required=False, help_text="The parameter at fault, when there is one")


class ErrorSerializer(serializers.Serializer):
    error = ErrorDetailSerializer()


def list_serializer(name: str, item: type[serializers.Serializer]):
    """The shape of a Stripe-style list of ``item``."""
    return inline_serializer(name=name, fields={
        "object": const("list", "ListObject"),
        "data": item(many=True),
        "has_more": serializers.BooleanField(),
        "url": serializers.CharField(),
    })
