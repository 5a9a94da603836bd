"""What the API takes: strict fields for bodies and query strings, and the checks of what a database stores.

These parse and validate; the views hand validated_data to the service functions. They take what the schema
says and nothing else: DRF's fields turn 0 into "0" and "yes" into True, which the schema (type: string, type:
boolean) does not allow, so a client that relies on it would break on a stricter server. Every app's API
builds its serializers from them (names, instants, spans, metadata, the list query), and the CLI parses a
date as the API does (``parse_from``).
"""

from __future__ import annotations

import json
import math
import re
from datetime import UTC, date, datetime
from decimal import Decimal
from typing import TYPE_CHECKING, Any, NoReturn

from dateutil.relativedelta import relativedelta
from django.http import QueryDict
from drf_spectacular.extensions import OpenApiSerializerFieldExtension
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from ..errors import KeepingTimeError
from ..timeutil import SPAN_PATTERN, iso_z, parse_instant, parse_span, zone_names

if TYPE_CHECKING:
    from drf_spectacular.openapi import AutoSchema
    from drf_spectacular.utils import Direction


def from_form(field: serializers.Field[Any, Any, Any, Any]) -> bool:
    """Whether the body came form-encoded (as Stripe's clients send it): every value is then a string, and a
    boolean or a number is written as one."""
    return isinstance(getattr(field.root, "initial_data", None), QueryDict)


if TYPE_CHECKING:
    _Text = serializers.CharField  # what StringOnly is mixed into
else:
    _Text = object


class StringOnly(_Text):
    """A JSON string, never a number or a boolean turned into one."""

    def to_internal_value(self, data: Any) -> str:
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

    def map_serializer_field(self, auto_schema: AutoSchema, direction: Direction) -> dict[str, Any]:
        # Lengths and blank come from the field's validators, added after this (_insert_field_validators).
        return {"type": "string", "pattern": NO_NUL}


def _not_a(kind: str, data: Any) -> str:
    """What a strict field says of a value of another JSON type: '"7"' is text, not the number 7."""
    if isinstance(data, str):
        return f"expected {kind}, not a string ({json.dumps(data)[:40]}): send it without quotes"
    return f"expected {kind}, not {type(data).__name__ if data is not None else 'null'}"


class StrictBooleanField(serializers.BooleanField):
    """true or false, a JSON boolean; a form field (all strings) writes them as "true" and "false"."""

    def to_internal_value(self, data: Any) -> bool:
        if isinstance(data, bool):
            return data
        if isinstance(data, str) and from_form(self) and data in ("true", "false"):
            return data == "true"
        raise serializers.ValidationError(_not_a("true or false", data), code="invalid")


_INTEGER = re.compile(r"-?[0-9]{1,18}")


class StrictIntegerField(serializers.IntegerField):
    """A whole JSON number (7, or 7.0, which JSON Schema calls the same integer), never "7" or true; a form
    field (all strings) writes it as digits. DRF's own takes "7", " 7 " and 7.0 alike."""

    def to_internal_value(self, data: Any) -> int:
        if isinstance(data, str) and from_form(self) and _INTEGER.fullmatch(data):
            return super().to_internal_value(data)
        if isinstance(data, bool) or not isinstance(data, int | float):
            raise serializers.ValidationError(_not_a("a whole number", data), code="invalid")
        if isinstance(data, float) and not (math.isfinite(data) and data.is_integer()):
            self.fail("invalid")
        return super().to_internal_value(int(data))


class StrictFloatField(serializers.FloatField):
    """A JSON number, never "7.5" or true; a form field writes it as text."""

    def to_internal_value(self, data: Any) -> float:
        if isinstance(data, str) and from_form(self):
            return super().to_internal_value(data)
        if isinstance(data, bool) or not isinstance(data, int | float):
            raise serializers.ValidationError(_not_a("a number", data), code="invalid")
        return super().to_internal_value(data)


class StrictDecimalField(serializers.DecimalField):
    """An amount as a JSON number (12.5), never "12.50" or true, with at most ``decimal_places`` decimals; a
    form field writes it as text. The schema says number, with multipleOf for the places."""

    def __init__(self, **kwargs: Any) -> None:
        kwargs.setdefault("coerce_to_string", False)
        super().__init__(**kwargs)

    def to_internal_value(self, data: Any) -> Decimal:
        if isinstance(data, str) and from_form(self):
            return super().to_internal_value(data)
        if isinstance(data, bool) or not isinstance(data, int | float):
            raise serializers.ValidationError(_not_a("a number", data), code="invalid")
        # A float's repr is the shortest text that reads back as it: 0.35, as the client wrote it.
        return super().to_internal_value(repr(data) if isinstance(data, float) else data)


class StrictDecimalSchema(OpenApiSerializerFieldExtension):
    target_class = StrictDecimalField

    def map_serializer_field(self, auto_schema: AutoSchema, direction: Direction) -> dict[str, Any]:
        # min_value and max_value come from the field's validators, added after this (_insert_field_validators);
        # max_digits is no validator of DRF's, so its bound is said here.
        field = self.target
        schema: dict[str, Any] = {"type": "number", "format": "decimal"}
        if field.decimal_places is not None:
            schema["multipleOf"] = float(Decimal(1).scaleb(-field.decimal_places))
        if field.max_whole_digits is not None:
            bound = 10 ** field.max_whole_digits
            schema.update(maximum=bound, exclusiveMaximum=True, minimum=-bound, exclusiveMinimum=True)
        return schema


class QueryIntegerField(serializers.IntegerField):
    """A whole number in a query string: digits only (DRF also takes 1.0 and " 1 ")."""

    def to_internal_value(self, data: Any) -> int:
        if isinstance(data, bool) or not isinstance(data, int | str) or (
                isinstance(data, str) and not _INTEGER.fullmatch(data)):
            self.fail("invalid")
        return super().to_internal_value(data)


class QueryBooleanField(serializers.BooleanField):
    """true or false in a query string, as OpenAPI writes a boolean there (DRF also takes 1, yes and on)."""

    def to_internal_value(self, data: object) -> bool:
        if isinstance(data, bool):
            return data
        if data in ("true", "false"):
            return data == "true"
        self.fail("invalid", input=data)


# C0 and C1 controls and DEL: a name is one line of text, printed in pages, headers and commands' output.
CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")
_CONTROLS = "\\u0000-\\u001f\\u007f-\\u009f"
# What shows nothing where a name is printed: spaces of every width, and the characters that draw nothing (the
# soft hyphen, zero-width spaces and joiners, direction marks and isolates, the word joiner and invisible
# operators, the byte-order mark, variation selectors, and the Hangul and Braille fillers). A name made only
# of these (and controls) is no name a person can read.
_INVISIBLE = ("\\u0020\\u00a0\\u00ad\\u034f\\u061c\\u115f\\u1160\\u1680\\u17b4\\u17b5\\u180b-\\u180f"
              "\\u2000-\\u200f\\u2028-\\u202f\\u205f-\\u206f\\u2800\\u3000\\u3164\\ufe00-\\ufe0f\\ufeff\\uffa0")
VISIBLE = re.compile(f"[^{_INVISIBLE}{_CONTROLS}]".encode().decode("unicode_escape"))
# The schema says the same: at least one character that shows, and no control character.
NAME_PATTERN = f"^(?=[\\s\\S]*[^{_INVISIBLE}{_CONTROLS}])[^{_CONTROLS}]+$"
# Free text (a note, a notice, a description): one line, no control character; blank where a field allows it.
TEXT_PATTERN = f"^[^{_CONTROLS}]+$"


def control_problem(name: str, *, what: str = "a name") -> str | None:
    found = CONTROL.search(name)
    if found:
        return f"holds a control character ({found.group()!r} at {found.start()}): {what} is one line of text"
    return None


def name_problem(name: str, *, max_length: int = 200) -> str | None:
    """What is wrong with a name a person gives (a brand's, a key's, any --name), or None; the API's NameField
    says the same. An empty name is the caller's to allow or refuse; one of only spaces or invisible characters
    is refused."""
    if len(name) > max_length:
        return f"at most {max_length} characters (this one has {len(name)})"
    problem = control_problem(name)
    if problem is None and name and not VISIBLE.search(name):
        problem = "holds nothing visible (only spaces or invisible characters): a name is read by people"
    return problem


def text_problem(text: str) -> str | None:
    """What is wrong with free text a person gives (a note, a notice, a description), or None."""
    return control_problem(text, what="this text")


class NameField(StrictCharField):
    """A name: text with no control characters and something visible (400 invalid_name), read before DRF trims
    whitespace: "Acme\n" is refused, as the schema says, not taken as "Acme"; so is a zero-width space alone."""

    def run_validation(self, data: Any = serializers.empty) -> Any:
        # A NUL is refused as in any text field (invalid_request, DRF's validator); "" is blank, the field's to allow.
        problem = name_problem(data, max_length=len(data)) if isinstance(data, str) and "\x00" not in data else None
        if problem:
            raise serializers.ValidationError(problem, code="invalid_name")
        return super().run_validation(data)


class NameSchema(OpenApiSerializerFieldExtension):
    target_class = NameField

    def map_serializer_field(self, auto_schema: AutoSchema, direction: Direction) -> dict[str, Any]:
        return {"type": "string", "pattern": NAME_PATTERN}


class TextField(StrictCharField):
    """Free text (a pause note, a penalty's notice, an activity, a webhook endpoint's description): one line,
    no control character (400 invalid_text), read before DRF trims whitespace, as a name is."""

    def run_validation(self, data: Any = serializers.empty) -> Any:
        problem = text_problem(data) if isinstance(data, str) and "\x00" not in data else None
        if problem:
            raise serializers.ValidationError(problem, code="invalid_text")
        return super().run_validation(data)


class TextSchema(OpenApiSerializerFieldExtension):
    target_class = TextField

    def map_serializer_field(self, auto_schema: AutoSchema, direction: Direction) -> dict[str, Any]:
        return {"type": "string", "pattern": TEXT_PATTERN}


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
class InstantField(serializers.Field[datetime, Any, "str | None", Any]):
    """An instant: RFC 3339 with Z or an offset (a naive time is refused), or integer unix seconds (a string
    of digits in a form field)."""

    default_error_messages = {
        "invalid": "expected an RFC 3339 instant with Z or an offset (e.g. 2026-12-01T09:00Z) "
                   "or integer unix seconds",
        "range": "{value!r} is out of range",
    }

    # Every way an instant is wrong answers invalid_time, the code the CLI and the README use for it.
    def fail(self, key: str, **kwargs: Any) -> NoReturn:
        try:
            super().fail(key, **kwargs)
        except serializers.ValidationError as exc:
            assert isinstance(exc.detail, list)  # a field's failure is its one message
            raise serializers.ValidationError(str(exc.detail[0]), code="invalid_time") from None

    def to_internal_value(self, data: Any) -> datetime:
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

    def to_representation(self, value: datetime | None) -> str | None:
        return iso_z(value)


def _surrogate_at(value: object, path: str = "") -> str | None:
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


def has_surrogate(value: object) -> str | None:
    """As _surrogate_at, with one fast pass over the whole value first (most bodies have none)."""
    try:
        json.dumps(value, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError:
        return _surrogate_at(value) or "(the value)"
    except (TypeError, ValueError):
        return None
    return None


def plain_json(value: object, path: str = "") -> None:
    """Refuses (a ValidationError naming where) what jsonb cannot store: a NUL character, a lone surrogate or
    an infinite number (PostgreSQL refuses all three). The API's JSON fields and the CLI's --data check with it."""
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
            plain_json(k, path)
            plain_json(v, f"{path}.{k}" if path else str(k))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            plain_json(v, f"{path}[{i}]")


class MetadataField(serializers.DictField):
    """Stripe's metadata: up to 50 keys, text values of up to 500 characters; on an update a key set to "" is
    removed. Unlike Stripe's, a key may be any text (but NUL, which no database stores): OpenAPI 3.0 cannot say
    what a key may be (no propertyNames), and a body the schema admits is taken."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(child=StrictCharField(allow_blank=True, max_length=500), **kwargs)

    def to_internal_value(self, data: Any) -> dict[str, str]:
        value = super().to_internal_value(data)
        if len(value) > 50:
            raise serializers.ValidationError("at most 50 keys")
        if any("\x00" in k for k in value):
            raise serializers.ValidationError("a key holds no NUL character")
        return value


class MetadataSchema(OpenApiSerializerFieldExtension):
    target_class = MetadataField

    def map_serializer_field(self, auto_schema: AutoSchema, direction: Direction) -> dict[str, Any]:
        return {"type": "object", "maxProperties": 50,
                "additionalProperties": {"type": "string", "maxLength": 500, "pattern": "^[^\\u0000]*$"},
                "description": 'Your own keys and text values; on an update, merged, and a key set to "" is removed'}


class QueryInstantField(InstantField):
    """An instant in a query string, where every value is a string: digits are unix seconds there, as in a form
    (the schema offers an integer, which a query can only write as digits)."""

    def to_internal_value(self, data: Any) -> datetime:
        if isinstance(data, str) and _DIGITS.fullmatch(data):
            data = int(data)
        return super().to_internal_value(data)


@extend_schema_field({"type": "string", "pattern": SPAN_PATTERN, "example": "1y"})
class SpanField(StrictCharField):
    """A span as the CLI's ``tick`` takes it (6h, 7d, 1mo, 1y); anything else is 400 invalid_span."""

    def to_internal_value(self, data: Any) -> relativedelta:  # type: ignore[override]  # a span, not its text
        if not isinstance(data, str):
            raise serializers.ValidationError(f"{data!r} is not a span: a number and a unit, e.g. 1y",
                                              code="invalid_span")
        try:
            return parse_span(data)
        except KeepingTimeError as exc:
            raise serializers.ValidationError(exc.message, code=exc.code) from None


class ZoneField(StrictCharField):
    """An IANA zone's name (a schedule's, a calendar's): the schema lists the names this server knows; the
    runtime says what is wrong with another (invalid_zone). Taken as sent: "UTC " is no zone, not "UTC"."""

    def __init__(self, **kwargs: Any) -> None:
        kwargs.setdefault("trim_whitespace", False)
        super().__init__(**kwargs)


class ZoneSchema(OpenApiSerializerFieldExtension):
    target_class = ZoneField

    def map_serializer_field(self, auto_schema: AutoSchema, direction: Direction) -> dict[str, Any]:
        return {"type": "string", "enum": sorted(zone_names())}


class ListQuerySerializer(serializers.Serializer[Any]):
    limit = QueryIntegerField(required=False, default=10, min_value=1, max_value=100)
    starting_after = query_field("An object id: the page starts after it")


_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")


def parse_from(raw: str | None, *, param: str = "from") -> date | None:
    """A civil date a request or a command names (``from=2027-02-01``), or None when absent or empty; anything
    but YYYY-MM-DD is invalid_request about ``param``."""
    if raw is None or raw == "":
        return None
    value = None
    if _DATE.match(raw.strip()):
        try:
            value = date.fromisoformat(raw.strip())
        except ValueError:
            value = None
    if value is None:
        err = KeepingTimeError(f"{param}: {raw!r} is not a date; write YYYY-MM-DD, e.g. 2027-02-01",
                               code="invalid_request")
        err.param = param
        raise err
    return value
