"""The schedules' tables: one mechanism that fires on a spec (timers/schedules.py, timers/schedule_fires.py),
its Runs, ticks and dead letters."""

from __future__ import annotations

from datetime import timedelta

from django.db import models
from django.db.models import Q

from ..fields import IdField
from ..ids import new_id
from .tenants import Brand


def new_schedule_id() -> str:
    return new_id("sch")


OVERLAPS = ("skip", "buffer_one", "buffer_all", "cancel_other", "allow")
CATCHUP_MIN = timedelta(seconds=10)
CATCHUP_MAX = timedelta(days=365)


class Schedule(models.Model):
    """Fires on a spec (cron, an interval with a phase, a calendar period) in a zone; each fire is a tick that
    starts a Run of its target (an HTTP endpoint, a Service's job). Its fire timer is ``<id>:schedule:fire:<at>``.

    A Service's ``schedule`` (minting a job per period) is a Schedule too (``owner_ref`` "sbn_…:annual").
    """

    class Overlap(models.TextChoices):
        SKIP = "skip"
        BUFFER_ONE = "buffer_one"
        BUFFER_ALL = "buffer_all"
        CANCEL_OTHER = "cancel_other"
        ALLOW = "allow"

    class Target(models.TextChoices):
        HTTP = "http"  # a signed POST through the outbox
        SERVICE = "service"  # a job of a Service for a subject, per fire
        SUBSCRIPTION = "subscription"  # a Service's own schedule: a job per period (services/handlers.py)

    id = IdField(primary_key=True, max_length=32, default=new_schedule_id, editable=False)
    brand = models.ForeignKey(Brand, on_delete=models.CASCADE, db_index=False, related_name="schedules")
    domain = models.CharField(max_length=32, help_text='"live" or the test clock id')
    name = models.CharField(max_length=200, blank=True)
    spec = models.JSONField(help_text='{"cron": …} | {"every": …, "phase": …} | {"each": …, "at": …, "time": …}')
    zone = models.CharField(max_length=64, default="UTC")
    target_kind = models.CharField(max_length=16, choices=Target.choices)
    target = models.JSONField(default=dict, help_text="url, timeout, retries | service, subject | subscription, schedule")
    secret = models.CharField(max_length=80, blank=True, help_text="Signs an HTTP target's body (HMAC-SHA256)")
    overlap = models.CharField(max_length=16, choices=Overlap.choices, default=Overlap.SKIP)
    buffer_limit = models.PositiveIntegerField(default=100, help_text="buffer_all keeps at most this many fires")
    catchup_window = models.DurationField(default=CATCHUP_MAX, help_text="A missed fire older than this is skipped")
    paused = models.BooleanField(default=False)
    pause_note = models.CharField(max_length=200, blank=True)
    paused_at = models.DateTimeField(null=True, blank=True)
    revision = models.PositiveIntegerField(default=1, help_text="Each update is a new revision (schedule.updated)")
    start_at = models.DateTimeField(null=True, blank=True, help_text="No fire before it")
    end_at = models.DateTimeField(null=True, blank=True, help_text="No fire after it")
    remaining_actions = models.PositiveIntegerField(null=True, blank=True,
                                                    help_text="Runs its spec may still start; none: no limit")
    skip = models.JSONField(default=list, blank=True, help_text="Cron expressions or dates whose times are not fired")
    calendar = models.CharField(max_length=32, blank=True, help_text="A calendar of the brand whose closed days it "
                                                                     "skips or rolls (closed_days)")
    closed_days = models.CharField(max_length=16, default="skip", help_text="skip, next_open or previous_open")
    jitter = models.DurationField(default=timedelta(0), help_text="Each fire starts up to this much after its time")
    deleted_at = models.DateTimeField(null=True, blank=True, help_text="Deleted: no fire after it; still readable")
    owner_ref = models.CharField(max_length=100, blank=True, help_text="A Service schedule's subscription:name")
    skipped = models.PositiveIntegerField(default=0, help_text="Fires an open Run skipped (overlap)")
    dropped = models.PositiveIntegerField(default=0, help_text="Fires a full buffer dropped (overlap)")
    missed = models.PositiveIntegerField(default=0, help_text="Missed fires older than the catch-up window")
    created_at = models.DateTimeField()

    class Meta:
        constraints = [
            models.CheckConstraint(name="schedule_overlap_known", condition=Q(overlap__in=OVERLAPS)),
            models.CheckConstraint(name="schedule_target_known",
                                   condition=Q(target_kind__in=["http", "service", "subscription"])),
            models.CheckConstraint(name="schedule_catchup_window_10s_to_365d",
                                   condition=Q(catchup_window__gte=CATCHUP_MIN, catchup_window__lte=CATCHUP_MAX)),
            models.CheckConstraint(name="schedule_paused_has_paused_at",
                                   condition=Q(paused=False) | Q(paused_at__isnull=False)),
            models.CheckConstraint(name="schedule_closed_days_known",
                                   condition=Q(closed_days__in=["skip", "next_open", "previous_open"])),
            models.CheckConstraint(name="schedule_jitter_0_to_365d",
                                   condition=Q(jitter__gte=timedelta(0), jitter__lte=CATCHUP_MAX)),
            models.UniqueConstraint(fields=["domain", "owner_ref"], condition=~Q(owner_ref=""),
                                    name="schedule_one_per_service_schedule"),
            # A user's schedule is named once per brand and clock (a Service's own are named by owner_ref); a
            # deleted one frees its name.
            models.UniqueConstraint(fields=["brand", "domain", "name"],
                                    condition=Q(owner_ref="") & ~Q(name="") & Q(deleted_at__isnull=True),
                                    name="schedule_name_unique_per_brand_clock"),
        ]
        indexes = [models.Index(fields=["brand", "domain", "created_at"], name="schedule_brand_list")]

    def __str__(self) -> str:
        return self.name or self.id


class ScheduleRun(models.Model):
    """What a fire starts: identified by (schedule, intended time). A wake that arrives twice finds the row
    and starts nothing; a buffered fire is a Run that waits (``buffered``) for the open one to close."""

    class State(models.TextChoices):
        BUFFERED = "buffered"
        OPEN = "open"
        CLOSED = "closed"

    id = IdField(primary_key=True, max_length=32, editable=False)
    schedule = models.ForeignKey(Schedule, on_delete=models.CASCADE, db_index=False, related_name="runs")
    intended_at = models.DateTimeField(help_text="The instant the fire was due for")
    state = models.CharField(max_length=12, choices=State.choices)
    started_at = models.DateTimeField(null=True, blank=True)
    closed_at = models.DateTimeField(null=True, blank=True)
    ref = models.CharField(max_length=64, blank=True, help_text="The job, or the submission id of the HTTP call")
    outcome = models.CharField(max_length=200, blank=True, help_text="The Run's own result: the job's end, the HTTP answer")
    cancel_requested_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        constraints = [
            # Run identity: one Run per (schedule, intended time), however often its wake arrives.
            models.UniqueConstraint(fields=["schedule", "intended_at"], name="schedule_run_once"),
            models.CheckConstraint(name="schedule_run_state_known",
                                   condition=Q(state__in=["buffered", "open", "closed"])),
            models.CheckConstraint(name="schedule_run_started",
                                   condition=Q(state="buffered") | Q(started_at__isnull=False)),
        ]
        indexes = [
            models.Index(fields=["schedule", "state", "intended_at"], name="schedule_run_state"),
            models.Index(fields=["ref"], name="schedule_run_ref", condition=~Q(ref="")),
        ]

    def __str__(self) -> str:
        return f"{self.schedule_id} @ {self.intended_at:%Y-%m-%dT%H:%MZ} {self.state}"


class ScheduleTick(models.Model):
    """A fire: ``open`` when it starts its Run, then ``succeeded`` (a 2xx, the job minted) or
    ``dead_lettered`` (the target refused; the DeadLetter beside it says what)."""

    class State(models.TextChoices):
        OPEN = "open"
        SUCCEEDED = "succeeded"
        DEAD_LETTERED = "dead_lettered"

    id = IdField(primary_key=True, max_length=32, editable=False)
    schedule = models.ForeignKey(Schedule, on_delete=models.CASCADE, db_index=False, related_name="ticks")
    run = models.OneToOneField(ScheduleRun, on_delete=models.CASCADE, related_name="tick")
    intended_at = models.DateTimeField()
    fired_at = models.DateTimeField()
    state = models.CharField(max_length=16, choices=State.choices, default=State.OPEN)
    settled_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        constraints = [
            models.CheckConstraint(name="schedule_tick_state_known",
                                   condition=Q(state__in=["open", "succeeded", "dead_lettered"])),
        ]
        indexes = [models.Index(fields=["schedule", "fired_at"], name="schedule_tick_recent")]

    def __str__(self) -> str:
        return f"{self.schedule_id} @ {self.intended_at:%Y-%m-%dT%H:%MZ} {self.state}"


class DeadLetter(models.Model):
    """What a target refused, beside the tick that produced it."""

    id = IdField(primary_key=True, max_length=32, editable=False)
    schedule = models.ForeignKey(Schedule, on_delete=models.CASCADE, related_name="dead_letters")
    tick = models.OneToOneField(ScheduleTick, on_delete=models.CASCADE, related_name="dead_letter")
    at = models.DateTimeField()
    status = models.PositiveIntegerField(null=True, blank=True, help_text="The target's HTTP status, if it answered")
    error = models.TextField()
    payload = models.JSONField(default=dict, blank=True, help_text="What was sent and refused")

    def __str__(self) -> str:
        return f"{self.schedule_id} {self.error[:60]}"
