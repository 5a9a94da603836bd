"""The REST API's views: each parses, calls a service function, renders. Every read is the caller's brand's,
in the caller's key's mode (``timers.selectors``: a brand's own objects, one by id or a page of them).

The caller's brand is ``request.auth`` (timers.api.auth). A list with no ``test_clock`` is the live clock's,
as Stripe leaves test-clock objects out unless asked: for a test key, empty. Creating across modes is refused:
a test clock with a live key (``test_mode_only``), a timer on the live clock with a test key
(``live_mode_only``). ``BrandAPIView`` and ``SafeJSONParser`` are every app's API views' base and parser.
"""

from __future__ import annotations

import codecs
from collections.abc import Mapping
from types import SimpleNamespace
from typing import IO, TYPE_CHECKING, Any

from drf_spectacular.utils import extend_schema
from rest_framework.exceptions import AuthenticationFailed, ParseError
from rest_framework.parsers import FormParser, JSONParser, get_encoding
from rest_framework.response import Response
from rest_framework.utils import json
from rest_framework.views import APIView

from .. import arming, test_clocks
from ..errors import KeepingTimeError
from ..models import Brand, TestClock
from ..record import event_json
from ..selectors import (
    arm_domain_of,
    events_page,
    get_event,
    get_test_clock,
    get_timer,
    owned,
    page,
    timers_page,
)
from ..timeutil import after_span
from . import idempotency, parameters
from .auth import SecretKeyAuthentication, livemode
from .errors import rate_limited
from .inputs import ListQuerySerializer, has_surrogate
from .openapi import ERRORS, NOT_FOUND, WRONG_MODE, error_response, list_serializer
from .serializers import (
    EventListQuerySerializer,
    EventSerializer,
    TimerCreateSerializer,
    TimerListQuerySerializer,
    TimerSerializer,
    WakeSerializer,
    timer_json,
)
from .test_clock_serializers import (
    DeletedTestClockSerializer,
    TestClockAdvanceSerializer,
    TestClockCreateSerializer,
    TestClockSerializer,
    test_clock_json,
)
from .throttles import ApiKeyRateThrottle

if TYPE_CHECKING:
    from django.http import HttpRequest
    from django.http.response import HttpResponseBase
    from rest_framework.request import Request
    from rest_framework.serializers import Serializer


class SafeJSONParser(JSONParser):
    """JSON, with a body nested too deep for the parser, or with a lone surrogate in a string, answered as
    invalid JSON rather than a 500; an object naming a key twice is 400 parameter_duplicated."""

    def parse(self, stream: IO[Any], media_type: str | None = None,
              parser_context: Mapping[str, Any] | None = None) -> Any:
        encoding = get_encoding(parser_context or {})  # DRF's: text charsets only
        try:
            # DRF's JSONParser.parse, with the hook that refuses a key named twice (a KeepingTimeError, which
            # is no ValueError: it leaves as itself).
            data = json.load(codecs.getreader(encoding)(stream),
                             object_pairs_hook=parameters.refuse_duplicate_keys)
        except ValueError as exc:
            raise ParseError(f"the body is not valid JSON: {exc}") from None
        except RecursionError:
            raise ParseError("the body is not valid JSON: nested too deep") from None
        where = has_surrogate(data)
        if where:
            # JSON can write \ud800 alone; it is no Unicode text and no database column takes it.
            raise ParseError(f"the body is not valid JSON text: a lone surrogate (\\ud800-\\udfff) at {where}")
        return data


class BrandAPIView(APIView):
    # JSON, and form fields as Stripe's clients send them (flat fields only).
    parser_classes = [SafeJSONParser, FormParser]
    # Per secret key (KT_RATE_LIMIT): 429 rate_limited with Retry-After over it.
    throttle_classes = [ApiKeyRateThrottle]

    def dispatch(self, request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponseBase:
        key = request.META.get(idempotency.HEADER)
        if request.method != "POST" or key is None:
            return super().dispatch(request, *args, **kwargs)
        try:
            found = SecretKeyAuthentication().authenticate(request)
        except AuthenticationFailed:
            found = None
        if found is None:  # no key, or a bad one: the view answers 401, and nothing is kept
            return super().dispatch(request, *args, **kwargs)
        brand = found[1]
        # Counted here, before a replay could answer without DRF's throttle: a replay is a request like any other.
        throttle = ApiKeyRateThrottle()
        if not throttle.allow_request(SimpleNamespace(auth=brand), self):  # type: ignore[arg-type]  # it reads .auth
            return rate_limited(throttle.wait())
        request.kt_rate_counted = True  # type: ignore[attr-defined]  # DRF's throttle in initial() counts it no more
        return idempotency.run(request=request, brand=brand, livemode=livemode(brand), key=key,
                               # DRF's dispatch answers a Response (an HttpResponse); the stubs say any response.
                               call=lambda: super(BrandAPIView, self).dispatch(request, *args, **kwargs))  # type: ignore[arg-type,return-value]

    def initial(self, request: Request, *args: Any, **kwargs: Any) -> None:
        super().initial(request, *args, **kwargs)  # the key, its permission, its rate
        parameters.check_path_ids(self, request, kwargs)
        parameters.check(self, request)

    @property
    def brand(self) -> Brand:
        return self.request.auth  # type: ignore[return-value]  # HasBrand let the request in: its auth is a Brand

    def body(self, serializer_class: type[Serializer[Any]]) -> dict[str, Any]:
        raw = self.request._request
        if raw.body.lstrip()[:1] in (b"{", b"[") and not (self.request.content_type or "").startswith(
                "application/json"):
            # Read as a form it would be "field required": say what is wrong instead.
            raise KeepingTimeError("the body is JSON: send it with Content-Type: application/json",
                                   code="unsupported_media_type", status=415)
        s = serializer_class(data=self.request.data)
        s.is_valid(raise_exception=True)
        valid: dict[str, Any] = s.validated_data
        return valid

    def query(self, serializer_class: type[Serializer[Any]]) -> dict[str, Any]:
        # A plain dict, not the QueryDict: DRF reads an empty value in a QueryDict as absent, whatever the
        # field allows, so ?status= would list everything while the schema says it is no status.
        s = serializer_class(data=self.request.query_params.dict())
        s.is_valid(raise_exception=True)
        valid: dict[str, Any] = s.validated_data
        return valid


# -- timers ---------------------------------------------------------------------------------------------
class TimerListView(BrandAPIView):
    parser_classes = [SafeJSONParser]  # data is an object: a form cannot carry it (its fields would be the body's own)

    @extend_schema(
        operation_id="timers_list", tags=["timers"], parameters=[TimerListQuerySerializer],
        summary="List timers",
        description="The live clock's timers, or a test clock's, in the order they were armed. `on` is the "
                    "owner exactly, or a clock's occurrences (`on=clk_8Tx1` lists `clk_8Tx1#US`…).",
        responses={200: list_serializer("TimerList", TimerSerializer), **ERRORS, **NOT_FOUND},
    )
    def get(self, request: Request) -> Response:
        return Response(timers_page(self.brand, self.query(TimerListQuerySerializer)))

    @extend_schema(
        operation_id="timers_arm", tags=["timers"], request=TimerCreateSerializer, summary="Arm a timer",
        description="Arms a timer under its key on the live clock (a live key) or a test clock (a test key); "
                    "it fires on the domain's next tick. Errors: invalid_key, unknown_handler, live_mode_only "
                    "(403: a test key without test_clock), timer_exists (409).",
        responses={201: TimerSerializer, **ERRORS, **NOT_FOUND, **WRONG_MODE,
                   409: error_response("A timer with this key is already armed on the domain: timer_exists")},
    )
    def post(self, request: Request) -> Response:
        body = self.body(TimerCreateSerializer)
        timer = arming.timer_arm(
            brand=self.brand, key=body["key"], owed_at=body["owed_at"],
            domain=arm_domain_of(self.brand, body.get("test_clock")), handler=body.get("handler") or None,
            data=body.get("data") or {},
        )
        return Response(timer_json(timer), status=201)


class TimerDetailView(BrandAPIView):
    @extend_schema(operation_id="timers_retrieve", tags=["timers"], summary="Retrieve a timer",
                   responses={200: TimerSerializer, 401: ERRORS[401], **NOT_FOUND})
    def get(self, request: Request, timer_id: str) -> Response:
        return Response(timer_json(get_timer(self.brand, timer_id)))


class TimerWakeView(BrandAPIView):
    @extend_schema(
        operation_id="timers_wake", tags=["timers"], request=None, summary="Wake a timer",
        description="A wake delivered outside the tick. A fired timer answers replayed: true with its first "
                    "commit and counts the wake; any other timer answers replayed: false.",
        responses={200: WakeSerializer, 401: ERRORS[401], **NOT_FOUND},
    )
    def post(self, request: Request, timer_id: str) -> Response:
        return Response(arming.timer_wake(timer=get_timer(self.brand, timer_id)))


# -- test clocks ------------------------------------------------------------------------------------------
CLOCK_ORDER = ("created_at", "id")


class TestClockListView(BrandAPIView):
    @extend_schema(operation_id="test_clocks_list", tags=["test_clocks"], parameters=[ListQuerySerializer],
                   summary="List test clocks",
                   responses={200: list_serializer("TestClockList", TestClockSerializer), **ERRORS, **NOT_FOUND})
    def get(self, request: Request) -> Response:
        params = self.query(ListQuerySerializer)
        scope = owned(TestClock.objects.all(), self.brand)
        qs = scope.exclude(status__in=TestClock.GONE)
        return Response(page(qs, scope=scope, order=CLOCK_ORDER, lookup="pk", params=params,
                             url="/test_clocks", render=lambda rows: [test_clock_json(c) for c in rows], what="test clock"))

    @extend_schema(operation_id="test_clocks_create", tags=["test_clocks"], request=TestClockCreateSerializer,
                   summary="Create a test clock",
                   description="A test key only: a live key is refused with test_mode_only (403).",
                   responses={201: TestClockSerializer, **ERRORS, **WRONG_MODE,
                              409: error_response("Another test clock holds the seed: test_clock_seed_taken")})
    def post(self, request: Request) -> Response:
        if livemode(self.brand):
            raise KeepingTimeError("test clocks are test mode: create one with a test key (sk_test_…), not a "
                                   "live key (sk_live_…)", code="test_mode_only", status=403)
        body = self.body(TestClockCreateSerializer)
        clock = test_clocks.test_clock_create(brand=self.brand, frozen_time=body["frozen_time"],
                                           name=body.get("name") or "", seed=body.get("seed") or "")
        return Response(test_clock_json(clock), status=201)


class TestClockDetailView(BrandAPIView):
    @extend_schema(operation_id="test_clocks_retrieve", tags=["test_clocks"], summary="Retrieve a test clock",
                   responses={200: TestClockSerializer, 401: ERRORS[401], **NOT_FOUND})
    def get(self, request: Request, clock_id: str) -> Response:
        return Response(test_clock_json(get_test_clock(self.brand, clock_id)))

    @extend_schema(operation_id="test_clocks_delete", tags=["test_clocks"], summary="Delete a test clock",
                   description="Voids everything on the clock: its armed and held timers are superseded "
                               "by test_clock.deleted.",
                   responses={200: DeletedTestClockSerializer, 401: ERRORS[401], **NOT_FOUND})
    def delete(self, request: Request, clock_id: str) -> Response:
        clock = test_clocks.test_clock_delete(clock=get_test_clock(self.brand, clock_id))
        return Response({"id": clock.id, "object": "test_clock", "deleted": True})


class TestClockAdvanceView(BrandAPIView):
    @extend_schema(
        operation_id="test_clocks_advance", tags=["test_clocks"], request=TestClockAdvanceSerializer,
        summary="Advance a test clock",
        description="Answers 202 advancing; the worker fires every timer owed by `to`, then records "
                    "test_clock.ready. A clock moves only forward.",
        responses={202: TestClockSerializer, **ERRORS, **NOT_FOUND,
                   409: error_response("test_clock_backward (with the call that creates a clock there) or "
                               "test_clock_advancing")},
    )
    def post(self, request: Request, clock_id: str) -> Response:
        clock = get_test_clock(self.brand, clock_id)
        body = self.body(TestClockAdvanceSerializer)
        to = body.get("to")
        if to is None:  # a span, as `tick 1y` takes it; one that lands past 9999 is invalid_span, as there
            try:
                # The body is an object (the serializer took it); the stubs allow a list too.
                to = after_span(clock.frozen_time, body["span"], text=request.data["span"])  # type: ignore[call-overload]
            except KeepingTimeError as exc:
                exc.param = "span"
                raise
        clock = test_clocks.test_clock_request_advance(clock=clock, to=to, redeliver=body["redeliver"])
        return Response(test_clock_json(clock), status=202)


# -- the record -----------------------------------------------------------------------------------------
class EventListView(BrandAPIView):
    @extend_schema(
        operation_id="events_list", tags=["events"], parameters=[EventListQuerySerializer],
        summary="List events",
        description="The brand's record, oldest first (tick order). `type` is exact, or a prefix ending in "
                    "`*` (`timer.*`).",
        responses={200: list_serializer("EventList", EventSerializer), **ERRORS, **NOT_FOUND},
    )
    def get(self, request: Request) -> Response:
        return Response(events_page(self.brand, self.query(EventListQuerySerializer)))


class EventDetailView(BrandAPIView):
    @extend_schema(operation_id="events_retrieve", tags=["events"], summary="Retrieve an event",
                   responses={200: EventSerializer, 401: ERRORS[401], **NOT_FOUND})
    def get(self, request: Request, event_id: str) -> Response:
        return Response(event_json(get_event(self.brand, event_id)))
