"""What an agent may read and do with a brand's key, each a thin call of the functions the API's views call.

Every tool takes the Brand a secret key authenticated as (``keyed_brand``), with its mode: a test key reads
and acts on test clocks only, a live key on the live clock only, and another brand's or mode's id is the
same ``resource_missing`` the API answers. Input is checked by the API's own serializers, so a bad value is
refused with the code the API would give (``invalid_request`` with its ``param`` …). Errors are raised as
the API raises them; ``agents.server`` turns them into the API's error shape.
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from calendars.acts import clock_acknowledge
from calendars.contacts import contact_create, contact_json
from calendars.entries import subject_calendar as build_subject_calendar
from calendars.models import Contact
from calendars.selectors import calendar_domain, get_subject
from calendars.subject_calendar_json import calendar_json
from calendars.undo import clock_unacknowledge
from services import registry
from services.api_schemas import PolicySerializer
from services.contacts_api import ContactCreateSerializer
from services.declare import ServiceError
from services.outside_writes import through_the_gate
from services.policies import policy_set
from services.selectors import get_clock, get_item
from services.timeline import subject_timeline as build_subject_timeline
from services.timeline_api import SubjectTimelineQuerySerializer, timeline_page
from timers import schedule_changes, schedules, test_clocks
from timers.api.auth import SecretKeyAuthentication
from timers.api.inputs import parse_from
from timers.api.schedules import (
    ScheduleBackfillSerializer,
    ScheduleCreateSerializer,
    ScheduleListQuerySerializer,
    SchedulePauseSerializer,
    ScheduleUpdateSerializer,
    create_schedule_from,
)
from timers.api.serializers import EventListQuerySerializer, TimerListQuerySerializer, timer_json
from timers.api.test_clock_serializers import TestClockAdvanceSerializer, test_clock_json
from timers.armer import DirectArmer
from timers.domains import domain_now, domain_writable
from timers.errors import KeepingTimeError
from timers.ids import brand_domain
from timers.models import Brand
from timers.selectors import (
    arm_domain_of,
    events_page,
    get_schedule,
    get_test_clock,
    get_timer,
    schedule_read,
    schedules_page,
    timers_page,
)
from timers.timeutil import after_span, zone_named


def keyed_brand(secret: str) -> Brand:
    """The brand a secret key opens, carrying the key's mode, as the API's authentication makes it (a revoked
    or unknown key raises the API's AuthenticationFailed: 401 invalid_api_key)."""
    header = f"Bearer {secret}"
    found = SecretKeyAuthentication().authenticate(
        SimpleNamespace(headers={"authorization": header}, META={"HTTP_AUTHORIZATION": header}))
    if found is None:
        raise KeepingTimeError("no API key: pass --key sk_test_… or set KT_API_KEY", code="invalid_api_key",
                               status=401)
    return found[1]


def _valid(serializer_class, data: dict[str, Any]) -> dict[str, Any]:
    s = serializer_class(data=data)
    s.is_valid(raise_exception=True)
    return s.validated_data


def _query(**params: Any) -> dict[str, str]:
    # The list serializers read a query string: the values as a URL would carry them, absent ones left out.
    return {k: str(v) for k, v in params.items() if v is not None}


# -- reads -----------------------------------------------------------------------------------------------
def list_timers(brand: Brand, *, on: str | None = None, status: str | None = None, test_clock: str | None = None,
                limit: int = 10, starting_after: str | None = None) -> dict[str, Any]:
    """GET /timers: the live clock's timers (a live key) or a test clock's (a test key), oldest armed first."""
    return timers_page(brand, _valid(TimerListQuerySerializer, _query(
        on=on, status=status, test_clock=test_clock, limit=limit, starting_after=starting_after)))


def get_timer_json(brand: Brand, *, timer_id: str) -> dict[str, Any]:
    """GET /timers/<id>."""
    return timer_json(get_timer(brand, timer_id))


def subject_calendar(brand: Brand, *, subject_id: str, from_date: str | None = None,
                     test_clock: str | None = None) -> dict[str, Any]:
    """GET /subjects/<id>/calendar: every date the subject keeps from ``from_date`` (today in its zone)."""
    subject = get_subject(brand, subject_id)
    domain = calendar_domain(brand, subject, test_clock)
    start = parse_from(from_date, param="from_date")
    return calendar_json(build_subject_calendar(subject, domain=domain, from_date=start))


def subject_timeline(brand: Brand, *, subject_id: str, test_clock: str | None = None, zone: str | None = None,
                     limit: int = 10, starting_after: str | None = None) -> dict[str, Any]:
    """GET /subjects/<id>/timeline: what happened to the customer, in order, each outside call with its status,
    then what is armed ahead; sentences in people's words, times in ``zone`` (the customer's calendar's)."""
    params = _valid(SubjectTimelineQuerySerializer, _query(test_clock=test_clock, zone=zone, limit=limit,
                                                           starting_after=starting_after))
    subject = get_subject(brand, subject_id)
    domain = calendar_domain(brand, subject, params.get("test_clock"))
    timeline = build_subject_timeline(subject=subject, domain=domain,
                                      zone=zone_named(params["zone"]) if params.get("zone") else None)
    return timeline_page(timeline, params, url=f"/subjects/{subject.id}/timeline")


def list_events(brand: Brand, *, type: str | None = None, test_clock: str | None = None, limit: int = 10,
                starting_after: str | None = None) -> dict[str, Any]:
    """GET /events: the brand's record in its key's mode, oldest first; ``type`` exact or a prefix with *."""
    return events_page(brand, _valid(EventListQuerySerializer, _query(
        type=type, test_clock=test_clock, limit=limit, starting_after=starting_after)))


# -- acts ------------------------------------------------------------------------------------------------
def set_policy(brand: Brand, *, service: str, name: str, value: int, test_clock: str | None = None) -> dict[str, Any]:
    """POST /policies: policy.set, re-arming each open job's silent timer that reads the value."""
    body = _valid(PolicySerializer, {"service": service, "name": name, "value": value,
                                     **({"test_clock": test_clock} if test_clock else {})})
    domain = arm_domain_of(brand, body["test_clock"] or None)
    try:
        registry.get(body["service"])
    except ServiceError as exc:
        raise KeepingTimeError(str(exc), code="unknown_service", status=404) from None
    with through_the_gate():
        armed = policy_set(armer=DirectArmer(brand=brand, domain=domain), service=body["service"], name=body["name"],
                           value=body["value"])
    return {"object": "policy", "service": body["service"], "name": body["name"], "value": body["value"],
            "rearmed": armed}


def advance_test_clock(brand: Brand, *, test_clock: str, to: str | None = None, span: str | None = None,
                       redeliver: bool = False) -> dict[str, Any]:
    """POST /test_clocks/<id>/advance: to an instant, or by a span (1y) from the frozen time; 'advancing' now,
    and the worker fires what is owed, then records test_clock.ready."""
    clock = get_test_clock(brand, test_clock, param="test_clock")
    given = {k: v for k, v in (("to", to), ("span", span)) if v is not None}
    body = _valid(TestClockAdvanceSerializer, {**given, "redeliver": redeliver})
    target = body.get("to")
    if target is None:  # as the view: a span that lands past 9999 is invalid_span, about span
        try:
            target = after_span(clock.frozen_time, body["span"], text=span or "")
        except KeepingTimeError as exc:
            exc.param = "span"
            raise
    clock = test_clocks.test_clock_request_advance(clock=clock, to=target, redeliver=body["redeliver"])
    return test_clock_json(clock)


def acknowledge(brand: Brand, *, clock_id: str, item: str = "-", by: str = "") -> dict[str, Any]:
    """Acknowledge a clock date's ack rung (ack daily 7d): the days still to ask end, clock.acknowledged is
    recorded. ``item`` names the date (US-NY …), ``-`` a clock's single unnamed one."""
    clock = get_clock(brand, clock_id)
    it = get_item(clock, item)
    with through_the_gate():
        ended = clock_acknowledge(armer=DirectArmer(brand=brand, domain=clock.domain), item=it,
                                  by=by or clock.answers_for or "an agent")
    return {"object": "acknowledgement", "clock": clock.id, "item": item, "asks_ended": ended}


def unacknowledge(brand: Brand, *, clock_id: str, item: str = "-", by: str = "") -> dict[str, Any]:
    """Take back an acknowledgement until the date passes: the date asks again from its next day, its reminders
    ahead stay armed, and clock.unacknowledged is recorded (409 not_acknowledged, undo_too_late)."""
    clock = get_clock(brand, clock_id)
    it = get_item(clock, item)
    with through_the_gate():
        clock_unacknowledge(armer=DirectArmer(brand=brand, domain=clock.domain), item=it,
                            by=by or clock.answers_for or "an agent")
    return {"object": "acknowledgement", "clock": clock.id, "item": item, "taken_back": True}


# -- a customer's people ---------------------------------------------------------------------------------
def list_contacts(brand: Brand, *, subject_id: str) -> dict[str, Any]:
    """The customer's contacts, primary first (as GET /subjects/<id>/contacts)."""
    subject = get_subject(brand, subject_id)
    rows = subject.contacts.order_by(*Contact.ORDER)
    return {"object": "list", "data": [contact_json(c) for c in rows], "has_more": False}


def add_contact(brand: Brand, *, subject_id: str, name: str, email: str, role: str | None = None,
                phone: str | None = None, zone: str | None = None, primary: bool | None = None) -> dict[str, Any]:
    """A contact of the customer's (as POST /subjects/<id>/contacts): the dates their role names move to them, on
    the record."""
    subject = get_subject(brand, subject_id)
    values = _valid(ContactCreateSerializer, {k: v for k, v in {"name": name, "email": email, "role": role,
                                                                "phone": phone, "zone": zone,
                                                                "primary": primary}.items() if v is not None})
    domain_writable(domain=brand_domain(subject.domain, subject.brand_id))
    return contact_json(contact_create(subject=subject, values=values, now=domain_now(domain=subject.domain)))


# -- schedules -------------------------------------------------------------------------------------------
def list_schedules(brand: Brand, *, test_clock: str | None = None, limit: int = 10,
                   starting_after: str | None = None) -> dict[str, Any]:
    """GET /schedules: a clock's schedules not deleted, in the order they were made, each with its next fire
    times and last tick."""
    return schedules_page(brand, _valid(ScheduleListQuerySerializer, _query(
        test_clock=test_clock, limit=limit, starting_after=starting_after)))


def get_schedule_json(brand: Brand, *, schedule_id: str) -> dict[str, Any]:
    """GET /schedules/<id>: a deleted one too (deleted: true)."""
    return schedule_read(get_schedule(brand, schedule_id))


def _given(**fields: Any) -> dict[str, Any]:
    # A body as the API would take it: an argument left out is a field not sent.
    return {k: v for k, v in fields.items() if v is not None}


def _cleared(body: dict[str, Any], clear: list[str] | None, *, fields: frozenset[str]) -> dict[str, Any]:
    """``body`` with each field ``clear`` names sent as null, as the API's {"end_at": null} clears it: a tool's
    argument left out cannot say null. A name that is no field, or is given a value too, is refused."""
    for name in clear or []:
        if name not in fields or name in body:
            what = "is given a value too" if name in body else f"is none of {', '.join(sorted(fields))}"
            err = KeepingTimeError(f"clear: {str(name)[:40]!r} {what}", code="invalid_request")
            err.param = "clear"
            raise err
        body = {**body, name: None}
    return body


# The fields a null clears (no bound, no limit, no calendar): the serializer refuses null for any other.
CLEARABLE = frozenset({"start_at", "end_at", "remaining_actions", "calendar"})


def create_schedule(brand: Brand, **fields: Any) -> dict[str, Any]:
    """POST /schedules: made on a test clock (a test key) or the live clock (a live key); the HTTP target's
    signing secret is in this answer only."""
    body = _valid(ScheduleCreateSerializer, _given(**fields))
    with through_the_gate():
        sch = create_schedule_from(brand, body)
    out = schedule_read(sch)
    if sch.secret:
        out["secret"] = sch.secret  # shown once, as the API's create shows it
    return out


def update_schedule(brand: Brand, *, schedule_id: str, clear: list[str] | None = None,
                    **fields: Any) -> dict[str, Any]:
    """POST /schedules/<id>: what is given changes, a new revision; ``revision`` is the one the caller read."""
    sch = get_schedule(brand, schedule_id)
    body = _valid(ScheduleUpdateSerializer, _cleared(_given(**fields), clear, fields=CLEARABLE))
    given = {k: v for k, v in body.items() if k != "revision"}
    with through_the_gate():
        schedule_changes.schedule_update(schedule=sch, revision=body.get("revision"), **given)
    return schedule_read(sch)


def pause_schedule(brand: Brand, *, schedule_id: str, pause_note: str | None = None) -> dict[str, Any]:
    """POST /schedules/<id>/pause: nothing starts until it resumes."""
    sch = get_schedule(brand, schedule_id)
    body = _valid(SchedulePauseSerializer, _given(pause_note=pause_note))
    with through_the_gate():
        schedules.schedule_pause(schedule=sch, note=body.get("pause_note") or "")
    return schedule_read(sch)


def resume_schedule(brand: Brand, *, schedule_id: str) -> dict[str, Any]:
    """POST /schedules/<id>/resume: the fires missed while paused start only inside the catch-up window."""
    sch = get_schedule(brand, schedule_id)
    with through_the_gate():
        schedules.schedule_resume(schedule=sch)
    return schedule_read(sch)


def trigger_schedule(brand: Brand, *, schedule_id: str) -> dict[str, Any]:
    """POST /schedules/<id>/trigger: a fire now under the schedule's overlap policy (a test clock's at its next
    advance)."""
    sch = get_schedule(brand, schedule_id)
    with through_the_gate():
        schedules.schedule_trigger(schedule=sch)
    return schedule_read(sch)


def backfill_schedule(brand: Brand, *, schedule_id: str, start: str, end: str,
                      overlap: str | None = None) -> dict[str, Any]:
    """POST /schedules/<id>/backfill: each intended time in [start, end] with no Run yet starts, in order."""
    sch = get_schedule(brand, schedule_id)
    body = _valid(ScheduleBackfillSerializer, _given(start=start, end=end, overlap=overlap))
    with through_the_gate():
        return schedule_changes.schedule_backfill(schedule=sch, start=body["start"], end=body["end"],
                                                  overlap=body.get("overlap"))


def delete_schedule(brand: Brand, *, schedule_id: str) -> dict[str, Any]:
    """DELETE /schedules/<id>: nothing fires after it; it stays readable (deleted: true)."""
    sch = get_schedule(brand, schedule_id)
    with through_the_gate():
        schedule_changes.schedule_delete(schedule=sch)
    return schedule_read(sch)
