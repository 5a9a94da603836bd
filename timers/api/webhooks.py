"""Webhook endpoints over HTTP, as Stripe's: ``POST/GET /webhook_endpoints``, ``GET/POST/DELETE
/webhook_endpoints/<id>``. Views parse, call timers/webhooks.py, render.

An endpoint is its key's mode's: a live key's hears the live clock's events, a test key's the brand's test
clocks'; another brand's or mode's id is the same 404. The signing secret (``whsec_…``) is in the create answer
only. Bad input is a 400 with a code and writes nothing: ``invalid_request`` (a field's type or size, with
``param``), ``invalid_url``, ``invalid_enabled_events`` (not an event type), ``unknown_event_type`` (a family
the record never writes). Each field's schema is exactly what the service takes, so a body the schema admits
is never refused.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from drf_spectacular.extensions import OpenApiSerializerFieldExtension
from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.response import Response

from .. import webhooks
from ..errors import NotFound
from ..models import WebhookEndpoint
from ..selectors import page
from . import idempotency
from .auth import livemode
from .inputs import ListQuerySerializer, MetadataField, StrictBooleanField, StrictCharField, TextField
from .openapi import ERRORS, NOT_FOUND, Choice, const, list_serializer
from .views import BrandAPIView, SafeJSONParser

if TYPE_CHECKING:
    from drf_spectacular.openapi import AutoSchema
    from drf_spectacular.utils import Direction
    from rest_framework.request import Request


ORDER = ("created_at", "id")
_ID = re.compile(r"^[A-Za-z0-9_]{1,32}$")


# -- what the API takes -------------------------------------------------------------------------------------
class UrlField(StrictCharField):
    """The service checks the URL (invalid_url); the schema says the same grammar."""


class UrlSchema(OpenApiSerializerFieldExtension):
    target_class = UrlField

    def map_serializer_field(self, auto_schema: AutoSchema, direction: Direction) -> dict[str, Any]:
        # No "format": "uri": a path may hold any text but spaces and controls (an IRI), which the pattern says.
        return {"type": "string", "pattern": webhooks.URL_PATTERN, "maxLength": webhooks.MAX_URL,
                "example": "https://example.com/keeping-time/events"}


class EnabledEventsField(serializers.ListField):
    """The service checks each pattern (invalid_enabled_events, unknown_event_type); the schema names the
    families the record writes, so what it admits is taken."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(child=serializers.JSONField(), **kwargs)

    def to_internal_value(self, data: Any) -> list[Any]:
        if not isinstance(data, list):
            raise serializers.ValidationError('a list of event types: ["*"], ["clock.due", "job.*"]')
        return list(data)


class EnabledEventsSchema(OpenApiSerializerFieldExtension):
    target_class = EnabledEventsField

    def map_serializer_field(self, auto_schema: AutoSchema, direction: Direction) -> dict[str, Any]:
        return {"type": "array", "minItems": 1, "maxItems": webhooks.MAX_PATTERNS,
                "items": {"type": "string", "pattern": webhooks.event_pattern_regex(),
                          "maxLength": webhooks.MAX_PATTERN_LENGTH},
                "example": ["clock.due", "job.*"],
                "description": '"*" (every event), an exact type (clock.due) or a prefix ending in .* (job.*)'}


class WebhookEndpointCreateSerializer(serializers.Serializer[Any]):
    url = UrlField(max_length=webhooks.MAX_URL, trim_whitespace=False,
                   help_text="Where each event is POSTed: http:// or https://")
    enabled_events = EnabledEventsField(help_text="The event types it hears")
    description = TextField(required=False, allow_blank=True, max_length=5000)
    metadata = MetadataField(required=False)


class WebhookEndpointUpdateSerializer(serializers.Serializer[Any]):
    url = UrlField(required=False, max_length=webhooks.MAX_URL, trim_whitespace=False)
    enabled_events = EnabledEventsField(required=False)
    description = TextField(required=False, allow_blank=True, max_length=5000)
    metadata = MetadataField(required=False)
    disabled = StrictBooleanField(required=False, help_text="true: it hears nothing new and what it is owed "
                                                            "waits; false: enabled again")


# -- what it answers -----------------------------------------------------------------------------------------
class WebhookEndpointSerializer(serializers.Serializer[Any]):
    id = serializers.CharField()
    object = const("webhook_endpoint", "WebhookEndpointObject")
    url = serializers.CharField()
    enabled_events = serializers.ListField(child=serializers.CharField())
    status = Choice(choices=WebhookEndpoint.Status.choices, component="WebhookEndpointStatus")
    description = serializers.CharField(allow_null=True)
    metadata = serializers.DictField(child=serializers.CharField())
    livemode = serializers.BooleanField(help_text="true: it hears the live clock; false: the test clocks")
    created = serializers.DateTimeField()
    secret = serializers.CharField(required=False, help_text="In the create answer only: whsec_…, which signs "
                                                             "each delivery's Keeping-Time-Signature")
    shown_once = serializers.ListField(child=serializers.CharField(), required=False,
                                       help_text="On a replay of the create (its Idempotency-Key): the fields the "
                                                 "first answer showed once and this one leaves out (secret)")


class DeletedWebhookEndpointSerializer(serializers.Serializer[Any]):
    id = serializers.CharField()
    object = const("webhook_endpoint", "WebhookEndpointObject")
    deleted = serializers.BooleanField()


def _get(view: BrandAPIView, endpoint_id: str) -> WebhookEndpoint:
    if not _ID.match(endpoint_id):
        raise NotFound(f"no webhook endpoint {endpoint_id!r}")
    return webhooks.get_endpoint(brand=view.brand, livemode=livemode(view.brand), endpoint_id=endpoint_id)


_BAD = "Errors: invalid_request (a field's type or size, with param), invalid_url, invalid_enabled_events, " \
       "unknown_event_type."


class WebhookEndpointListView(BrandAPIView):
    parser_classes = [SafeJSONParser]  # enabled_events is a list and metadata an object: a form cannot carry them

    @extend_schema(operation_id="webhook_endpoints_list", tags=["webhook_endpoints"], parameters=[ListQuerySerializer],
                   summary="List webhook endpoints", description="This key's mode's endpoints, oldest first.",
                   responses={200: list_serializer("WebhookEndpointList", WebhookEndpointSerializer), **ERRORS,
                              **NOT_FOUND})
    def get(self, request: Request) -> Response:
        params = self.query(ListQuerySerializer)
        scope = WebhookEndpoint.objects.filter(brand=self.brand, livemode=livemode(self.brand))
        return Response(page(scope, scope=scope, order=ORDER, lookup="pk", params=params, url="/webhook_endpoints",
                             render=lambda rows: [webhooks.endpoint_json(e) for e in rows], what="webhook endpoint"))

    @extend_schema(
        operation_id="webhook_endpoints_create", tags=["webhook_endpoints"], request=WebhookEndpointCreateSerializer,
        summary="Create a webhook endpoint",
        description="From now on, every event of this key's mode (a live key: the live clock; a test key: the "
                    "test clocks) whose type it wants is POSTed to `url`, in record order, signed "
                    "(`Keeping-Time-Signature: t=…,v1=<HMAC-SHA256 of \"t.body\">` with the secret this answer "
                    "shows once), with the event id as `Idempotency-Key`; a failure is retried with backoff for "
                    "three days. " + _BAD,
        responses={201: WebhookEndpointSerializer, **ERRORS},
    )
    def post(self, request: Request) -> Response:
        body = self.body(WebhookEndpointCreateSerializer)
        endpoint = webhooks.endpoint_create(
            brand=self.brand, livemode=livemode(self.brand), url=body["url"], enabled_events=body["enabled_events"],
            description=body.get("description") or "",
            metadata={k: v for k, v in body.get("metadata", {}).items() if v != ""})
        # The secret is shown in this answer only: a replay of it under its Idempotency-Key leaves it out.
        return idempotency.shown_once(Response(webhooks.endpoint_json(endpoint, secret=True), status=201), "secret")


class WebhookEndpointDetailView(BrandAPIView):
    parser_classes = [SafeJSONParser]

    @extend_schema(operation_id="webhook_endpoints_retrieve", tags=["webhook_endpoints"],
                   summary="Retrieve a webhook endpoint", description="Never its secret.",
                   responses={200: WebhookEndpointSerializer, 401: ERRORS[401], **NOT_FOUND})
    def get(self, request: Request, endpoint_id: str) -> Response:
        return Response(webhooks.endpoint_json(_get(self, endpoint_id)))

    @extend_schema(
        operation_id="webhook_endpoints_update", tags=["webhook_endpoints"], request=WebhookEndpointUpdateSerializer,
        summary="Update a webhook endpoint",
        description="Changes what is given: `url`, `enabled_events`, `description`, `metadata` (merged), "
                    "`disabled` (true: it hears nothing new, and what it is owed waits in order until it is "
                    "enabled again). " + _BAD,
        responses={200: WebhookEndpointSerializer, **ERRORS, **NOT_FOUND},
    )
    def post(self, request: Request, endpoint_id: str) -> Response:
        endpoint = _get(self, endpoint_id)
        body = self.body(WebhookEndpointUpdateSerializer)
        webhooks.endpoint_update(endpoint=endpoint, url=body.get("url"), enabled_events=body.get("enabled_events"),
                                 description=body.get("description"), metadata=body.get("metadata"),
                                 disabled=body.get("disabled"))
        return Response(webhooks.endpoint_json(endpoint))

    @extend_schema(operation_id="webhook_endpoints_delete", tags=["webhook_endpoints"],
                   summary="Delete a webhook endpoint",
                   description="What it is still owed is voided, never sent; its delivery log goes with it.",
                   responses={200: DeletedWebhookEndpointSerializer, 401: ERRORS[401], **NOT_FOUND})
    def delete(self, request: Request, endpoint_id: str) -> Response:
        endpoint = _get(self, endpoint_id)
        webhooks.endpoint_delete(endpoint=endpoint)
        return Response({"id": endpoint_id, "object": "webhook_endpoint", "deleted": True})

