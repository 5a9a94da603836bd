"""People's time over HTTP: a job's steps (take, extend, release, done, answer), grants, the brand's policy
values, standby windows, and the calendar controls a user reaches (postpone a date, re-run a due).

Each view parses, calls the service function with a DirectArmer on the object's own clock domain inside
``through_the_gate`` (a refusal such as needs_grant is a 409 with its code, and nothing is kept), and renders.
"""

from __future__ import annotations

from datetime import timedelta

from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.response import Response

from calendars.brand_calendars import calendar_postpone
from calendars.clocks import clock_inputs_changed
from timers.api.inputs import StrictCharField, StrictIntegerField, TextField
from timers.api.openapi import ERRORS, NOT_FOUND, WRONG_MODE
from timers.api.views import BrandAPIView, SafeJSONParser
from timers.armer import DirectArmer
from timers.errors import KeepingTimeError
from timers.selectors import arm_domain_of, get_owned
from timers.timeutil import iso_z

from . import registry
from .acts import ask_answer, grant_give, step_done
from .api_json import clock_json, render_job
from .api_schemas import CONFLICT, GATE, PolicySerializer
from .declare import ServiceError
from .models import Job, Task, Window
from .outside_writes import through_the_gate
from .policies import policy_set
from .selectors import get_clock, get_item, get_job
from .tasks import task_extend, task_release, task_take
from .windows import window_close, window_open

STEP_ACTS = ("take", "extend", "release", "done", "answer")


class StepActSerializer(serializers.Serializer):
    member = StrictCharField(required=False, allow_blank=True, max_length=150, default="",
                             help_text="The member acting (take, extend, release, done on a pool's step)")
    party = StrictCharField(required=False, allow_blank=True, max_length=200, default="",
                            help_text="Who answered (answer)")


def task_json(task: Task | None) -> dict | None:
    if task is None:
        return None
    return {"id": task.id, "object": "task", "step": task.step, "pool": task.pool, "status": task.status,
            "member": task.member.get_username() if task.member else None, "hold_until": iso_z(task.hold_until),
            "extended": task.extended, "due_at": iso_z(task.due_at)}


class JobStepActView(BrandAPIView):
    parser_classes = [SafeJSONParser]

    @extend_schema(
        operation_id="jobs_steps_act", tags=["jobs"], request=StepActSerializer, summary="Act on a job's step",
        description="`take` (a member of the step's pool takes its Task for the pool's hold), `extend` (once: a "
                    "second is refused hold_extended), `release`, `done` (a step that needs a grant is refused "
                    "needs_grant unless one is active), `answer` (the party answered its link). Errors: "
                    "step_not_current, task_not_open, task_not_taken (409), not_in_pool, task_not_yours (403), "
                    "unknown_step (404).",
        responses={200: dict, **ERRORS, **NOT_FOUND, **GATE},
    )
    def post(self, request, job_id: str, step: str, act: str):
        job = get_job(self.brand, job_id)
        body = self.body(StepActSerializer)
        if act not in STEP_ACTS:
            raise KeepingTimeError(f"a step's acts are {', '.join(STEP_ACTS)}; not {act!r}", code="unknown_act",
                                   status=404)
        armer = DirectArmer(brand=self.brand, domain=job.domain)
        with through_the_gate():
            job = Job.objects.select_for_update().get(pk=job.pk)  # one move of a job's steps at a time
            if act in ("take", "extend", "release"):
                if job.step != step:
                    raise KeepingTimeError(f"{job.id} is at {job.step or 'no step'}, not {step}",
                                           code="step_not_current", status=409)
                task = Task.objects.select_related("job", "member").filter(job=job, entry=job.step_entry).first()
                if task is None:
                    raise KeepingTimeError(f"{step} is not a pool's step: it has no Task", code="no_task", status=409)
                if not body["member"]:
                    raise KeepingTimeError("member: who takes, extends or releases the Task", code="invalid_input")
                {"take": task_take, "extend": task_extend, "release": task_release}[act](
                    armer=armer, task=task, member=body["member"])
            elif act == "done":
                step_done(armer=armer, job=job, step=step, member=body["member"], by=body["member"])
            else:
                ask_answer(armer=armer, job=job, step=step, party=body["party"])
        job.refresh_from_db()
        task = Task.objects.select_related("member").filter(job=job).order_by("-entry").first()
        return Response({**render_job(job), "task": task_json(task)})


class GrantSerializer(serializers.Serializer):
    scope = StrictCharField(max_length=40, help_text="One of the Service's scopes")


class JobGrantView(BrandAPIView):
    parser_classes = [SafeJSONParser]

    @extend_schema(
        operation_id="jobs_grants_create", tags=["jobs"], request=GrantSerializer, summary="Grant a scope",
        description="The party grants the scope for its term (scope.<g>.for); when the term ends, a step that "
                    "needs it is refused needs_grant and the party is asked again. Errors: grant_active (409), "
                    "unknown_scope (404).",
        responses={200: dict, **ERRORS, **NOT_FOUND, **CONFLICT},
    )
    def post(self, request, job_id: str):
        job = get_job(self.brand, job_id)
        body = self.body(GrantSerializer)
        with through_the_gate():
            grant = grant_give(armer=DirectArmer(brand=self.brand, domain=job.domain), job=job, scope=body["scope"])
        return Response({"id": grant.id, "object": "grant", "job": job.id, "scope": grant.scope,
                         "party": grant.party, "status": grant.status, "granted_at": iso_z(grant.granted_at),
                         "ends_at": iso_z(grant.ends_at)})


class PolicySetView(BrandAPIView):
    parser_classes = [SafeJSONParser]

    @extend_schema(
        operation_id="policies_set", tags=["jobs"], request=PolicySerializer, summary="Set a policy value",
        description="policy.set: the brand's value (stall_days) for a Service. Every open job's silent timer that "
                    "reads it is superseded (by policy.set) and re-armed from the job's last activity with the new "
                    "span; one whose new time has passed fires at once. Errors: unknown_policy (404), "
                    "invalid_policy_value.",
        responses={200: dict, **ERRORS, **NOT_FOUND, **WRONG_MODE},
    )
    def post(self, request):
        body = self.body(PolicySerializer)
        domain = arm_domain_of(self.brand, body["test_clock"] or None)
        try:
            registry.get(body["service"])
        except ServiceError as exc:
            raise KeepingTimeError(str(exc), code="unknown_service", status=404) from None
        with through_the_gate():
            armed = policy_set(armer=DirectArmer(brand=self.brand, domain=domain), service=body["service"],
                               name=body["name"], value=body["value"])
        return Response({"object": "policy", "service": body["service"], "name": body["name"],
                         "value": body["value"], "rearmed": armed})


class WindowSerializer(serializers.Serializer):
    member = StrictCharField(max_length=150)
    hours = StrictIntegerField(min_value=1, max_value=24 * 14)
    test_clock = StrictCharField(required=False, allow_blank=True, max_length=32, default="")


def window_json(win: Window) -> dict:
    return {"id": win.id, "object": "window", "member": win.member.get_username(), "status": win.status,
            "opened_at": iso_z(win.opened_at), "closes_at": iso_z(win.closes_at), "closed_at": iso_z(win.closed_at)}


class WindowOpenView(BrandAPIView):
    parser_classes = [SafeJSONParser]

    @extend_schema(operation_id="windows_open", tags=["jobs"], request=WindowSerializer,
                   summary="Open a member's standby window",
                   description="Closed at its end by a timer (place 7), or by the member. Errors: window_open (409).",
                   responses={200: dict, **ERRORS, **NOT_FOUND, **CONFLICT, **WRONG_MODE})
    def post(self, request):
        body = self.body(WindowSerializer)
        domain = arm_domain_of(self.brand, body["test_clock"] or None)
        with through_the_gate():
            win = window_open(armer=DirectArmer(brand=self.brand, domain=domain), member=body["member"],
                              span=timedelta(hours=body["hours"]), brand_id=self.brand.id)
        return Response(window_json(win))


class WindowCloseView(BrandAPIView):
    @extend_schema(operation_id="windows_close", tags=["jobs"], request=None, summary="Close a standby window",
                   responses={200: dict, **ERRORS, **NOT_FOUND, **CONFLICT})
    def post(self, request, window_id: str):
        win = get_owned(self.brand, Window.objects.select_related("member"), window_id, "window")
        with through_the_gate():
            window_close(armer=DirectArmer(brand=self.brand, domain=win.domain), window=win)
        return Response(window_json(win))


class PostponeSerializer(serializers.Serializer):
    to = serializers.DateField(help_text="The new civil date, YYYY-MM-DD")
    notice = TextField(max_length=200, help_text="The notice that postpones it: IR-2028-41 …")


class ClockPostponeView(BrandAPIView):
    parser_classes = [SafeJSONParser]

    @extend_schema(operation_id="clocks_items_postpone", tags=["clocks"], request=PostponeSerializer,
                   summary="Postpone a date (calendar.postpone)",
                   description="A postponement notice moves the date (hard dates too), which re-arms as clock.moved "
                               "with by calendar.postpone; a deadline written before it follows.",
                   responses={200: dict, **ERRORS, **NOT_FOUND})
    def post(self, request, clock_id: str, item: str):
        clock = get_clock(self.brand, clock_id)
        it = get_item(clock, item)
        body = self.body(PostponeSerializer)
        with through_the_gate():
            calendar_postpone(calendar=clock.subject.calendar, items=[it], to=body["to"], notice=body["notice"])
        return Response(clock_json(clock))


class ClockInputsSerializer(serializers.Serializer):
    inputs = serializers.DictField(help_text="What the due function reads, merged into the clock's")


class ClockInputsView(BrandAPIView):
    parser_classes = [SafeJSONParser]

    @extend_schema(operation_id="clocks_inputs", tags=["clocks"], request=ClockInputsSerializer,
                   summary="A commit changed what a due reads",
                   description="The due function runs again; a new answer is clock.moved {by: 'due'}.",
                   responses={200: dict, **ERRORS, **NOT_FOUND})
    def post(self, request, clock_id: str):
        clock = get_clock(self.brand, clock_id)
        body = self.body(ClockInputsSerializer)
        with through_the_gate():
            clock_inputs_changed(armer=DirectArmer(brand=self.brand, domain=clock.domain), clock=clock,
                                 inputs=body["inputs"])
        return Response(clock_json(clock))

