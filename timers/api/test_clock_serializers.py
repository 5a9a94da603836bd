"""The API's test clocks as JSON, and what their endpoints take: create, and advance by ``to`` or ``span``."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from drf_spectacular.extensions import OpenApiSerializerExtension
from rest_framework import serializers

from ..ids import SEED_PATTERN
from ..models import TestClock
from ..timeutil import iso_z
from .inputs import InstantField, NameField, SpanField, StrictBooleanField, StrictRegexField
from .openapi import Choice, const

if TYPE_CHECKING:
    from drf_spectacular.generators import SchemaGenerator
    from drf_spectacular.openapi import AutoSchema
    from drf_spectacular.utils import Direction
    from rest_framework.request import Request


def test_clock_json(c: TestClock) -> dict[str, Any]:
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


class TestClockCreateSerializer(serializers.Serializer[Any]):
    frozen_time = InstantField()
    name = NameField(required=False, allow_null=True, allow_blank=True, max_length=200, default="")
    seed = StrictRegexField(SEED_PATTERN, required=False, allow_null=True, allow_blank=True, default="",
                            help_text="Ids minted on the clock derive from the seed and what they name, so the same "
                                      "scenario on a clock of the same seed makes the same record; one clock per seed")


class TestClockAdvanceSerializer(serializers.Serializer[Any]):
    to = InstantField(required=False, help_text="The new frozen time; never before the current one")
    span = SpanField(required=False, help_text="Or how far to move from the frozen time, as `tick 1y` does: a "
                                               "number and s, m, h, d, w, mo or y (`to` or `span`, not both)")
    redeliver = StrictBooleanField(required=False, default=False,
                                   help_text="Deliver every wake twice (each second one replays)")

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        if ("to" in attrs) == ("span" in attrs):
            raise serializers.ValidationError({"to": "give to (an instant) or span (1y), one of them"})
        return attrs


def openapi_advance_body(result: dict[str, Any], generator: SchemaGenerator, request: Request | None,
                public: bool) -> dict[str, Any]:
    """drf-spectacular's postprocessing hook: an advance's body is required (it names to or span), which
    drf-spectacular infers only from a required property, and neither is required alone."""
    for path, operations in result.get("paths", {}).items():
        if path.endswith("/advance") and "requestBody" in operations.get("post", {}):
            operations["post"]["requestBody"]["required"] = True
    return result


class TestClockAdvanceSchema(OpenApiSerializerExtension):
    """Exactly one of to and span, as the serializer takes it."""

    target_class = TestClockAdvanceSerializer

    def map_serializer(self, auto_schema: AutoSchema, direction: Direction) -> dict[str, Any]:
        schema: dict[str, Any] = auto_schema._map_basic_serializer(self.target, direction)
        if direction == "request":
            schema["oneOf"] = [{"required": ["to"]}, {"required": ["span"]}]
        return schema


# -- what the API answers: these only describe the JSON above, for the OpenAPI schema ------------------
class AdvancingSerializer(serializers.Serializer[Any]):
    target_frozen_time = serializers.DateTimeField()
    redeliver = serializers.BooleanField()


class StatusDetailsSerializer(serializers.Serializer[Any]):
    advancing = AdvancingSerializer(required=False)


class TestClockSerializer(serializers.Serializer[Any]):
    id = serializers.CharField()
    object = const("test_clock", "TestClockObject")
    name = serializers.CharField()
    seed = serializers.CharField(help_text="What ids minted on it derive from; empty: its id")
    frozen_time = serializers.DateTimeField()
    status = Choice(choices=TestClock.Status.choices, component="TestClockStatus")
    status_details = StatusDetailsSerializer()
    created = serializers.DateTimeField()


class DeletedTestClockSerializer(serializers.Serializer[Any]):
    id = serializers.CharField()
    object = const("test_clock", "TestClockObject")
    deleted = serializers.BooleanField()
