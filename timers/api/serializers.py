"""The API's JSON shapes (Stripe-like objects with an "object" field; instants in UTC with Z)."""

from __future__ import annotations

import json
import math
import re
from datetime import UTC, datetime
from decimal import Decimal

from django.db.models import Q
from django.http import QueryDict
from drf_spectacular.extensions import OpenApiSerializerExtension, OpenApiSerializerFieldExtension
from drf_spectacular.plumbing import ResolvedComponent
from drf_spectacular.utils import extend_schema_field, inline_serializer
from rest_framework import serializers

from timers.record import commit_json

from .. import handlers
from ..errors import KeepingTimeError
from ..ids import SEED_PATTERN
from ..keys import KEY_PATTERN, KINDS, MAX_KEY_LENGTH
from ..models import Commit, Event, TestClock, Timer, is_live
from ..timeutil import SPAN_PATTERN, duration_text, iso_z, parse_instant, parse_span


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
        "test_clock": None if is_live(t.domain) else t.domain,
        "data": t.data,
    }


def test_clock_json(c: TestClock) -> dict:
    return {
        "id": c.id,
        "object": "test_clock",
        "name": c.name,
        "seed": c.seed,
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
        "late_by": duration_text(e.late_by),
        "key": e.key or None,
        "data": e.data,
        "test_clock": None if is_live(e.domain) else e.domain,
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
# These parse and validate; the views hand validated_data to the service functions. They take what the
# schema says and nothing else: DRF's fields turn 0 into "0" and "yes" into True, which the schema (type:
# string, type: boolean) does not allow, so a client that relies on it would break on a stricter server.

def from_form(field: serializers.Field) -> bool:
    """Whether the body came form-encoded (as Stripe's clients send it): every value is then a string, and a
    boolean or a number is written as one."""
    return isinstance(getattr(field.root, "initial_data", None), QueryDict)


class StringOnly:
    """A JSON string, never a number or a boolean turned into one."""

    def to_internal_value(self, data):
        if not isinstance(data, str):
            self.fail("invalid")
        return super().to_internal_value(data)


class StrictCharField(StringOnly, serializers.CharField):
    pass


class StrictRegexField(StringOnly, serializers.RegexField):
    pass


# DRF refuses a NUL in any CharField (PostgreSQL stores none); the schema says so, so a NUL is no valid string.
# One or more characters: drf-spectacular adds "" as its own oneOf branch for a field that allows blank.
NO_NUL = "^[^\\u0000]+$"


class StrictCharSchema(OpenApiSerializerFieldExtension):
    target_class = StrictCharField

    def map_serializer_field(self, auto_schema, direction):
        # Lengths and blank come from the field's validators, added after this (_insert_field_validators).
        return {"type": "string", "pattern": NO_NUL}


def _not_a(kind: str, data) -> str:
    """What a strict field says of a value of another JSON type: '"7"' is text, not the number 7."""
    if isinstance(data, str):
        return f"expected {kind}, not a string ({json.dumps(data)[:40]}): send it without quotes"
    return f"expected {kind}, not {type(data).__name__ if data is not None else 'null'}"


class StrictBooleanField(serializers.BooleanField):
    """true or false, a JSON boolean; a form field (all strings) writes them as "true" and "false"."""

    def to_internal_value(self, data):
        if isinstance(data, bool):
            return data
        if isinstance(data, str) and from_form(self) and data in ("true", "false"):
            return data == "true"
        raise serializers.ValidationError(_not_a("true or false", data), code="invalid")


_INTEGER = re.compile(r"-?[0-9]{1,18}")


class StrictIntegerField(serializers.IntegerField):
    """A whole JSON number (7, or 7.0, which JSON Schema calls the same integer), never "7" or true; a form
    field (all strings) writes it as digits. DRF's own takes "7", " 7 " and 7.0 alike."""

    def to_internal_value(self, data):
        if isinstance(data, str) and from_form(self) and _INTEGER.fullmatch(data):
            return super().to_internal_value(data)
        if isinstance(data, bool) or not isinstance(data, int | float):
            raise serializers.ValidationError(_not_a("a whole number", data), code="invalid")
        if isinstance(data, float) and not (math.isfinite(data) and data.is_integer()):
            self.fail("invalid")
        return super().to_internal_value(int(data))


class StrictFloatField(serializers.FloatField):
    """A JSON number, never "7.5" or true; a form field writes it as text."""

    def to_internal_value(self, data):
        if isinstance(data, str) and from_form(self):
            return super().to_internal_value(data)
        if isinstance(data, bool) or not isinstance(data, int | float):
            raise serializers.ValidationError(_not_a("a number", data), code="invalid")
        return super().to_internal_value(data)


class StrictDecimalField(serializers.DecimalField):
    """An amount as a JSON number (12.5), never "12.50" or true, with at most ``decimal_places`` decimals; a
    form field writes it as text. The schema says number, with multipleOf for the places."""

    def __init__(self, **kwargs):
        kwargs.setdefault("coerce_to_string", False)
        super().__init__(**kwargs)

    def to_internal_value(self, data):
        if isinstance(data, str) and from_form(self):
            return super().to_internal_value(data)
        if isinstance(data, bool) or not isinstance(data, int | float):
            raise serializers.ValidationError(_not_a("a number", data), code="invalid")
        # A float's repr is the shortest text that reads back as it: 0.35, as the client wrote it.
        return super().to_internal_value(repr(data) if isinstance(data, float) else data)


class StrictDecimalSchema(OpenApiSerializerFieldExtension):
    target_class = StrictDecimalField

    def map_serializer_field(self, auto_schema, direction):
        # min_value and max_value come from the field's validators, added after this (_insert_field_validators);
        # max_digits is no validator of DRF's, so its bound is said here.
        field = self.target
        schema = {"type": "number", "format": "decimal"}
        if field.decimal_places is not None:
            schema["multipleOf"] = float(Decimal(1).scaleb(-field.decimal_places))
        if field.max_whole_digits is not None:
            bound = 10 ** field.max_whole_digits
            schema.update(maximum=bound, exclusiveMaximum=True, minimum=-bound, exclusiveMinimum=True)
        return schema


class QueryIntegerField(serializers.IntegerField):
    """A whole number in a query string: digits only (DRF also takes 1.0 and " 1 ")."""

    def to_internal_value(self, data):
        if isinstance(data, bool) or not isinstance(data, int | str) or (
                isinstance(data, str) and not _INTEGER.fullmatch(data)):
            self.fail("invalid")
        return super().to_internal_value(data)


class QueryBooleanField(serializers.BooleanField):
    """true or false in a query string, as OpenAPI writes a boolean there (DRF also takes 1, yes and on)."""

    def to_internal_value(self, data):
        if isinstance(data, bool):
            return data
        if data in ("true", "false"):
            return data == "true"
        self.fail("invalid", input=data)


# C0 and C1 controls and DEL: a name is one line of text, printed in pages, headers and commands' output.
CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")
NAME_PATTERN = "^[^\\u0000-\\u001f\\u007f-\\u009f]+$"


def control_problem(name: str) -> str | None:
    found = CONTROL.search(name)
    if found:
        return f"holds a control character ({found.group()!r} at {found.start()}): a name is one line of text"
    return None


def name_problem(name: str, *, max_length: int = 200) -> str | None:
    """What is wrong with a name a person gives (a brand's, a key's), or None; the API's NameField says the same."""
    if len(name) > max_length:
        return f"at most {max_length} characters (this one has {len(name)})"
    return control_problem(name)


class NameField(StrictCharField):
    """A name: text with no control characters (400 invalid_name), read before DRF trims whitespace: "Acme\n" is
    refused, as the schema says, not taken as "Acme"."""

    def run_validation(self, data=serializers.empty):
        # A NUL is refused as in any text field (invalid_request, DRF's validator).
        problem = control_problem(data) if isinstance(data, str) and "\x00" not in data else None
        if problem:
            raise serializers.ValidationError(problem, code="invalid_name")
        return super().run_validation(data)


class NameSchema(OpenApiSerializerFieldExtension):
    target_class = NameField

    def map_serializer_field(self, auto_schema, direction):
        return {"type": "string", "pattern": NAME_PATTERN}


def query_field(help_text: str, *, max_length: int = 64) -> StrictCharField:
    """An optional query parameter; empty (?test_clock=) is the same as absent, as the schema says."""
    return StrictCharField(required=False, allow_blank=True, max_length=max_length, help_text=help_text)


# Unix seconds a datetime can hold: 0001-01-01T00:00:00Z to 9999-12-31T23:59:59Z.
MIN_UNIX, MAX_UNIX = -62135596800, 253402300799
# RFC 3339 writes a few instants that are no instant: a positive offset on 0001-01-01 or a negative one on
# 9999-12-31 can fall outside the years 1 to 9999 in UTC. The pattern leaves those two days' offsets out,
# so that what the schema calls valid the API takes.
_INSTANT_PATTERN = r"^(?!0001-01-01T.*\+(?!00:00)|9999-12-31T.*-(?!00:00)[0-9]{2}:[0-9]{2}$)"
_INSTANT_SCHEMA = {
    "oneOf": [
        {"type": "string", "format": "date-time", "pattern": _INSTANT_PATTERN, "example": "2026-12-01T09:00:00Z",
         "description": "RFC 3339 with Z or an offset (seconds optional: 2026-12-01T09:00Z)"},
        {"type": "integer", "minimum": MIN_UNIX, "maximum": MAX_UNIX, "example": 1796115600,
         "description": "unix seconds"},
    ]
}
_DIGITS = re.compile(r"-?[0-9]{1,12}")


@extend_schema_field(_INSTANT_SCHEMA)
class InstantField(serializers.Field):
    """An instant: RFC 3339 with Z or an offset (a naive time is refused), or integer unix seconds (a string
    of digits in a form field)."""

    default_error_messages = {
        "invalid": "expected an RFC 3339 instant with Z or an offset (e.g. 2026-12-01T09:00Z) "
                   "or integer unix seconds",
        "range": "{value!r} is out of range",
    }

    # Every way an instant is wrong answers invalid_time, the code the CLI and the README use for it.
    def fail(self, key, **kwargs):
        try:
            super().fail(key, **kwargs)
        except serializers.ValidationError as exc:
            raise serializers.ValidationError(str(exc.detail[0]), code="invalid_time") from None

    def to_internal_value(self, data):
        if isinstance(data, bool):
            self.fail("invalid")
        if isinstance(data, int) or (isinstance(data, str) and from_form(self) and _DIGITS.fullmatch(data)):
            if not MIN_UNIX <= int(data) <= MAX_UNIX:
                self.fail("range", value=data)
            return datetime.fromtimestamp(int(data), UTC)
        if not isinstance(data, str):
            self.fail("invalid")
        try:
            return parse_instant(data)
        except KeepingTimeError as exc:
            raise serializers.ValidationError(exc.message, code=exc.code) from None

    def to_representation(self, value):
        return iso_z(value)


@extend_schema_field({"type": "string", "pattern": KEY_PATTERN, "maxLength": MAX_KEY_LENGTH,
                      "example": "job_1:task:prep:2027"})
class KeyField(StrictCharField):
    """A timer key; keys.parse (in the service) says what is wrong with a bad one (invalid_key)."""


class HandlerField(StrictCharField):
    """A registered handler's name: the schema lists the names registered when it is asked for."""


class HandlerSchema(OpenApiSerializerFieldExtension):
    target_class = HandlerField

    def map_serializer_field(self, auto_schema, direction):
        return {"type": "string", "enum": handlers.names()}


def _surrogate_at(value, path: str = "") -> str | None:
    """Where a lone surrogate is in a JSON value (``a.b[2]``), or None. JSON's \\ud800 parses to one, and no
    database stores it (PostgreSQL refuses it as UTF-8)."""
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            return path or "(the value)"
    elif isinstance(value, dict):
        for k, v in value.items():
            found = _surrogate_at(k, path) or _surrogate_at(v, f"{path}.{k}" if path else str(k))
            if found:
                return found
    elif isinstance(value, list):
        for i, v in enumerate(value):
            found = _surrogate_at(v, f"{path}[{i}]")
            if found:
                return found
    return None


def has_surrogate(value) -> str | None:
    """As _surrogate_at, with one fast pass over the whole value first (most bodies have none)."""
    try:
        json.dumps(value, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError:
        return _surrogate_at(value) or "(the value)"
    except (TypeError, ValueError):
        return None
    return None


def _plain_json(value, path: str = "") -> None:
    """What jsonb stores: no NUL characters, no lone surrogates and no infinite numbers (PostgreSQL refuses
    all three)."""
    where = f" at {path}" if path else ""
    if isinstance(value, str):
        if "\x00" in value:
            raise serializers.ValidationError(f"contains a NUL character{where}")
        if has_surrogate(value):
            raise serializers.ValidationError(f"contains a lone surrogate (not Unicode text){where}")
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


class MetadataField(serializers.DictField):
    """Stripe's metadata: up to 50 keys, text values of up to 500 characters; on an update a key set to "" is
    removed. Unlike Stripe's, a key may be any text (but NUL, which no database stores): OpenAPI 3.0 cannot say
    what a key may be (no propertyNames), and a body the schema admits is taken."""

    def __init__(self, **kwargs):
        super().__init__(child=StrictCharField(allow_blank=True, max_length=500), **kwargs)

    def to_internal_value(self, data):
        value = super().to_internal_value(data)
        if len(value) > 50:
            raise serializers.ValidationError("at most 50 keys")
        if any("\x00" in k for k in value):
            raise serializers.ValidationError("a key holds no NUL character")
        return value


class MetadataSchema(OpenApiSerializerFieldExtension):
    target_class = MetadataField

    def map_serializer_field(self, auto_schema, direction):
        return {"type": "object", "maxProperties": 50,
                "additionalProperties": {"type": "string", "maxLength": 500, "pattern": "^[^\\u0000]*$"},
                "description": 'Your own keys and text values; on an update, merged, and a key set to "" is removed'}


class TimerCreateSerializer(serializers.Serializer):
    key = KeyField(trim_whitespace=False,
                   help_text="<owner>:<kind>:<name>:<occurrence>[@<move>], unique per clock domain")
    owed_at = InstantField()
    handler = HandlerField(required=False, allow_null=True, allow_blank=True, max_length=64,
                           help_text="A registered handler; defaults to the key's kind when a handler of that "
                                     "name is registered")
    data = serializers.DictField(required=False, default=dict)
    test_clock = StrictCharField(required=False, allow_null=True, allow_blank=True, max_length=64,
                                 help_text="Arm on this test clock; the live clock when absent")

    def validate_data(self, value):
        _plain_json(value)
        return value


class TimerCreateSchema(OpenApiSerializerExtension):
    """The schema says handler is required when no key kind names a registered handler, as then an arm
    without one is refused (unknown_handler); the serializer still takes it absent for the day one does."""

    target_class = TimerCreateSerializer

    def map_serializer(self, auto_schema, direction):
        schema = auto_schema._map_basic_serializer(self.target, direction)
        if direction == "request" and not set(KINDS) & set(handlers.names()):
            schema.setdefault("required", [])
            if "handler" not in schema["required"]:
                schema["required"].append("handler")
            schema["properties"]["handler"] = {**schema["properties"]["handler"]}
            schema["properties"]["handler"].pop("nullable", None)
        return schema


class TestClockCreateSerializer(serializers.Serializer):
    frozen_time = InstantField()
    name = NameField(required=False, allow_null=True, allow_blank=True, max_length=200, default="")
    seed = StrictRegexField(SEED_PATTERN, required=False, allow_null=True, allow_blank=True, default="",
                            help_text="Ids minted on the clock derive from the seed and what they name, so the same "
                                      "scenario on a clock of the same seed makes the same record; one clock per seed")


class QueryInstantField(InstantField):
    """An instant in a query string, where every value is a string: digits are unix seconds there, as in a form
    (the schema offers an integer, which a query can only write as digits)."""

    def to_internal_value(self, data):
        if isinstance(data, str) and _DIGITS.fullmatch(data):
            data = int(data)
        return super().to_internal_value(data)


@extend_schema_field({"type": "string", "pattern": SPAN_PATTERN, "example": "1y"})
class SpanField(StrictCharField):
    """A span as the CLI's ``tick`` takes it (6h, 7d, 1mo, 1y); anything else is 400 invalid_span."""

    def to_internal_value(self, data):
        if not isinstance(data, str):
            raise serializers.ValidationError(f"{data!r} is not a span: a number and a unit, e.g. 1y",
                                              code="invalid_span")
        try:
            return parse_span(data)
        except KeepingTimeError as exc:
            raise serializers.ValidationError(exc.message, code=exc.code) from None


class TestClockAdvanceSerializer(serializers.Serializer):
    to = InstantField(required=False, help_text="The new frozen time; never before the current one")
    span = SpanField(required=False, help_text="Or how far to move from the frozen time, as `tick 1y` does: a "
                                               "number and s, m, h, d, w, mo or y (`to` or `span`, not both)")
    redeliver = StrictBooleanField(required=False, default=False,
                                   help_text="Deliver every wake twice (each second one replays)")

    def validate(self, attrs):
        if ("to" in attrs) == ("span" in attrs):
            raise serializers.ValidationError({"to": "give to (an instant) or span (1y), one of them"})
        return attrs


def openapi_advance_body(result: dict, generator, request, public) -> dict:
    """drf-spectacular's postprocessing hook: an advance's body is required (it names to or span), which
    drf-spectacular infers only from a required property, and neither is required alone."""
    for path, operations in result.get("paths", {}).items():
        if path.endswith("/advance") and "requestBody" in operations.get("post", {}):
            operations["post"]["requestBody"]["required"] = True
    return result


class TestClockAdvanceSchema(OpenApiSerializerExtension):
    """Exactly one of to and span, as the serializer takes it."""

    target_class = TestClockAdvanceSerializer

    def map_serializer(self, auto_schema, direction):
        schema = auto_schema._map_basic_serializer(self.target, direction)
        if direction == "request":
            schema["oneOf"] = [{"required": ["to"]}, {"required": ["span"]}]
        return schema


class ListQuerySerializer(serializers.Serializer):
    limit = QueryIntegerField(required=False, default=10, min_value=1, max_value=100)
    starting_after = query_field("An object id: the page starts after it")


class TimerListQuerySerializer(ListQuerySerializer):
    on = query_field("The owner: exactly, or a clock's occurrences (owner#…)", max_length=160)
    status = Choice(required=False, choices=Timer.Status.choices, component="TimerStatus")
    test_clock = query_field("The test clock's timers; the live clock's when absent")


class EventListQuerySerializer(ListQuerySerializer):
    type = query_field("An event type, or a prefix ending in * (timer.*)")
    test_clock = query_field("Only this test clock's events; every domain when absent")


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
    seed = serializers.CharField(help_text="What ids minted on it derive from; empty: its id")
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
    late_by = serializers.CharField(allow_null=True, help_text="how late the firing that wrote it was (live), "
                                    "e.g. 6m 2s; 0s on a test clock; null outside the tick")
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
        "note": serializers.CharField(required=False, help_text="Why an empty page is empty: the test clocks "
                                                                "that hold the objects, when none is named"),
    })
