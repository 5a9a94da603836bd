"""The API's OpenAPI helpers: named enums, the error shape and its responses, the shape of a list.

Every API module of every app describes its answers with these, so a refusal, a list and an enum read the same
in the schema wherever they come from: ``error_response`` (one documented error), the ``ERRORS``,
``NOT_FOUND`` and ``WRONG_MODE`` responses most operations share, ``list_serializer`` (Stripe's list) and
``Choice``/``const`` (an enum that is a named component).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from drf_spectacular.extensions import OpenApiSerializerFieldExtension
from drf_spectacular.plumbing import ResolvedComponent
from drf_spectacular.utils import OpenApiResponse, inline_serializer
from rest_framework import serializers

if TYPE_CHECKING:
    from drf_spectacular.openapi import AutoSchema
    from drf_spectacular.utils import Direction


class Choice(serializers.ChoiceField):
    """A ChoiceField whose enum is a named schema component (Timer's and TestClock's ``status`` differ)."""

    def __init__(self, *, component: str, **kwargs: Any) -> None:
        self.component = component
        super().__init__(**kwargs)


class ChoiceSchema(OpenApiSerializerFieldExtension):
    target_class = Choice

    def map_serializer_field(self, auto_schema: AutoSchema, direction: Direction) -> dict[str, Any]:
        field = self.target
        component = ResolvedComponent(name=field.component, type=ResolvedComponent.SCHEMA, object=field.component,
                                      schema={"type": "string", "enum": list(field.choices)})
        auto_schema.registry.register_on_missing(component)
        return {"allOf": [component.ref], "nullable": True} if field.allow_null else component.ref


def const(value: str, component: str) -> Choice:
    """The ``object`` field: one fixed string."""
    return Choice(choices=[value], component=component)


class ErrorDetailSerializer(serializers.Serializer[Any]):
    type = Choice(choices=["invalid_request_error", "api_error"], component="ErrorType")
    code = serializers.CharField(help_text="e.g. invalid_key, resource_missing, test_clock_backward")
    message = serializers.CharField()
    param = serializers.CharField(required=False, help_text="The parameter at fault, when there is one")


class ErrorSerializer(serializers.Serializer[Any]):
    error = ErrorDetailSerializer()


def list_serializer(name: str, item: type[serializers.Serializer[Any]]) -> serializers.Serializer[Any]:
    """The shape of a Stripe-style list of ``item``."""
    return inline_serializer(name=name, fields={
        "object": const("list", "ListObject"),
        "data": item(many=True),
        "has_more": serializers.BooleanField(),
        "url": serializers.CharField(),
        "note": serializers.CharField(required=False, help_text="Why an empty page is empty: the test clocks "
                                                                "that hold the objects, when none is named"),
    })


def error_response(description: str) -> OpenApiResponse:
    """One documented error: the error shape, with what the status means for this operation."""
    return OpenApiResponse(ErrorSerializer, description=description)


ERRORS = {
    400: error_response("Invalid request: the error's code and message say what (invalid_request, invalid_json …)"),
    401: error_response("No key, or not a valid one: invalid_api_key"),
}
NOT_FOUND = {404: error_response("No such object for this brand: resource_missing")}
WRONG_MODE = {403: error_response("Not in this key's mode: live_mode_only (a test key arms on a test clock), "
                                  "test_mode_only (test clocks take a test key)")}
