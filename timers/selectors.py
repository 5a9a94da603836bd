"""The reads the API's views, the MCP tools and the console share: a brand's own objects in its key's mode,
one by id or a page of them.

The caller's brand is the Brand a secret key authenticated as (``timers.api.auth``); an id of another brand's
is a 404, never a leak. Modes are kept apart as Stripe keeps them: a live key (``sk_live_…``) sees the live
clock's objects only, a test key (``sk_test_…``) the test clocks and their objects only; an id of the other
mode's is the same 404. Lists are Stripe's shape, {"object": "list", "data", "has_more", "url"}, paged with
``limit`` and ``starting_after`` (an object id) over a stable order.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import Any

from django.db.models import Count, Model, Q, QuerySet

from . import schedules, test_clocks
from .api.auth import livemode
from .api.serializers import timers_json
from .errors import KeepingTimeError, NotFound
from .models import LIVE_PREFIX, Brand, Event, Schedule, TestClock, Timer, is_live, live_domain
from .owners import owner_filter
from .record import event_json
from .rows import M

# What an object id may be: a wrong shape never reaches the database.
_ID = re.compile(r"^[A-Za-z0-9_]{1,32}$")


# -- lookups, always within the brand and its key's mode ------------------------------------------------
def _missing(what: str, object_id: str) -> NotFound:
    return NotFound(f"no {what} {object_id!r}")


def owned(qs: QuerySet[M], brand: Brand) -> QuerySet[M]:
    """The caller's rows of ``qs``: the brand's, in its key's mode. A live key's are the brand's live clock's
    (domain live_<brand id>); a test key's are the test clocks' (domain a test clock id), and the test clocks."""
    qs = qs.filter(brand=brand)
    if qs.model is TestClock:
        return qs.none() if livemode(brand) else qs
    live = live_domain(brand.id)
    return qs.filter(domain=live) if livemode(brand) else qs.exclude(domain=live)


def get_owned(brand: Brand, qs: QuerySet[M], object_id: str, what: str, *, field: str = "pk") -> M:
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


def get_schedule(brand: Brand, schedule_id: str) -> Schedule:
    """One of the caller's schedules, a deleted one too (it stays readable)."""
    return get_owned(brand, Schedule.objects.all(), schedule_id, "schedule")


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
def _after(order: tuple[str, ...], row: Model) -> Q:
    """Keyset: the rows after ``row`` in ``order`` (every field non-null, the last one unique)."""
    q = Q()
    equal: dict[str, Any] = {}
    for field in order:
        value = getattr(row, field)
        q |= Q(**equal, **{f"{field}__gt": value})
        equal[field] = value
    return q


def page(qs: QuerySet[M], *, scope: QuerySet[M], order: tuple[str, ...], lookup: str, params: dict[str, Any],
         url: str, render: Callable[[list[M]], Sequence[Any]], what: str) -> dict[str, Any]:
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


def timers_page(brand: Brand, params: dict[str, Any]) -> dict[str, Any]:
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


def events_page(brand: Brand, params: dict[str, Any]) -> dict[str, Any]:
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


# -- schedules ------------------------------------------------------------------------------------------
SCHEDULE_ORDER = ("created_at", "id")


def schedules_page(brand: Brand, params: dict[str, Any]) -> dict[str, Any]:
    """GET /schedules' page for validated query ``params`` (ScheduleListQuerySerializer): a clock's schedules not
    deleted, in the order they were made, each with its last tick; the view's and the MCP tool's."""
    scope = owned(Schedule.objects.all(), brand)
    qs = scope.filter(domain=domain_of(brand, params.get("test_clock")), deleted_at__isnull=True)
    return page(qs, scope=scope, order=SCHEDULE_ORDER, lookup="pk", params=params, url="/schedules",
                render=lambda rows: [schedules.schedule_json(s, recent=1) for s in rows], what="schedule")


def schedule_read(sch: Schedule) -> dict[str, Any]:
    """GET /schedules/<id>'s answer, and each act's: the row as it is now (an act may have changed it)."""
    sch.refresh_from_db()
    return schedules.schedule_json(sch)
