"""The REST API's views: each parses, calls a service function, renders. Every read is the caller's brand's,
in the caller's key's mode.

The caller's brand is ``request.auth`` (timers.api.auth); an id of another brand's is a 404, never a leak.
Modes are kept apart as Stripe keeps them: a live key (``sk_live_…``) sees and acts on the live clock's
objects only, a test key (``sk_test_…``) on test clocks and their objects only; an id of the other mode's is
the same 404. A list with no ``test_clock`` is the live clock's, as Stripe leaves test-clock objects out
unless asked: for a test key, empty. Creating across modes is refused: a test clock with a live key
(``test_mode_only``), a timer on the live clock with a test key (``live_mode_only``).
Lists are Stripe's shape, {"object": "list", "data", "has_more", "url"}, paged with ``limit`` and
``starting_after`` (an object id) over a stable order.
"""

from __future__ import annotations

import re

from django.db.models import Count, Q, QuerySet
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework.exceptions import AuthenticationFailed, ParseError
from rest_framework.parsers import FormParser, JSONParser
from rest_framework.response import Response
from rest_framework.views import APIView

from .. import arming, test_clocks
from ..errors import KeepingTimeError, NotFound
from ..models import LIVE_PREFIX, Brand, Event, TestClock, Timer, is_live, live_domain
from ..owners import owner_filter
from ..timeutil import after_span
from . import idempotency
from .auth import SecretKeyAuthentication, livemode
from .serializers import (
    DeletedTestClockSerializer,
    ErrorSerializer,
    EventListQuerySerializer,
    EventSerializer,
    ListQuerySerializer,
    TestClockAdvanceSerializer,
    TestClockCreateSerializer,
    TestClockSerializer,
    TimerCreateSerializer,
    TimerListQuerySerializer,
    TimerSerializer,
    WakeSerializer,
    event_json,
    has_surrogate,
    list_serializer,
    test_clock_json,
    timer_json,
    timers_json,
)
from .throttles import ApiKeyRateThrottle

_ID = re.compile(r"^[A-Za-z0-9_]{1,32}$")


def _error(description: str) -> OpenApiResponse:
    return OpenApiResponse(ErrorSerializer, description=description)


ERRORS = {
    400: _error("Invalid request: the error's code and message say what (invalid_request, invalid_json …)"),
    401: _error("No key, or not a valid one: invalid_api_key"),
}
NOT_FOUND = {404: _error("No such object for this brand: resource_missing")}
WRONG_MODE = {403: _error("Not in this key's mode: live_mode_only (a test key arms on a test clock), "
                          "test_mode_only (test clocks take a test key)")}


class SafeJSONParser(JSONParser):
    """JSON, with a body nested too deep for the parser, or with a lone surrogate in a string, answered as
    invalid JSON rather than a 500."""

    def parse(self, stream, media_type=None, parser_context=None):
        try:
            data = super().parse(stream, media_type, parser_context)
        except ParseError as exc:
            raise ParseError(
                f"the body is not valid JSON: {str(exc.detail).removeprefix('JSON parse error - ')}"
            ) from None
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

    def dispatch(self, request, *args, **kwargs):
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
        return idempotency.run(request=request, brand=brand, livemode=livemode(brand), key=key,
                               call=lambda: super(BrandAPIView, self).dispatch(request, *args, **kwargs))

    @property
    def brand(self) -> Brand:
        return self.request.auth

    def body(self, serializer_class) -> dict:
        raw = self.request._request
        if raw.body.lstrip()[:1] in (b"{", b"[") and not (self.request.content_type or "").startswith(
                "application/json"):
            # Read as a form it would be "field required": say what is wrong instead.
            raise KeepingTimeError("the body is JSON: send it with Content-Type: application/json",
                                   code="unsupported_media_type", status=415)
        s = serializer_class(data=self.request.data)
        s.is_valid(raise_exception=True)
        return s.validated_data

    def query(self, serializer_class) -> dict:
        # A plain dict, not the QueryDict: DRF reads an empty value in a QueryDict as absent, whatever the
        # field allows, so ?status= would list everything while the schema says it is no status.
        s = serializer_class(data=self.request.query_params.dict())
        s.is_valid(raise_exception=True)
        return s.validated_data


# -- lookups, always within the brand and its key's mode ------------------------------------------------
def _missing(what: str, object_id: str) -> NotFound:
    return NotFound(f"no {what} {object_id!r}")


def owned(qs: QuerySet, brand: Brand) -> QuerySet:
    """The caller's rows of ``qs``: the brand's, in its key's mode. A live key's are the brand's live clock's
    (domain live_<brand id>); a test key's are the test clocks' (domain a test clock id), and the test clocks."""
    qs = qs.filter(brand=brand)
    if qs.model is TestClock:
        return qs.none() if livemode(brand) else qs
    live = live_domain(brand.id)
    return qs.filter(domain=live) if livemode(brand) else qs.exclude(domain=live)


def get_owned(brand: Brand, qs: QuerySet, object_id: str, what: str, *, field: str = "pk"):
    """One of the caller's objects by id (``qs`` narrowed to ``owned``), or 404 as if it did not exist: another
    brand's or another mode's alike. An id of the wrong shape never reaches the database."""
    found = owned(qs, brand).filter(**{field: object_id}).first() if _ID.match(object_id) else None
    if found is None:
        raise _missing(what, object_id)
    return found


def get_timer(brand: Brand, timer_id: str) -> Timer:
    return get_owned(brand, Timer.objects.all(), timer_id, "timer")


def get_test_clock(brand: Brand, clock_id: str, *, param: str | None = None) -> TestClock:
    """One of the brand's test clocks (not deleted), or ``default``, its default one; a live key has none."""
    try:
        if not _ID.match(clock_id) or livemode(brand):
            raise _missing("test clock", clock_id)
        if clock_id == test_clocks.DEFAULT_TEST_CLOCK:
            return test_clocks.test_clock_default(brand=brand)
        return test_clocks.test_clock_get(clock_id=clock_id, brand=brand)
    except NotFound as exc:
        exc.param = param
        raise


def get_event(brand: Brand, event_id: str) -> Event:
    return get_owned(brand, Event.objects.all(), event_id, "event", field="id")


def domain_of(brand: Brand, test_clock: str | None) -> str:
    """The clock domain a request reads: the live clock, or one of the brand's test clocks (a live key
    names none). Whether the caller's mode may read it is ``owned``'s to say."""
    if not test_clock:
        return live_domain(brand.id)
    return get_test_clock(brand, test_clock, param="test_clock").id


def arm_domain_of(brand: Brand, test_clock: str | None) -> str:
    """The clock domain a request creates on: as ``domain_of``, but a test key cannot create on the live
    clock (Stripe's test keys never make live objects, and here every test object lives on a test clock)."""
    domain = domain_of(brand, test_clock)
    if is_live(domain) and not livemode(brand):
        err = KeepingTimeError("a test key (sk_test_…) creates on a test clock only: pass test_clock (tc_…); "
                               "the live clock takes a live key (sk_live_…)", code="live_mode_only",
                               status=403)  # well formed, but not for this key's mode: a permission
        err.param = "test_clock"
        raise err
    return domain


# -- Stripe-style lists --------------------------------------------------------------------------------
def _after(order: tuple[str, ...], row) -> Q:
    """Keyset: the rows after ``row`` in ``order`` (every field non-null, the last one unique)."""
    q, equal = Q(), {}
    for field in order:
        value = getattr(row, field)
        q |= Q(**equal, **{f"{field}__gt": value})
        equal[field] = value
    return q


def page(qs: QuerySet, *, scope: QuerySet, order: tuple[str, ...], lookup: str, params: dict, url: str,
         render, what: str) -> dict:
    """One page of ``qs`` in ``order``, after the object ``starting_after`` names (found within ``scope``)."""
    limit = params["limit"]
    after = params.get("starting_after")
    if after:
        cursor = scope.filter(**{lookup: after}).first() if _ID.match(after) else None
        if cursor is None:
            # A 404 as for any id that names nothing (test_clock=tc_nope): the request is well formed.
            err = NotFound(f"starting_after: no {what} {after!r}")
            err.param = "starting_after"
            raise err
        qs = qs.filter(_after(order, cursor))
    rows = list(qs.order_by(*order)[: limit + 1])
    listed = {"object": "list", "data": render(rows[:limit]), "has_more": len(rows) > limit, "url": url}
    has_domain = any(f.name == "domain" for f in qs.model._meta.get_fields())
    if not rows and not after and not params.get("test_clock") and has_domain:
        # Say where the objects are: a demo's live on a test clock, and a list without test_clock is the live
        # clock's (as Stripe's lists leave test-clock objects out unless asked).
        held = list(scope.exclude(domain__startswith=LIVE_PREFIX).values_list("domain").annotate(n=Count("pk")).order_by("domain")[:5])
        if held:
            where = ", ".join(f"{domain} ({n})" for domain, n in held)
            listed["note"] = (f"no {what}s on the live clock; test clocks hold some: {where}. "
                              f"Pass test_clock=tc_… to list them.")
    return listed


# -- timers ---------------------------------------------------------------------------------------------
TIMER_ORDER = ("armed_at", "id")


def timers_page(brand: Brand, params: dict) -> dict:
    """GET /timers' page for validated query ``params`` (TimerListQuerySerializer): the view's and the MCP tool's."""
    scope = owned(Timer.objects.all(), brand)
    domain = domain_of(brand, params.get("test_clock"))
    qs = scope.filter(domain=domain)
    if params.get("on"):
        qs = qs.filter(owner_filter(domain, params["on"]))
    if params.get("status"):
        qs = qs.filter(status=params["status"])
    return page(qs, scope=scope, order=TIMER_ORDER, lookup="pk", params=params, url="/timers", render=timers_json,
                what="timer")


def events_page(brand: Brand, params: dict) -> dict:
    """GET /events' page for validated query ``params`` (EventListQuerySerializer): the view's and the MCP tool's."""
    scope = owned(Event.objects.all(), brand)
    qs = scope
    if params.get("test_clock"):
        qs = qs.filter(domain=domain_of(brand, params["test_clock"]))
    kind = params.get("type")
    if kind:
        qs = qs.filter(type__startswith=kind[:-1]) if kind.endswith("*") else qs.filter(type=kind)
    return page(qs, scope=scope, order=("seq",), lookup="id", params=params, url="/events",
                render=lambda rows: [event_json(e) for e in rows], what="event")


class TimerListView(BrandAPIView):
    @extend_schema(
        operation_id="timers_list", tags=["timers"], parameters=[TimerListQuerySerializer],
        summary="List timers",
        description="The live clock's timers, or a test clock's, in the order they were armed. `on` is the "
                    "owner exactly, or a clock's occurrences (`on=clk_8Tx1` lists `clk_8Tx1#US`…).",
        responses={200: list_serializer("TimerList", TimerSerializer), **ERRORS, **NOT_FOUND},
    )
    def get(self, request):
        return Response(timers_page(self.brand, self.query(TimerListQuerySerializer)))

    @extend_schema(
        operation_id="timers_arm", tags=["timers"], request=TimerCreateSerializer, summary="Arm a timer",
        description="Arms a timer under its key on the live clock (a live key) or a test clock (a test key); "
                    "it fires on the domain's next tick. Errors: invalid_key, unknown_handler, live_mode_only "
                    "(403: a test key without test_clock), timer_exists (409).",
        responses={201: TimerSerializer, **ERRORS, **NOT_FOUND, **WRONG_MODE,
                   409: _error("A timer with this key is already armed on the domain: timer_exists")},
    )
    def post(self, request):
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
    def get(self, request, timer_id: str):
        return Response(timer_json(get_timer(self.brand, timer_id)))


class TimerWakeView(BrandAPIView):
    @extend_schema(
        operation_id="timers_wake", tags=["timers"], request=None, summary="Wake a timer",
        description="A wake delivered outside the tick. A fired timer answers replayed: true with its first "
                    "commit and counts the wake; any other timer answers replayed: false.",
        responses={200: WakeSerializer, 401: ERRORS[401], **NOT_FOUND},
    )
    def post(self, request, timer_id: str):
        return Response(arming.timer_wake(timer=get_timer(self.brand, timer_id)))


# -- test clocks ------------------------------------------------------------------------------------------
CLOCK_ORDER = ("created_at", "id")


class TestClockListView(BrandAPIView):
    @extend_schema(operation_id="test_clocks_list", tags=["test_clocks"], parameters=[ListQuerySerializer],
                   summary="List test clocks",
                   responses={200: list_serializer("TestClockList", TestClockSerializer), **ERRORS, **NOT_FOUND})
    def get(self, request):
        params = self.query(ListQuerySerializer)
        scope = owned(TestClock.objects.all(), self.brand)
        qs = scope.exclude(status__in=TestClock.GONE)
        return Response(page(qs, scope=scope, order=CLOCK_ORDER, lookup="pk", params=params,
                             url="/test_clocks", render=lambda rows: [test_clock_json(c) for c in rows], what="test clock"))

    @extend_schema(operation_id="test_clocks_create", tags=["test_clocks"], request=TestClockCreateSerializer,
                   summary="Create a test clock",
                   description="A test key only: a live key is refused with test_mode_only (403).",
                   responses={201: TestClockSerializer, **ERRORS, **WRONG_MODE,
                              409: _error("Another test clock holds the seed: test_clock_seed_taken")})
    def post(self, request):
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
    def get(self, request, clock_id: str):
        return Response(test_clock_json(get_test_clock(self.brand, clock_id)))

    @extend_schema(operation_id="test_clocks_delete", tags=["test_clocks"], summary="Delete a test clock",
                   description="Voids everything on the clock: its armed and held timers are superseded "
                               "by test_clock.deleted.",
                   responses={200: DeletedTestClockSerializer, 401: ERRORS[401], **NOT_FOUND})
    def delete(self, request, clock_id: str):
        clock = test_clocks.test_clock_delete(clock=get_test_clock(self.brand, clock_id))
        return Response({"id": clock.id, "object": "test_clock", "deleted": True})


class TestClockAdvanceView(BrandAPIView):
    @extend_schema(
        operation_id="test_clocks_advance", tags=["test_clocks"], request=TestClockAdvanceSerializer,
        summary="Advance a test clock",
        description="Answers 202 advancing; the worker fires every timer owed by `to`, then records "
                    "test_clock.ready. A clock moves only forward.",
        responses={202: TestClockSerializer, **ERRORS, **NOT_FOUND,
                   409: _error("test_clock_backward (with the call that creates a clock there) or "
                               "test_clock_advancing")},
    )
    def post(self, request, clock_id: str):
        clock = get_test_clock(self.brand, clock_id)
        body = self.body(TestClockAdvanceSerializer)
        to = body.get("to")
        if to is None:  # a span, as `tick 1y` takes it; one that lands past 9999 is invalid_span, as there
            try:
                to = after_span(clock.frozen_time, body["span"], text=request.data["span"])
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
    def get(self, request):
        return Response(events_page(self.brand, self.query(EventListQuerySerializer)))


class EventDetailView(BrandAPIView):
    @extend_schema(operation_id="events_retrieve", tags=["events"], summary="Retrieve an event",
                   responses={200: EventSerializer, 401: ERRORS[401], **NOT_FOUND})
    def get(self, request, event_id: str):
        return Response(event_json(get_event(self.brand, event_id)))
