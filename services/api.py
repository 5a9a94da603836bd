"""The domain over HTTP: subscriptions, jobs and clocks, each with the next timer it carries.

Every read is the caller's brand's (``request.auth``) in its key's mode (``timers.api.views.owned``: a live
key the live clock's objects, a test key the test clocks'); another brand's or another mode's id is a 404,
never a leak. Lists are Stripe's shape, paged with ``limit`` and ``starting_after``, the live clock's or a test clock's
(``test_clock``). Writes call the service functions with a DirectArmer on the object's own clock domain,
in one transaction: a refusal from the gate (``timers.errors.Refused``, e.g. date_passed) is a 409 with
its code, and nothing it proposed is kept.

``next_timer`` is the earliest armed timer in the tick's order (owed_at, place, opened_at, key): for a
subscription its own timers; for a clock its items' (``clk_…#US``); for a job its own and its clocks'.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from zoneinfo import ZoneInfo

from django.db import transaction
from django.db.models import Q
from drf_spectacular.extensions import OpenApiSerializerFieldExtension
from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.response import Response

from calendars.clocks import clock_choose, clock_satisfy
from calendars.models import Clock, ClockItem, Subject
from timers.api.serializers import (
    Choice,
    ListQuerySerializer,
    QueryBooleanField,
    StrictBooleanField,
    StrictCharField,
    StrictRegexField,
    _plain_json,
    const,
    list_serializer,
    query_field,
)
from timers.api.views import (
    ERRORS,
    NOT_FOUND,
    BrandAPIView,
    SafeJSONParser,
    _error,
    domain_of,
    get_owned,
    owned,
    page,
)
from timers.armer import DirectArmer
from timers.domains import domain_now
from timers.errors import KeepingTimeError, NotFound, Refused
from timers.keys import KINDS
from timers.models import Brand, Timer, is_live
from timers.timeutil import iso_z

from . import registry
from .amounts import AmountField, CurrencyField
from .declare import Service, ServiceError
from .guarantees import penalty_notice
from .jobs import job_activity, job_deliver, job_end, job_resume_work, job_wait
from .models import Job, Subscription
from .money import usd
from .repin import job_repin
from .subject_events import subject_event
from .subscriptions import subscription_cancel, subscription_pause, subscription_resume, subscription_update
from .versions import versions_summary

_ITEM = re.compile(r"^[A-Za-z0-9_.-]{1,32}$")
UNNAMED = "-"  # the URL's name for a clock's single unnamed item
TICK_ORDER = ("owed_at", "place", "opened_at", "key")


# -- next timers, for many owners in one query ---------------------------------------------------------
def _armed(domain: str, roots: Iterable[str]) -> list[Timer]:
    """The armed timers of ``roots`` (each exactly, or its occurrences ``root#…``) on one domain, in tick order."""
    roots = sorted(set(roots))
    if not roots:
        return []
    match = Q(owner__in=roots)
    for root in roots:
        match |= Q(owner__startswith=f"{root}#")
    return list(Timer.objects.filter(domain=domain, status=Timer.Status.ARMED).filter(match)
                .only("id", "key", "owner", "kind", "owed_at", "place", "opened_at").order_by(*TICK_ORDER))


def _first_by(timers: list[Timer], group) -> dict[str, Timer]:
    """The first timer (they come in tick order) of each group ``group(timer)`` names."""
    first: dict[str, Timer] = {}
    for t in timers:
        g = group(t)
        if g is not None and g not in first:
            first[g] = t
    return first


def _root(owner: str) -> str:
    return owner.split("#", 1)[0]


def timer_summary(t: Timer | None) -> dict | None:
    if t is None:
        return None
    return {"id": t.id, "key": t.key, "owed_at": iso_z(t.owed_at), "kind": t.kind, "on": t.owner}


# -- lookups, always within the brand and its key's mode ------------------------------------------------
def _service(name: str) -> Service | None:
    try:
        return registry.get(name)
    except ServiceError:  # a Service no longer registered: its objects still read
        return None


def get_subscription(brand: Brand, sub_id: str) -> Subscription:
    return get_owned(brand, Subscription.objects.all(), sub_id, "subscription")


def get_job(brand: Brand, job_id: str) -> Job:
    return get_owned(brand, Job.objects.all(), job_id, "job")


def get_clock(brand: Brand, clock_id: str) -> Clock:
    return get_owned(brand, Clock.objects.select_related("subject__calendar"), clock_id, "clock")


def get_item(clock: Clock, item: str) -> ClockItem:
    name = "" if item == UNNAMED else item
    found = clock.items.filter(item=name).first() if (item == UNNAMED or _ITEM.match(item)) else None
    if found is None:
        raise NotFound(f"clock {clock.id} has no item {item!r}"
                       + (f"; its items: {', '.join(i or UNNAMED for i in clock.items.values_list('item', flat=True))}"
                          if clock.items.exists() else ""))
    found.clock = clock
    return found


def _test_clock(domain: str) -> str | None:
    return None if is_live(domain) else domain


@contextmanager
def through_the_gate() -> Iterator[None]:
    """One transaction; a refusal rolls it back and answers 409 with the refusal's code."""
    try:
        with transaction.atomic():
            yield
    except Refused as exc:
        raise KeepingTimeError(exc.message or f"refused: {exc.code}", code=exc.code, status=409) from None


# -- JSON -------------------------------------------------------------------------------------------------------
def _price(cents: int, every: str | None = None) -> dict:
    return {"cents": cents, "currency": "usd", "display": usd(cents), "every": every}


def usage_json(sub: Subscription, svc: Service | None) -> dict:
    """Allowances this cycle, as "1 of 1": every Service the plan includes, and any used beyond it."""
    includes = dict(svc.price.includes) if svc else {}
    used = {k: int(v) for k, v in (sub.usage or {}).items()}
    return {name: {"used": used.get(name, 0), "of": includes.get(name, 0)} for name in [*includes, *sorted(
        set(used) - set(includes))]}


def subscription_json(sub: Subscription, nxt: Timer | None) -> dict:
    svc = _service(sub.service)
    return {
        "id": sub.id,
        "object": "subscription",
        "service": sub.service,
        "subject": sub.subject_id,
        "status": sub.status,
        "cancel_at_period_end": sub.cancel_at_period_end,
        "paused_at": iso_z(sub.paused_at),
        "pause_note": sub.pause_note or None,
        "cycle": sub.cycle,
        "cycle_started_at": iso_z(sub.cycle_started_at),
        "opened_at": iso_z(sub.opened_at),
        "usage": usage_json(sub, svc),
        "price": _price(svc.price.cents, svc.price.every) if svc else None,
        "input": sub.input,
        "version": sub.version or None,
        "test_clock": _test_clock(sub.domain),
        "metadata": sub.metadata or {},
        "next_timer": timer_summary(nxt),
    }


def subscriptions_json(subs: list[Subscription]) -> list[dict]:
    """Many subscriptions with their next timers in one query per clock domain."""
    nxt: dict[str, Timer] = {}
    for domain in {s.domain for s in subs}:
        ids = [s.id for s in subs if s.domain == domain]
        nxt.update(_first_by(_armed(domain, ids), lambda t: _root(t.owner)))
    return [subscription_json(s, nxt.get(s.id)) for s in subs]


def job_json(job: Job, clocks: list[str], nxt: Timer | None) -> dict:
    return {
        "id": job.id,
        "object": "job",
        "service": job.service,
        "period": job.period,
        "subject": job.subject_id,
        "subscription": job.subscription_id,
        "schedule": job.schedule or None,
        "status": job.status,
        "late": job.late,
        "late_at": iso_z(job.late_at),
        "waiting_on": job.waiting_on or None,
        "step": job.step or None,
        "opened_at": iso_z(job.opened_at),
        "closed_at": iso_z(job.closed_at),
        "price": _price(job.price_cents),
        "version": job.version or None,
        "test_clock": _test_clock(job.domain),
        "metadata": job.metadata or {},
        "clocks": clocks,
        "next_timer": timer_summary(nxt),
    }


def jobs_json(jobs: list[Job]) -> list[dict]:
    """Many jobs with their clocks and next timers: one query for the clocks, one per clock domain for the
    timers (the jobs' own and their clocks' items'), never one per job or clock."""
    if not jobs:
        return []
    clocks: dict[str, list[str]] = {j.id: [] for j in jobs}
    job_of: dict[str, str] = {j.id: j.id for j in jobs}
    rows = (Clock.objects.filter(brand_id__in={j.brand_id for j in jobs}, owner_ref__in=list(clocks),
                                 lives_on=Clock.LivesOn.JOB)
            .order_by("opened_at", "name", "id").values_list("id", "owner_ref", "domain"))
    domain_of_job = {j.id: j.domain for j in jobs}
    for clock_id, owner, domain in rows:
        if domain_of_job.get(owner) == domain:
            clocks[owner].append(clock_id)
            job_of[clock_id] = owner
    nxt: dict[str, Timer] = {}
    for domain in set(domain_of_job.values()):
        roots = [r for r, j in job_of.items() if domain_of_job[j] == domain]
        nxt.update(_first_by(_armed(domain, roots), lambda t: job_of.get(_root(t.owner))))
    return [job_json(j, clocks[j.id], nxt.get(j.id)) for j in jobs]


def clock_json(clock: Clock) -> dict:
    items = list(clock.items.all().order_by("due_at", "item"))
    timers = _armed(clock.domain, [clock.id])
    by_item = _first_by(timers, lambda t: t.owner)
    calendar = clock.subject.calendar
    zone = ZoneInfo(calendar.zone if calendar is not None else "UTC")
    return {
        "id": clock.id,
        "object": "clock",
        "name": clock.name,
        "title": clock.title,
        "spec": clock.spec,
        "subject": clock.subject_id,
        "period": clock.period,
        "hard": clock.hard,
        "lives_on": clock.lives_on,
        "owner_ref": clock.owner_ref,
        "answers_for": clock.answers_for or None,
        "version": clock.version or None,
        "opened_at": iso_z(clock.opened_at),
        "zone": zone.key,
        "test_clock": _test_clock(clock.domain),
        "items": [item_json(i, zone, by_item.get(i.owner_key)) for i in items],
        "next_timer": timer_summary(timers[0] if timers else None),
    }


def item_json(item: ClockItem, zone: ZoneInfo, nxt: Timer | None) -> dict:
    return {
        "item": item.item or None,
        "civil": item.civil.isoformat(),
        "due_date": item.due_date.isoformat(),
        "due_at": iso_z(item.due_at),
        "local": item.due_at.astimezone(zone).isoformat(timespec="seconds"),
        "rolled_why": item.rolled_why or None,
        "moves": item.moves,
        "status": item.status,
        "satisfied_at": iso_z(item.satisfied_at),
        "next_timer": timer_summary(nxt),
    }


# -- what the API takes ---------------------------------------------------------------------------------------
def _id_field(help_text: str) -> StrictCharField:
    return query_field(help_text)


class SubscriptionListQuerySerializer(ListQuerySerializer):
    subject = _id_field("Only this subject's (sbj_…)")
    test_clock = _id_field("The test clock's subscriptions; the live clock's when absent")


class JobListQuerySerializer(ListQuerySerializer):
    subject = _id_field("Only this subject's (sbj_…)")
    subscription = _id_field("Only the jobs this subscription minted (sbn_…)")
    status = Choice(required=False, choices=Job.Status.choices, component="JobStatus")
    test_clock = _id_field("The test clock's jobs; the live clock's when absent")


class SubjectEventSerializer(serializers.Serializer):
    type = StrictRegexField(r"^[a-z][a-z0-9_.]{0,63}$", help_text="e.g. notice.received")
    key = StrictRegexField(r"^[A-Za-z0-9_.#-]{1,32}$",
                                 help_text="what the event is, e.g. the notice's number: the same key mints once")
    data = serializers.DictField(required=False, default=dict, help_text="the event's data, e.g. reply_by")

    def validate_data(self, value):
        _plain_json(value)
        return value


class SubscriptionPauseSerializer(serializers.Serializer):
    note = StrictCharField(required=False, allow_blank=True, max_length=200,
                                 help_text="Why the schedules are paused.")


class DeclaredInputField(serializers.DictField):
    """A subscription's input: the Service's declared input (services.declare.Input) checks it, in the service
    function; the schema lists what the plans declare."""


def plan_input_schema() -> dict:
    """The fields the registered plans (Services with a schedule, a cycle or events to mint on) declare, as an
    object schema: an update names some of them and nothing else. A plan that declares none takes any."""
    plans = [svc for svc in registry.all_services().values() if svc.schedule or svc.price.every or svc.on]
    if not plans or any(not svc.input for svc in plans):
        return {"type": "object", "additionalProperties": {}}
    properties: dict[str, dict] = {}
    for svc in plans:
        for name, spec in svc.input.items():
            properties.setdefault(name, spec.json_schema())
    return {"type": "object", "properties": properties, "additionalProperties": False}


class DeclaredInputSchema(OpenApiSerializerFieldExtension):
    target_class = DeclaredInputField

    def map_serializer_field(self, auto_schema, direction):
        return plan_input_schema()


class SubscriptionUpdateSerializer(serializers.Serializer):
    input = DeclaredInputField(help_text="Merged into the subscription's input; the next mint re-arms with it. "
                                         "Jobs already minted keep theirs. Each field is checked against the "
                                         "Service's declared input: invalid_input names the first one refused.")

    def validate_input(self, value):
        _plain_json(value)
        return value


class KeepsField(serializers.DictField):
    """What a delivered job's subject keeps: only the names its Services declare (subject.keeps)."""


class KeepsSchema(OpenApiSerializerFieldExtension):
    target_class = KeepsField

    def map_serializer_field(self, auto_schema, direction):
        names = sorted({k for svc in registry.all_services().values() for k in svc.subject.keeps})
        return {"type": "object", "properties": {name: {} for name in names}, "additionalProperties": False}


class JobDeliverSerializer(serializers.Serializer):
    keeps = KeepsField(required=False, default=dict,
                                  help_text="What the subject keeps, carried to the next job (the Service's "
                                            "subject.keeps names only)")

    def validate_keeps(self, value):
        _plain_json(value)
        return value


class JobCancelSerializer(serializers.Serializer):
    reason = StrictCharField(required=False, allow_blank=True, max_length=200, default="")


class JobActivitySerializer(serializers.Serializer):
    what = StrictCharField(required=False, allow_blank=True, max_length=200, default="",
                                 help_text="What happened: the account replied …")


class ClockChooseSerializer(serializers.Serializer):
    option = StrictCharField(max_length=64, help_text="One of the clock's options")
    by = StrictCharField(required=False, allow_blank=True, max_length=200, default="",
                               help_text="Who chose")


class ClockSatisfySerializer(serializers.Serializer):
    by = StrictCharField(required=False, allow_blank=True, max_length=200, default="",
                               help_text="Who kept the date")


# -- what the API answers (for the schema) ----------------------------------------------------------------------
class TimerSummarySerializer(serializers.Serializer):
    id = serializers.CharField()
    key = serializers.CharField()
    owed_at = serializers.DateTimeField()
    kind = Choice(choices=list(KINDS), component="TimerKind")
    on = serializers.CharField(help_text="Its owner: job_…, sbn_…, clk_…#US")


class PriceSerializer(serializers.Serializer):
    cents = serializers.IntegerField()
    currency = serializers.CharField()
    display = serializers.CharField(help_text="e.g. $2,400.00")
    every = serializers.CharField(allow_null=True, help_text="The cycle: year, month …; null for a one-off")


class AllowanceSerializer(serializers.Serializer):
    used = serializers.IntegerField()
    of = serializers.IntegerField()


class SubscriptionSerializer(serializers.Serializer):
    id = serializers.CharField()
    object = const("subscription", "SubscriptionObject")
    service = serializers.CharField()
    subject = serializers.CharField()
    status = Choice(choices=Subscription.Status.choices, component="SubscriptionStatus")
    cancel_at_period_end = serializers.BooleanField()
    paused_at = serializers.CharField(allow_null=True, help_text="UTC, Z; null when running")
    pause_note = serializers.CharField(allow_null=True)
    cycle = serializers.IntegerField()
    cycle_started_at = serializers.DateTimeField()
    opened_at = serializers.DateTimeField()
    usage = serializers.DictField(child=AllowanceSerializer(),
                                  help_text='Allowances this cycle by Service: {"annual-return": {"used": 1, "of": 1}}')
    price = PriceSerializer(allow_null=True)
    input = serializers.DictField()
    version = serializers.CharField(allow_null=True)
    test_clock = serializers.CharField(allow_null=True)
    metadata = serializers.DictField(child=serializers.CharField())
    next_timer = TimerSummarySerializer(allow_null=True)


class JobSerializer(serializers.Serializer):
    id = serializers.CharField()
    object = const("job", "JobObject")
    service = serializers.CharField()
    period = serializers.CharField()
    subject = serializers.CharField()
    subscription = serializers.CharField(allow_null=True)
    schedule = serializers.CharField(allow_null=True)
    status = Choice(choices=Job.Status.choices, component="JobStatus")
    late = serializers.BooleanField()
    late_at = serializers.DateTimeField(allow_null=True)
    waiting_on = serializers.CharField(allow_null=True, help_text="The party the work waits on (its at-risk is held)")
    step = serializers.CharField(allow_null=True, help_text="The current step of its delivery, if it declares steps")
    opened_at = serializers.DateTimeField()
    closed_at = serializers.DateTimeField(allow_null=True)
    price = PriceSerializer()
    version = serializers.CharField(allow_null=True)
    test_clock = serializers.CharField(allow_null=True)
    metadata = serializers.DictField(child=serializers.CharField())
    clocks = serializers.ListField(child=serializers.CharField(), help_text="The job's clocks (clk_…)")
    next_timer = TimerSummarySerializer(allow_null=True, help_text="The earliest armed timer of the job or its clocks")


class ClockItemSerializer(serializers.Serializer):
    item = serializers.CharField(allow_null=True, help_text="US, US-NJ …; null for a clock's single unnamed item "
                                                            "(written - in URLs)")
    civil = serializers.DateField(help_text="What the due function returned (or the move set)")
    due_date = serializers.DateField(help_text="The civil date rolled to the first open day")
    due_at = serializers.DateTimeField(help_text="The start of the closing minute, UTC")
    local = serializers.CharField(help_text="The closing minute in the subject calendar's zone, with its offset")
    rolled_why = serializers.CharField(allow_null=True)
    moves = serializers.IntegerField()
    status = Choice(choices=ClockItem.Status.choices, component="ClockItemStatus")
    satisfied_at = serializers.DateTimeField(allow_null=True)
    next_timer = TimerSummarySerializer(allow_null=True)


class ClockSerializer(serializers.Serializer):
    id = serializers.CharField()
    object = const("clock", "ClockObject")
    name = serializers.CharField()
    title = serializers.CharField()
    spec = serializers.CharField()
    subject = serializers.CharField()
    period = serializers.CharField()
    hard = serializers.BooleanField()
    lives_on = Choice(choices=Clock.LivesOn.choices, component="ClockLivesOn")
    owner_ref = serializers.CharField(help_text="The job (or subject) it belongs to")
    answers_for = serializers.CharField(allow_null=True)
    version = serializers.CharField(allow_null=True)
    opened_at = serializers.DateTimeField()
    zone = serializers.CharField(help_text="The subject calendar's IANA zone")
    test_clock = serializers.CharField(allow_null=True)
    items = ClockItemSerializer(many=True)
    next_timer = TimerSummarySerializer(allow_null=True)


CONFLICT = {409: _error("The object's state refuses it: job_not_open, subscription_not_active …")}
GATE = {409: _error("clock_not_due, clock_satisfied, or the gate's refusal (date_passed …) with its code")}


# -- subscriptions ------------------------------------------------------------------------------------------------
SUB_ORDER = ("opened_at", "id")


def _active(sub: Subscription) -> None:
    if sub.status != Subscription.Status.ACTIVE:
        raise KeepingTimeError(f"{sub.id} is {sub.status}; only an active subscription changes",
                               code="subscription_not_active", status=409)


def _render_sub(sub: Subscription) -> dict:
    return subscriptions_json([sub])[0]


class SubscriptionListView(BrandAPIView):
    @extend_schema(
        operation_id="subscriptions_list", tags=["subscriptions"], parameters=[SubscriptionListQuerySerializer],
        summary="List subscriptions",
        description="The live clock's subscriptions, or a test clock's, in the order they opened; each with its "
                    "allowances this cycle and its next timer.",
        responses={200: list_serializer("SubscriptionList", SubscriptionSerializer), **ERRORS, **NOT_FOUND},
    )
    def get(self, request):
        params = self.query(SubscriptionListQuerySerializer)
        scope = owned(Subscription.objects.all(), self.brand)
        qs = scope.filter(domain=domain_of(self.brand, params.get("test_clock")))
        if params.get("subject"):
            qs = qs.filter(subject_id=params["subject"])
        return Response(page(qs, scope=scope, order=SUB_ORDER, lookup="pk", params=params, url="/subscriptions",
                             render=subscriptions_json, what="subscription"))


class SubscriptionDetailView(BrandAPIView):
    @extend_schema(operation_id="subscriptions_retrieve", tags=["subscriptions"], summary="Retrieve a subscription",
                   responses={200: SubscriptionSerializer, 401: ERRORS[401], **NOT_FOUND})
    def get(self, request, subscription_id: str):
        return Response(_render_sub(get_subscription(self.brand, subscription_id)))


class SubscriptionCancelView(BrandAPIView):
    @extend_schema(
        operation_id="subscriptions_cancel", tags=["subscriptions"], request=None,
        summary="Cancel a subscription at the cycle's end",
        description="The next renewal ends it; the jobs of the current period go on.",
        responses={200: SubscriptionSerializer, 401: ERRORS[401], **NOT_FOUND, **CONFLICT},
    )
    def post(self, request, subscription_id: str):
        sub = get_subscription(self.brand, subscription_id)
        _active(sub)
        with through_the_gate():
            subscription_cancel(armer=DirectArmer(brand=self.brand, domain=sub.domain), sub=sub)
        return Response(_render_sub(sub))


class SubscriptionUpdateView(BrandAPIView):
    parser_classes = [SafeJSONParser]  # its body carries an object, which a form's flat fields cannot
    @extend_schema(
        operation_id="subscriptions_update", tags=["subscriptions"], request=SubscriptionUpdateSerializer,
        summary="Update a subscription's input",
        description="Merges `input` into the subscription's; the next mint of each schedule re-arms with it.",
        responses={200: SubscriptionSerializer, **ERRORS, **NOT_FOUND, **CONFLICT},
    )
    def post(self, request, subscription_id: str):
        sub = get_subscription(self.brand, subscription_id)
        body = self.body(SubscriptionUpdateSerializer)
        _active(sub)
        with through_the_gate():
            subscription_update(armer=DirectArmer(brand=self.brand, domain=sub.domain), sub=sub, input=body["input"])
        return Response(_render_sub(sub))


class SubscriptionPauseView(BrandAPIView):
    @extend_schema(
        operation_id="subscriptions_pause", tags=["subscriptions"], request=SubscriptionPauseSerializer,
        summary="Pause a subscription's schedules",
        description="Holds the next mint of each schedule; the cycle, jobs and money go on.",
        responses={200: SubscriptionSerializer, **ERRORS, **NOT_FOUND, **CONFLICT},
    )
    def post(self, request, subscription_id: str):
        sub = get_subscription(self.brand, subscription_id)
        body = self.body(SubscriptionPauseSerializer)
        with through_the_gate():
            subscription_pause(armer=DirectArmer(brand=self.brand, domain=sub.domain), sub=sub,
                               note=body.get("note", ""))
        return Response(_render_sub(sub))


class SubscriptionResumeView(BrandAPIView):
    @extend_schema(
        operation_id="subscriptions_resume", tags=["subscriptions"], request=None,
        summary="Resume a subscription's schedules",
        description="Each held mint comes back at its own time; the periods missed while paused follow the "
                    "schedule's catch_up.",
        responses={200: SubscriptionSerializer, 401: ERRORS[401], **NOT_FOUND, **CONFLICT},
    )
    def post(self, request, subscription_id: str):
        sub = get_subscription(self.brand, subscription_id)
        with through_the_gate():
            subscription_resume(armer=DirectArmer(brand=self.brand, domain=sub.domain), sub=sub)
        return Response(_render_sub(sub))


class SubjectEventView(BrandAPIView):
    parser_classes = [SafeJSONParser]  # its body carries an object, which a form's flat fields cannot
    @extend_schema(
        operation_id="subjects_events_create", tags=["subscriptions"], request=SubjectEventSerializer,
        summary="Record an event on a subject",
        description="Each active subscription whose Service names the event under `on` mints a job of that "
                    "Service (once per event key) with the event's data as its input: a notice received mints "
                    "its reply, due on the notice's reply_by.",
        responses={200: list_serializer("MintedJobList", JobSerializer), **ERRORS, **NOT_FOUND, **CONFLICT},
    )
    def post(self, request, subject_id: str):
        subject = get_owned(self.brand, Subject.objects.all(), subject_id, "subject")
        body = self.body(SubjectEventSerializer)
        with through_the_gate():
            jobs = subject_event(armer=DirectArmer(brand=self.brand, domain=subject.domain), subject=subject,
                                 type=body["type"], key=body["key"], data=body["data"])
        return Response({"object": "list", "data": jobs_json(jobs), "has_more": False,
                         "url": f"/subjects/{subject.id}/events"})


# -- jobs -----------------------------------------------------------------------------------------------------------
JOB_ORDER = ("opened_at", "id")


def _render_job(job: Job) -> dict:
    return jobs_json([job])[0]


class JobListView(BrandAPIView):
    @extend_schema(
        operation_id="jobs_list", tags=["jobs"], parameters=[JobListQuerySerializer], summary="List jobs",
        description="The live clock's jobs, or a test clock's, in the order they opened; each with its clocks and "
                    "the earliest armed timer of the job or its clocks.",
        responses={200: list_serializer("JobList", JobSerializer), **ERRORS, **NOT_FOUND},
    )
    def get(self, request):
        params = self.query(JobListQuerySerializer)
        scope = owned(Job.objects.all(), self.brand)
        qs = scope.filter(domain=domain_of(self.brand, params.get("test_clock")))
        for field in ("subject", "subscription"):
            if params.get(field):
                qs = qs.filter(**{f"{field}_id": params[field]})
        if params.get("status"):
            qs = qs.filter(status=params["status"])
        return Response(page(qs, scope=scope, order=JOB_ORDER, lookup="pk", params=params, url="/jobs",
                             render=jobs_json, what="job"))


class JobDetailView(BrandAPIView):
    @extend_schema(operation_id="jobs_retrieve", tags=["jobs"], summary="Retrieve a job",
                   responses={200: JobSerializer, 401: ERRORS[401], **NOT_FOUND})
    def get(self, request, job_id: str):
        return Response(_render_job(get_job(self.brand, job_id)))


class JobDeliverView(BrandAPIView):
    parser_classes = [SafeJSONParser]  # its body carries an object, which a form's flat fields cannot
    @extend_schema(
        operation_id="jobs_deliver", tags=["jobs"], request=JobDeliverSerializer, summary="Deliver a job",
        description="Its deadline and signals stop; what the subject keeps is carried to the next job. "
                    "Errors: job_not_open (409), unknown_keeps.",
        responses={200: JobSerializer, **ERRORS, **NOT_FOUND, **CONFLICT},
    )
    def post(self, request, job_id: str):
        job = get_job(self.brand, job_id)
        body = self.body(JobDeliverSerializer)
        with through_the_gate():
            job_deliver(armer=DirectArmer(brand=self.brand, domain=job.domain), job=job, keeps=body["keeps"])
        return Response(_render_job(job))


class JobCancelView(BrandAPIView):
    @extend_schema(
        operation_id="jobs_cancel", tags=["jobs"], request=JobCancelSerializer, summary="Cancel a job",
        description="Before delivery: its timers and its clocks' stop, open dates are voided, the hold returns.",
        responses={200: JobSerializer, **ERRORS, **NOT_FOUND, **CONFLICT},
    )
    def post(self, request, job_id: str):
        job = get_job(self.brand, job_id)
        body = self.body(JobCancelSerializer)
        with through_the_gate():
            job_end(armer=DirectArmer(brand=self.brand, domain=job.domain), job=job, status=Job.Status.CANCELED,
                    reason=body["reason"])
        return Response(_render_job(job))


class JobActivityView(BrandAPIView):
    @extend_schema(
        operation_id="jobs_activity", tags=["jobs"], request=JobActivitySerializer, summary="Record activity",
        description="Something happened on the job: recorded (job.activity) and kept as its last activity. "
                    "No timer moves: a silent signal reads the last activity when it fires.",
        responses={200: JobSerializer, **ERRORS, **NOT_FOUND, **CONFLICT},
    )
    def post(self, request, job_id: str):
        job = get_job(self.brand, job_id)
        body = self.body(JobActivitySerializer)
        if job.status != Job.Status.OPEN:
            raise KeepingTimeError(f"{job.id} is {job.status}; activity is recorded on an open job",
                                   code="job_not_open", status=409)
        with through_the_gate():
            job_activity(armer=DirectArmer(brand=self.brand, domain=job.domain), job=job, what=body["what"])
        return Response(_render_job(job))


# -- clocks ---------------------------------------------------------------------------------------------------------
class ClockDetailView(BrandAPIView):
    @extend_schema(operation_id="clocks_retrieve", tags=["clocks"], summary="Retrieve a clock",
                   description="Its items: each date, rolled, closing in the subject calendar's zone, and the next "
                               "timer of each.",
                   responses={200: ClockSerializer, 401: ERRORS[401], **NOT_FOUND})
    def get(self, request, clock_id: str):
        return Response(clock_json(get_clock(self.brand, clock_id)))


class ClockChooseView(BrandAPIView):
    @extend_schema(
        operation_id="clocks_items_choose", tags=["clocks"], request=ClockChooseSerializer,
        summary="Choose on a date that came unsatisfied",
        description="The owner's choice on an item that is due or passed (`-` names a clock's single unnamed "
                    "item). An option that names a step runs it through the gate: a hard date past refuses it "
                    "with date_passed (409). Errors: clock_not_due (409), unknown_option.",
        responses={200: ClockSerializer, **ERRORS, **NOT_FOUND, **GATE},
    )
    def post(self, request, clock_id: str, item: str):
        clock = get_clock(self.brand, clock_id)
        it = get_item(clock, item)
        body = self.body(ClockChooseSerializer)
        with through_the_gate():
            clock_choose(armer=DirectArmer(brand=self.brand, domain=clock.domain), item=it, option=body["option"],
                         by=body["by"])
        return Response(clock_json(clock))


class ClockSatisfyView(BrandAPIView):
    @extend_schema(
        operation_id="clocks_items_satisfy", tags=["clocks"], request=ClockSatisfySerializer,
        summary="Mark a date kept",
        description="The item arms nothing further and what it had armed is superseded (`-` names a clock's "
                    "single unnamed item). Satisfying a kept date again changes nothing. Errors: "
                    "clock_item_voided (409).",
        responses={200: ClockSerializer, **ERRORS, **NOT_FOUND, **CONFLICT},
    )
    def post(self, request, clock_id: str, item: str):
        clock = get_clock(self.brand, clock_id)
        it = get_item(clock, item)
        body = self.body(ClockSatisfySerializer)
        if it.status == ClockItem.Status.VOIDED:
            raise KeepingTimeError(f"{it.owner_key} is voided; its job ended", code="clock_item_voided", status=409)
        with through_the_gate():
            clock_satisfy(armer=DirectArmer(brand=self.brand, domain=clock.domain), item=it, by=body["by"])
        return Response(clock_json(clock))


class ClockPenaltySerializer(serializers.Serializer):
    notice = StrictCharField(max_length=64, help_text="The notice that assessed it, e.g. CP14")
    amount = AmountField(help_text="The penalty assessed, in the currency's smallest unit: 30000 is $300.00")
    currency = CurrencyField(required=False, default="usd")


class PenaltySerializer(serializers.Serializer):
    object = const("penalty", "PenaltyObject")
    clock = serializers.CharField()
    period = serializers.CharField()
    notice = serializers.CharField()
    amount = serializers.IntegerField(help_text="The penalty, in cents")
    currency = serializers.CharField()
    amount_cents = serializers.IntegerField(help_text="The same as amount (kept for older clients)")
    guarantee_cap_cents = serializers.IntegerField(help_text="0 when the clock carries no guarantee")
    credited_cents = serializers.IntegerField(help_text="What the brand's line credits: the penalty, up to what is "
                                              "left of the cap")
    money_line = serializers.CharField(allow_null=True, help_text="The credit's money line (collected by its "
                                       "money timer), or null when nothing is credited")


class ClockPenaltyView(BrandAPIView):
    @extend_schema(
        operation_id="clocks_penalties_create", tags=["clocks"], request=ClockPenaltySerializer,
        summary="Record a penalty notice for the clock's period",
        description="Recorded as clock.penalty. When the clock carries a guarantee, the penalty is credited from "
                    "the brand's line up to the guarantee's cap (members' pay stays whole); a clock the customer "
                    "answers for carries no guarantee of the brand's (409 guarantee_not_brands), and with "
                    "excludes: 'held' the time the job waited on the party is left out. The amount is in cents "
                    "(400 invalid_amount for a float or a dollar string). The same notice again answers with "
                    "its first credit and records nothing.",
        responses={201: PenaltySerializer, **ERRORS, **NOT_FOUND, **CONFLICT},
    )
    def post(self, request, clock_id: str):
        clock = get_clock(self.brand, clock_id)
        body = self.body(ClockPenaltySerializer)
        cents = body["amount"]
        with through_the_gate():
            line = penalty_notice(armer=DirectArmer(brand=self.brand, domain=clock.domain), clock=clock,
                                  amount_cents=cents, notice=body["notice"], currency=body["currency"])
        return Response({
            "object": "penalty", "clock": clock.id, "period": clock.period, "notice": body["notice"],
            "amount": cents, "currency": body["currency"], "amount_cents": cents, "guarantee_cap_cents": clock.guarantee_cap_cents,
            "credited_cents": line.amount_cents if line is not None else 0,
            "money_line": line.id if line is not None else None,
        }, status=201)


# -- versions -----------------------------------------------------------------------------------------
class VersionListQuerySerializer(serializers.Serializer):
    pinned = QueryBooleanField(required=False, default=False,
                               help_text="Only versions still running a timer of the caller's")
    test_clock = query_field("Count what is on this test clock; the live clock's when absent")


class VersionSerializer(serializers.Serializer):
    id = serializers.CharField(help_text="sha256:… over the bundle's files")
    object = const("version", "VersionObject")
    name = serializers.CharField(allow_null=True, help_text="A deploy's name, e.g. 2027-06")
    label = serializers.CharField(help_text="How headers print it: the name, else the short hash")
    services = serializers.ListField(child=serializers.CharField())
    files = serializers.ListField(child=serializers.CharField(), help_text="The bundle's files")
    live = serializers.BooleanField(help_text="What new work of one of its Services pins now")
    armed_timers = serializers.IntegerField(help_text="Armed and held timers of the caller's it still runs")
    subjects = serializers.IntegerField(help_text="Subjects with open work on it")
    keeps_until = serializers.DateTimeField(allow_null=True, help_text="The last owed time of those timers")
    summary = serializers.CharField(help_text="What keeps it, in a line: 1,412 armed timers on 61 subjects, or, "
                                              "held only by clocks on their subjects, 1 clock · expiring on "
                                              "sbj_…, to 2045-12-31")
    created_at = serializers.DateTimeField()


class VersionListView(BrandAPIView):
    @extend_schema(
        operation_id="versions_list", tags=["versions"], parameters=[VersionListQuerySerializer],
        summary="List versions",
        description="The bundles Services run on, newest first; with pinned=true only those still running a "
                    "timer of the caller's (a version with armed timers stays runnable until its last one closes).",
        responses={200: list_serializer("VersionList", VersionSerializer), **ERRORS, **NOT_FOUND},
    )
    def get(self, request):
        params = self.query(VersionListQuerySerializer)
        domain = domain_of(self.brand, params.get("test_clock"))
        now = domain_now(domain=domain)
        rows = versions_summary(brand=self.brand, domains=Q(domain=domain), now=now,
                                pinned_only=params["pinned"], live_domain=domain)
        return Response({"object": "list", "url": "/versions", "has_more": False, "data": [
            {"id": p.version.digest, "object": "version", "name": p.version.name or None, "label": p.version.label,
             "services": list(p.version.services), "files": sorted(s["path"] for s in p.version.sources.values()),
             "live": p.live, "armed_timers": p.armed, "subjects": p.subjects,
             "keeps_until": iso_z(p.last) if p.last else None, "summary": p.summary,
             "created_at": iso_z(p.version.created_at)}
            for p in rows]})


class JobRepinSerializer(serializers.Serializer):
    to = StrictRegexField(r"^(sha256:[0-9a-f]{8,64}|[A-Za-z0-9][A-Za-z0-9._-]{0,63})$", max_length=71,
                          help_text="A version's name (2027-06) or a sha256 prefix")
    dry_run = StrictBooleanField(required=False, default=False, help_text="Print the diff, change nothing")


class RepinChangeSerializer(serializers.Serializer):
    action = Choice(choices=[("arm", "arm"), ("supersede", "supersede"), ("keep", "keep")],
                    component="RepinAction")
    key = serializers.CharField()
    owed_at = serializers.DateTimeField(allow_null=True)


class JobRepinResultSerializer(serializers.Serializer):
    object = const("repin", "RepinObject")
    job = serializers.CharField()
    to = serializers.CharField(help_text="The version's digest")
    label = serializers.CharField()
    dry_run = serializers.BooleanField()
    changes = RepinChangeSerializer(many=True)


class JobRepinView(BrandAPIView):
    parser_classes = [SafeJSONParser]

    @extend_schema(
        operation_id="owner_jobs_repin", tags=["versions"], request=JobRepinSerializer, summary="Repin a job",
        description="Move an open job to another version: the diff timer by timer (arm, supersede, keep, with "
                    "owed times); without dry_run each changed timer is superseded by: 'repin' and the new ones "
                    "armed. Errors: job_not_open (409), version_mismatch; a version that does not exist is a 404 on to.",
        responses={200: JobRepinResultSerializer, **ERRORS, **NOT_FOUND, **CONFLICT},
    )
    def post(self, request, job_id: str):
        job = get_job(self.brand, job_id)
        body = self.body(JobRepinSerializer)
        try:
            to = registry.version_named(body["to"])
        except ServiceError as exc:  # a well-formed name that names nothing: 404, as for any id
            err = NotFound(str(exc))
            err.param = "to"
            raise err from None
        with through_the_gate():
            changes = job_repin(armer=DirectArmer(brand=self.brand, domain=job.domain), job=job, to=to,
                                dry_run=body["dry_run"])
        return Response({"object": "repin", "job": job.id, "to": to.digest, "label": to.label,
                         "dry_run": body["dry_run"], "changes": [
                             {"action": c.action, "key": c.key, "owed_at": iso_z(c.owed_at) if c.owed_at else None}
                             for c in changes]})


class JobWaitSerializer(serializers.Serializer):
    on = StrictCharField(max_length=200, help_text="The party the work waits on: the organizer, the buyer …")


class JobWaitView(BrandAPIView):
    parser_classes = [SafeJSONParser]

    @extend_schema(
        operation_id="jobs_wait", tags=["jobs"], request=JobWaitSerializer, summary="Wait on a party",
        description="The work is the party's now: the deadline's at-risk timer is held (late_at never moves). "
                    "Errors: job_not_open, job_waiting (409).",
        responses={200: JobSerializer, **ERRORS, **NOT_FOUND, **CONFLICT},
    )
    def post(self, request, job_id: str):
        job = get_job(self.brand, job_id)
        body = self.body(JobWaitSerializer)
        with through_the_gate():
            job_wait(armer=DirectArmer(brand=self.brand, domain=job.domain), job=job, on=body["on"])
        return Response(_render_job(job))


class JobResumeView(BrandAPIView):
    @extend_schema(
        operation_id="jobs_resume_work", tags=["jobs"], request=None, summary="The party answered",
        description="The held at-risk timer re-arms at min(now + remaining, late_at); one whose time passed "
                    "while held fires at once. Errors: job_not_waiting (409).",
        responses={200: JobSerializer, **ERRORS, **NOT_FOUND, **CONFLICT},
    )
    def post(self, request, job_id: str):
        job = get_job(self.brand, job_id)
        with through_the_gate():
            job_resume_work(armer=DirectArmer(brand=self.brand, domain=job.domain), job=job)
        return Response(_render_job(job))
