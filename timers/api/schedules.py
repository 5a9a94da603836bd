"""Schedules over HTTP: ``POST/GET /schedules``, ``GET /schedules/<id>``, ``POST /schedules/<id>`` (update),
``DELETE /schedules/<id>``, ``POST /schedules/<id>/pause {pause_note}``, ``…/resume``, ``…/trigger``,
``…/backfill``. Views parse, call timers/schedules.py and timers/schedule_changes.py, render.

The body's shape is checked first (400), then the clock domain (404 for a test clock that is not the caller's,
403 across modes), then what only the runtime can read (400 with its code: invalid_spec, invalid_zone,
invalid_target, invalid_overlap, invalid_catchup_window, invalid_buffer_limit); nothing is written on a refusal.
The HTTP target's signing secret (``whsec_…``) is in the create response only.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from django.db import transaction
from drf_spectacular.extensions import OpenApiSerializerFieldExtension
from drf_spectacular.utils import extend_schema, inline_serializer
from rest_framework import serializers
from rest_framework.response import Response

from .. import schedule_bounds, schedule_changes, schedule_spec, schedule_targets, schedules
from ..models import OVERLAPS, Brand, Schedule, ScheduleRun, ScheduleTick
from ..selectors import arm_domain_of, get_schedule, schedule_read, schedules_page
from . import idempotency
from .inputs import (
    InstantField,
    ListQuerySerializer,
    StrictBooleanField,
    StrictCharField,
    StrictIntegerField,
    StrictRegexField,
    TextField,
    ZoneField,
    plain_json,
    query_field,
)
from .openapi import ERRORS, NOT_FOUND, WRONG_MODE, Choice, const, error_response, list_serializer
from .views import BrandAPIView, SafeJSONParser

if TYPE_CHECKING:
    from drf_spectacular.openapi import AutoSchema
    from drf_spectacular.utils import Direction
    from rest_framework.request import Request


CONFLICT = {409: error_response("Not in a state for this: schedule_paused, schedule_not_paused, schedule_triggered, "
                        "schedule_of_subscription, schedule_deleted")}


# -- what the API takes ---------------------------------------------------------------------------------
# Each field's schema is exactly what the runtime takes (a cron string cronsim reads, a zone tzdata knows, a
# window within 10s to 365d, a target of a registered kind), so a body the schema admits is never refused as
# malformed; only what names nothing (a subject) is a 404. The schemas are read when the schema is built, after
# every app has registered its spec kinds and targets.
class CatchupWindowField(serializers.Field[int | str, Any, int | str, Any]):
    """Seconds, or a span; its range is the runtime's to check (invalid_catchup_window)."""

    def to_internal_value(self, data: Any) -> int | str:
        if isinstance(data, bool) or not isinstance(data, int | str):
            raise serializers.ValidationError("seconds (a whole number) or a span such as 45m")
        return data

    def to_representation(self, value: int | str) -> int | str:
        return value


class PlainObjectField(serializers.DictField):
    def to_internal_value(self, data: Any) -> dict[Any, Any]:
        value = super().to_internal_value(data)
        plain_json(value)
        return value


class SpecField(PlainObjectField):
    pass


class TargetField(PlainObjectField):
    pass


class ScheduleNameField(StrictCharField):
    """A schedule's name (schedules.NAME_PATTERN): anything else is 400 invalid_name."""

    def to_internal_value(self, data: Any) -> str:
        try:
            return schedules.check_schedule_name(data)
        except schedule_targets.ScheduleError as exc:
            raise serializers.ValidationError(exc.message, code="invalid_name") from None


class ScheduleNameSchema(OpenApiSerializerFieldExtension):
    target_class = ScheduleNameField

    def map_serializer_field(self, auto_schema: AutoSchema, direction: Direction) -> dict[str, Any]:
        return {"type": "string", "pattern": f"^(?:{schedules.NAME_PATTERN[1:-1]})?$",
                "description": "A lowercase letter, then up to 62 lowercase letters, digits or hyphens; one "
                               "schedule per name on a clock", "example": "nightly-report"}


class _Schema(OpenApiSerializerFieldExtension):
    if TYPE_CHECKING:
        def schema(self) -> dict[str, Any]: ...  # each subclass's: its field's whole schema

    def map_serializer_field(self, auto_schema: AutoSchema, direction: Direction) -> dict[str, Any]:
        return self.schema()


class CatchupWindowSchema(_Schema):
    target_class = CatchupWindowField

    def schema(self) -> dict[str, Any]:
        return dict(schedules.WINDOW_SCHEMA)


class SpecSchema(_Schema):
    target_class = SpecField

    def schema(self) -> dict[str, Any]:
        return schedule_spec.json_schema()


class TargetSchema(_Schema):
    target_class = TargetField

    def schema(self) -> dict[str, Any]:
        return schedule_targets.targets_schema()


class SkipItemField(StrictCharField):
    """A skip rule: a cron expression or a date; the runtime reads it (invalid_skip)."""


class SkipItemSchema(_Schema):
    target_class = SkipItemField

    def schema(self) -> dict[str, Any]:
        return dict(schedule_bounds.SKIP_ITEM_SCHEMA)


class _BoundsFields(serializers.Serializer[Any]):
    start_at = InstantField(required=False, allow_null=True, help_text="No fire before it; null: none")
    end_at = InstantField(required=False, allow_null=True, help_text="No fire after it (after start_at); null: none")
    remaining_actions = StrictIntegerField(
        required=False, allow_null=True, min_value=0, max_value=schedule_bounds.MAX_REMAINING,
        help_text="Runs its spec may still start (each takes one; at 0 it fires no more); null: no limit")
    calendar = StrictCharField(required=False, allow_null=True, allow_blank=True, max_length=32,
                               help_text="A calendar of yours (cal_…) whose closed days the schedule skips or rolls; "
                                         "null or empty: none")
    closed_days = Choice(choices=list(schedule_bounds.CLOSED_DAYS), component="ScheduleClosedDays", required=False,
                         help_text="On a closed day of its calendar: skip (the default), or fire at the same local "
                                   "time on the next_open or previous_open day (schedule.rolled)")
    jitter = StrictRegexField(schedule_bounds.JITTER_PATTERN, required=False, max_length=10,
                              help_text="Each fire starts up to this much after its time (a span: 30s, 5m), up "
                                        "to the spec's period; the Run keeps its intended time")
    skip = serializers.ListField(
        child=SkipItemField(), required=False, max_length=schedule_bounds.MAX_SKIP,
        help_text="Cron expressions ('0 9 25 12 *') or dates (2027-12-25), read in the schedule's zone, whose "
                  "matching times are not fired (recorded schedule.skipped with the rule)")


class ScheduleCreateSerializer(_BoundsFields):
    test_clock = StrictCharField(required=False, allow_null=True, allow_blank=True, max_length=64,
                                 help_text="Create on this test clock; the live clock (a live key) when absent")
    name = ScheduleNameField(required=False, allow_blank=True, trim_whitespace=False)
    spec = SpecField(help_text='{"cron": "30 2 * * *"}, {"every": "30m", "phase": "5m"} or '
                                      '{"each": "month", "at": "1mo after end", "time": "06:30"}')
    zone = ZoneField(required=False, max_length=64, help_text="An IANA zone; UTC when absent")
    target = TargetField(help_text='{"url": "https://…", "timeout": 10, "retries": 3} or '
                                        '{"service": "…", "subject": "sbj_…", "input": {}}')
    overlap = Choice(choices=list(OVERLAPS), component="ScheduleOverlap", required=False,
                     help_text="When a fire comes while the last Run is open; skip when absent")
    buffer_limit = StrictIntegerField(required=False, min_value=1, max_value=1000)
    catchup_window = CatchupWindowField(required=False, help_text="Missed fires older than this are skipped")
    paused = StrictBooleanField(required=False)
    pause_note = TextField(required=False, allow_blank=True, max_length=200)


class ScheduleUpdateSerializer(_BoundsFields):
    revision = StrictIntegerField(required=False, min_value=1, max_value=2_147_483_647,
                                  help_text="The revision you read: another is 409 schedule_revision_conflict")
    name = ScheduleNameField(required=False, allow_blank=True, trim_whitespace=False)
    spec = SpecField(required=False, help_text="A new spec: the next fire is re-armed; open Runs keep theirs")
    zone = ZoneField(required=False, max_length=64, help_text="An IANA zone")
    target = TargetField(required=False, help_text="The same kind of target (http or service), with new fields")
    overlap = Choice(choices=list(OVERLAPS), component="ScheduleOverlap", required=False)
    buffer_limit = StrictIntegerField(required=False, min_value=1, max_value=1000)
    catchup_window = CatchupWindowField(required=False)
    paused = StrictBooleanField(required=False, help_text="true pauses, false resumes")
    pause_note = TextField(required=False, allow_blank=True, max_length=200)


class ScheduleBackfillSerializer(serializers.Serializer[Any]):
    start = InstantField(help_text="The span's first instant (inclusive)")
    end = InstantField(help_text="The span's last instant (inclusive), at or before now")
    overlap = Choice(choices=list(OVERLAPS), component="ScheduleOverlap", required=False,
                     help_text="The backfill's own policy (allow for allow_all); the schedule's when absent")


class ScheduleBackfillResultSerializer(serializers.Serializer[Any]):
    object = const("schedule_backfill", "ScheduleBackfillObject")
    schedule = serializers.CharField()
    start = serializers.DateTimeField()
    end = serializers.DateTimeField()
    overlap = Choice(choices=list(OVERLAPS), component="ScheduleOverlap")
    fires = serializers.ListField(child=serializers.DateTimeField(), help_text="Instants asked for, in order")
    already_run = serializers.ListField(child=serializers.DateTimeField(), help_text="Instants with a Run already")
    skipped = serializers.ListField(child=serializers.DateTimeField(), help_text="Instants a skip rule leaves out")
    has_more = serializers.BooleanField(help_text="The span has more instants than one call asks for (1000)")
    next_start = serializers.DateTimeField(allow_null=True, help_text="Where the next call begins, if has_more")


class SchedulePauseSerializer(serializers.Serializer[Any]):
    pause_note = TextField(required=False, allow_blank=True, max_length=200, help_text="Why it is paused")


class ScheduleListQuerySerializer(ListQuerySerializer):
    test_clock = query_field("The test clock's schedules; the live clock's when absent")


# -- what it answers ------------------------------------------------------------------------------------
class ScheduleRunSerializer(serializers.Serializer[Any]):
    id = serializers.CharField()
    object = const("schedule_run", "ScheduleRunObject")
    state = Choice(choices=ScheduleRun.State.choices, component="ScheduleRunState")
    scheduled_at = serializers.DateTimeField()
    started_at = serializers.DateTimeField(allow_null=True)
    closed_at = serializers.DateTimeField(allow_null=True)
    ref = serializers.CharField(allow_null=True, help_text="The job, or the HTTP call's submission id")
    outcome = serializers.CharField(allow_null=True, help_text="The Run's own result: the job's end, the answer")


class ScheduleTickSerializer(serializers.Serializer[Any]):
    id = serializers.CharField()
    object = const("schedule_tick", "ScheduleTickObject")
    state = Choice(choices=ScheduleTick.State.choices, component="ScheduleTickState")
    scheduled_at = serializers.DateTimeField()
    fired_at = serializers.DateTimeField()
    settled_at = serializers.DateTimeField(allow_null=True)
    run = ScheduleRunSerializer()


class DeadLetterSerializer(serializers.Serializer[Any]):
    id = serializers.CharField()
    object = const("dead_letter", "DeadLetterObject")
    tick = serializers.CharField()
    at = serializers.DateTimeField()
    status = serializers.IntegerField(allow_null=True)
    error = serializers.CharField()
    payload = serializers.DictField()


class ScheduleSerializer(serializers.Serializer[Any]):
    id = serializers.CharField()
    object = const("schedule", "ScheduleObject")
    name = serializers.CharField(allow_blank=True)
    spec = serializers.DictField()
    zone = serializers.CharField()
    target = serializers.DictField(help_text="kind (http, service, subscription) and its fields; never the secret")
    overlap = Choice(choices=list(OVERLAPS), component="ScheduleOverlap")
    buffer_limit = serializers.IntegerField()
    catchup_window = serializers.IntegerField(help_text="seconds")
    paused = serializers.BooleanField()
    pause_note = serializers.CharField(allow_null=True)
    paused_at = serializers.DateTimeField(allow_null=True)
    revision = serializers.IntegerField()
    test_clock = serializers.CharField(allow_null=True)
    start_at = serializers.DateTimeField(allow_null=True)
    end_at = serializers.DateTimeField(allow_null=True)
    remaining_actions = serializers.IntegerField(allow_null=True)
    skip = serializers.ListField(child=serializers.CharField())
    jitter = serializers.IntegerField(help_text="seconds")
    calendar = serializers.CharField(allow_null=True)
    closed_days = Choice(choices=list(schedule_bounds.CLOSED_DAYS), component="ScheduleClosedDays", allow_null=True)
    deleted = serializers.BooleanField()
    deleted_at = serializers.DateTimeField(allow_null=True)
    ended = serializers.CharField(allow_null=True, help_text="Why it fires no more (deleted, remaining_actions, "
                                                             "end_at), or null")
    next_fire_times = serializers.ListField(child=serializers.DateTimeField())
    last_tick = ScheduleTickSerializer(allow_null=True)
    recent_ticks = ScheduleTickSerializer(many=True)
    dead_letters = DeadLetterSerializer(many=True)
    buffered = serializers.ListField(child=serializers.DateTimeField(), help_text="Fires waiting for the open Run")
    counters = inline_serializer("ScheduleCounters", fields={
        name: serializers.IntegerField() for name in ("fired", "skipped", "dropped", "missed", "dead_lettered",
                                                      "open_runs")})
    created = serializers.DateTimeField()
    secret = serializers.CharField(required=False, help_text="In the create response only: whsec_…")
    shown_once = serializers.ListField(child=serializers.CharField(), required=False,
                                       help_text="On a replay of the create (its Idempotency-Key): the fields the "
                                                 "first answer showed once and this one leaves out (secret)")


def create_schedule_from(brand: Brand, body: dict[str, Any]) -> Schedule:
    """POST /schedules' write for a body ScheduleCreateSerializer checked, with the API's defaults: the clock
    (404, 403 live_mode_only), then what the runtime reads (400); the view's and the MCP tool's."""
    domain = arm_domain_of(brand, body.get("test_clock") or None)
    with transaction.atomic():
        return schedules.schedule_create(
            brand=brand, domain=domain, spec=body["spec"], target=body["target"],
            zone=body.get("zone") or "UTC", name=body.get("name") or "", overlap=body.get("overlap") or "skip",
            buffer_limit=body.get("buffer_limit", 100), catchup_window=body.get("catchup_window"),
            paused=body.get("paused", False), pause_note=body.get("pause_note") or "",
            start_at=body.get("start_at"), end_at=body.get("end_at"),
            remaining_actions=body.get("remaining_actions"), skip=body.get("skip"), jitter=body.get("jitter"),
            calendar=body.get("calendar") or None, closed_days=body.get("closed_days"))


class ScheduleListView(BrandAPIView):
    parser_classes = [SafeJSONParser]  # its body carries objects (spec, target), which a form's flat fields cannot
    @extend_schema(
        operation_id="schedules_list", tags=["schedules"], parameters=[ScheduleListQuerySerializer],
        summary="List schedules",
        description="The live clock's schedules, or a test clock's, in the order they were made; each with its last "
                    "tick and next fire times. A Service's own schedules are listed too (target kind subscription).",
        responses={200: list_serializer("ScheduleList", ScheduleSerializer), **ERRORS, **NOT_FOUND},
    )
    def get(self, request: Request) -> Response:
        return Response(schedules_page(self.brand, self.query(ScheduleListQuerySerializer)))

    @extend_schema(
        operation_id="schedules_create", tags=["schedules"], request=ScheduleCreateSerializer,
        summary="Create a schedule",
        description="Fires on its spec in its zone (a skipped minute at the next that exists, a repeated hour once). "
                    "Errors: invalid_spec, invalid_zone, invalid_target, invalid_overlap, invalid_catchup_window "
                    "(outside 10s to 365d), invalid_buffer_limit, invalid_name, invalid_skip, "
                    "invalid_remaining_actions, invalid_jitter; schedule_name_taken (409: a "
                    "schedule of that name is on the clock); live_mode_only (403: a test key without test_clock).",
        responses={200: ScheduleSerializer, **ERRORS, **NOT_FOUND, **WRONG_MODE,
                   409: error_response("schedule_name_taken: a schedule of that name is on the clock")},
    )
    def post(self, request: Request) -> Response:  # the body's shape (400), the clock (404, 403), then what the runtime reads (400)
        sch = create_schedule_from(self.brand, self.body(ScheduleCreateSerializer))
        out = schedule_read(sch)
        if sch.secret:
            out["secret"] = sch.secret  # shown once: check each call's Keeping-Time-Signature with it
            # A replay under the request's Idempotency-Key leaves it out.
            return idempotency.shown_once(Response(out), "secret")
        return Response(out)


class ScheduleDetailView(BrandAPIView):
    parser_classes = [SafeJSONParser]  # its body carries objects (spec, target)

    @extend_schema(operation_id="schedules_retrieve", tags=["schedules"], summary="Retrieve a schedule",
                   description="Its spec, next fire times, counters, last and recent ticks (each with its Run), "
                               "and dead letters; a deleted one too (deleted: true).",
                   responses={200: ScheduleSerializer, 401: ERRORS[401], **NOT_FOUND})
    def get(self, request: Request, schedule_id: str) -> Response:
        return Response(schedule_read(get_schedule(self.brand, schedule_id)))

    @extend_schema(
        operation_id="schedules_update", tags=["schedules"], request=ScheduleUpdateSerializer,
        summary="Update a schedule",
        description="Changes what is given; each change is a new revision (schedule.updated with what changed). "
                    "A change of spec, zone or bounds re-arms the next fire only: Runs already started keep theirs. "
                    "`revision`, when given, is the one you read. Errors: as the create's; "
                    "schedule_revision_conflict (409: it is at another revision), schedule_deleted (409).",
        responses={200: ScheduleSerializer, **ERRORS, **NOT_FOUND,
                   409: error_response("schedule_revision_conflict, schedule_name_taken, schedule_deleted, "
                                       "schedule_target_kind (a schedule keeps its kind of target), "
                                       "schedule_of_subscription")},
    )
    def post(self, request: Request, schedule_id: str) -> Response:
        sch = get_schedule(self.brand, schedule_id)
        body = self.body(ScheduleUpdateSerializer)
        given = {k: v for k, v in body.items() if k != "revision"}
        schedule_changes.schedule_update(schedule=sch, revision=body.get("revision"), **given)
        return Response(schedule_read(sch))

    @extend_schema(operation_id="schedules_delete", tags=["schedules"], summary="Delete a schedule",
                   description="Nothing fires after it; a Run already open keeps going and settles. It stays "
                               "readable (deleted: true) with its ticks and dead letters; its name is free again.",
                   responses={200: ScheduleSerializer, 401: ERRORS[401], **NOT_FOUND, **CONFLICT})
    def delete(self, request: Request, schedule_id: str) -> Response:
        sch = get_schedule(self.brand, schedule_id)
        schedule_changes.schedule_delete(schedule=sch)
        return Response(schedule_read(sch))


class ScheduleBackfillView(BrandAPIView):
    @extend_schema(
        operation_id="schedules_backfill", tags=["schedules"], request=ScheduleBackfillSerializer,
        summary="Backfill a schedule",
        description="Fires every intended time of its spec in [start, end] that has no Run yet, in order, under "
                    "`overlap` (the schedule's when absent): the live worker starts them at once, a test clock at "
                    "its next advance. An instant that already ran starts nothing (already_run). A span longer "
                    "than catchup_window is allowed; it ends at now at the latest; 1000 instants a call (has_more, "
                    "next_start). Errors: schedule_deleted, schedule_not_buffering (409: a buffer policy on a "
                    "schedule that does not buffer).",
        responses={200: ScheduleBackfillResultSerializer, **ERRORS, **NOT_FOUND, **CONFLICT},
    )
    def post(self, request: Request, schedule_id: str) -> Response:
        sch = get_schedule(self.brand, schedule_id)
        body = self.body(ScheduleBackfillSerializer)
        return Response(schedule_changes.schedule_backfill(schedule=sch, start=body["start"], end=body["end"],
                                                    overlap=body.get("overlap")))


class SchedulePauseView(BrandAPIView):
    @extend_schema(operation_id="schedules_pause", tags=["schedules"], request=SchedulePauseSerializer,
                   summary="Pause a schedule", description="Nothing starts until it resumes; its spec, zone, target "
                   "and revision stay as they are.",
                   responses={200: ScheduleSerializer, **ERRORS, **NOT_FOUND, **CONFLICT})
    def post(self, request: Request, schedule_id: str) -> Response:
        sch = get_schedule(self.brand, schedule_id)
        body = self.body(SchedulePauseSerializer)
        schedules.schedule_pause(schedule=sch, note=body.get("pause_note") or "")
        return Response(schedule_read(sch))


class ScheduleResumeView(BrandAPIView):
    @extend_schema(operation_id="schedules_resume", tags=["schedules"], request=None, summary="Resume a schedule",
                   description="The fires missed while paused start only inside the catch-up window; older ones "
                               "are counted missed.",
                   responses={200: ScheduleSerializer, 401: ERRORS[401], **NOT_FOUND, **CONFLICT})
    def post(self, request: Request, schedule_id: str) -> Response:
        sch = get_schedule(self.brand, schedule_id)
        schedules.schedule_resume(schedule=sch)
        return Response(schedule_read(sch))


class ScheduleTriggerView(BrandAPIView):
    @extend_schema(operation_id="schedules_trigger", tags=["schedules"], request=None, summary="Fire a schedule now",
                   description="A fire now, under the overlap policy: the live worker fires it at once; a test "
                               "clock at its next advance (to its frozen time, or later).",
                   responses={200: ScheduleSerializer, 401: ERRORS[401], **NOT_FOUND, **CONFLICT})
    def post(self, request: Request, schedule_id: str) -> Response:
        sch = get_schedule(self.brand, schedule_id)
        schedules.schedule_trigger(schedule=sch)
        return Response(schedule_read(sch))
