"""The tick's tables: timers, the gate's commits, the fires' tallies and the record (events).

Keys are unique per clock domain; the gate commits a key once per domain (the constraint, not a check); the
record is append-only, in tick order.
"""

from __future__ import annotations

from datetime import timedelta

from django.db import models
from django.db.models import Q
from django.db.models.functions import Now

from ..fields import ByteOrderCharField, IdField
from ..ids import new_id
from ..keys import KINDS
from .tenants import Brand


def new_timer_id() -> str:
    return new_id("tmr")


def new_event_id() -> str:
    return new_id("evt")


def new_commit_id() -> str:
    return new_id("cmt")


class Timer(models.Model):
    class Status(models.TextChoices):
        ARMED = "armed"
        FIRED = "fired"
        SUPERSEDED = "superseded"
        HELD = "held"

    id = IdField(primary_key=True, max_length=32, default=new_timer_id, editable=False)
    domain = models.CharField(max_length=32, help_text='"live" or the test clock id')
    brand = models.ForeignKey(Brand, on_delete=models.CASCADE, related_name="timers")
    key = ByteOrderCharField(max_length=255)
    owner = models.CharField(max_length=160)
    kind = models.CharField(max_length=16, choices=[(k, k) for k in KINDS])
    place = models.PositiveSmallIntegerField()
    handler = models.CharField(max_length=64)
    status = models.CharField(max_length=12, choices=Status.choices, default=Status.ARMED)
    owed_at = models.DateTimeField(null=True, blank=True)
    opened_at = models.DateTimeField(help_text="When the timer's owner opened: the tick's third tie-break.")
    armed_at = models.DateTimeField()
    fired_at = models.DateTimeField(null=True, blank=True)
    late_by = models.DurationField(null=True, blank=True)
    attempt = models.PositiveIntegerField(default=0)
    wakes = models.PositiveIntegerField(default=0)
    version = models.CharField(max_length=80, blank=True)
    superseded_by = models.CharField(max_length=32, blank=True)
    by = models.CharField(max_length=64, blank=True)
    held_since = models.DateTimeField(null=True, blank=True)
    held_by = models.CharField(max_length=64, blank=True)
    remaining = models.DurationField(null=True, blank=True)
    armed_by = models.CharField(max_length=32, blank=True, help_text="The timer whose firing armed this one.")
    tick_pass = models.PositiveSmallIntegerField(
        default=1, db_default=1, help_text="The pass of its instant it fires in: kept so a tick that resumes mid-instant keeps the order.")
    data = models.JSONField(default=dict, blank=True)
    # Wall time, the database's own: which month of history a fired or superseded timer is kept in
    # (timers/history.py). Never read by the tick and never in the record.
    moved_at = models.DateTimeField(
        db_default=Now(), editable=False,
        help_text="When the row came to its table (wall time): history is partitioned by its month.")

    class Meta:
        # On PostgreSQL the table is split by status (migration 0022, timers/history.py): the indexes below
        # are the armed partition's, and history has its own on each month.
        constraints = [
            models.UniqueConstraint(fields=["domain", "key"], name="timer_key_unique_per_domain"),
            models.CheckConstraint(name="timer_place_1_to_8", condition=Q(place__gte=1, place__lte=8)),
            models.CheckConstraint(
                name="timer_status_known", condition=Q(status__in=["armed", "fired", "superseded", "held"])
            ),
            models.CheckConstraint(
                name="timer_armed_is_owed", condition=~Q(status="armed") | Q(owed_at__isnull=False)
            ),
            models.CheckConstraint(
                name="timer_held_keeps_remaining",
                condition=~Q(status="held")
                | Q(owed_at__isnull=True, held_since__isnull=False, remaining__isnull=False),
            ),
            models.CheckConstraint(
                name="timer_fired_has_fired_at", condition=~Q(status="fired") | Q(fired_at__isnull=False)
            ),
        ]
        indexes = [
            # The tick's claim query (timers/store.py, fetch): armed timers in tick order.
            models.Index(
                fields=["domain", "owed_at", "place", "opened_at", "key"],
                name="timer_tick_order",
                condition=Q(status="armed"),
            ),
            # `timers list --on` and GET /timers?on=.
            models.Index(fields=["domain", "owner"], name="timer_domain_owner"),
            # The owner console's late list.
            models.Index(fields=["late_by"], name="timer_late", condition=Q(late_by__gt=timedelta(minutes=5))),
            # /metrics (timers/metrics.py) counts held timers per domain and why; few are held at once.
            models.Index(fields=["domain", "held_by"], name="timer_held", condition=Q(status="held")),
        ]

    def __str__(self) -> str:
        return self.key

    def commit(self) -> Commit | None:
        return Commit.objects.filter(domain=self.domain, key=self.key).first()


class Commit(models.Model):
    """The gate's answer under one key: committed or refused, once, whatever the number of wakes."""

    class Outcome(models.TextChoices):
        COMMITTED = "committed"
        REFUSED = "refused"

    id = IdField(primary_key=True, max_length=32, default=new_commit_id, editable=False)
    domain = models.CharField(max_length=32)
    key = ByteOrderCharField(max_length=255)
    timer_id = models.CharField(max_length=32)
    outcome = models.CharField(max_length=12, choices=Outcome.choices)
    code = models.CharField(max_length=64, blank=True)
    at = models.DateTimeField(help_text="The instant the gate committed, in the domain's time.")

    class Meta:
        constraints = [
            # Exactly once: the gate commits a key once per clock domain; this is the constraint, not a check.
            models.UniqueConstraint(fields=["domain", "key"], name="commit_key_once_per_domain"),
        ]

    def __str__(self) -> str:
        return f"{self.outcome} {self.key}"


# late_by's histogram buckets, in seconds (/metrics): a second's jitter, the minutes up to a warning (300 s),
# then outages. A fire's bucket is the first bound its late_by does not exceed; past the last, len(...).
# From 1 ms: a live fire is tens of milliseconds late (bench/README.md, the soak), which a first bucket of 1 s
# could not show. Migration 0020 moved the rows counted before under the old indexes.
LATE_BUCKETS = (0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5,
                1.0, 5.0, 15.0, 60.0, 300.0, 900.0, 3600.0, 21600.0, 86400.0)


class FireTally(models.Model):
    """Fires through the gate, counted as they commit: a row per clock domain, kind, outcome and late_by
    bucket, added to by each batch in its own transaction (timers/engine.py). /metrics sums these rows,
    where it used to count every fired timer at every scrape. A domain's rows are written only by its lease
    holder, so two workers never wait on one row."""

    # Where the counts of deleted test clocks are folded (timers.test_clocks.fire_tally_retire): no clock id has a
    # colon, and the label it scrapes under is clock="test", like theirs.
    RETIRED = "test:retired"
    LIVE_RETIRED = "live_:retired"  # deleted brands' live clocks: counted live (live_…), no brand's id

    domain = models.CharField(max_length=32)
    kind = models.CharField(max_length=16)
    outcome = models.CharField(max_length=12, choices=Commit.Outcome.choices)
    bucket = models.PositiveSmallIntegerField(help_text="Index into LATE_BUCKETS; len(LATE_BUCKETS) is +Inf")
    fires = models.BigIntegerField(default=0)
    late_seconds = models.FloatField(default=0.0, help_text="The sum of these fires' late_by")

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["domain", "kind", "outcome", "bucket"], name="fire_tally_one_row"),
            models.CheckConstraint(condition=Q(fires__gte=0) & Q(late_seconds__gte=0), name="fire_tally_not_negative"),
        ]

    def __str__(self) -> str:
        return f"{self.domain} {self.kind} {self.outcome} [{self.bucket}] {self.fires}"


class Event(models.Model):
    """The record: append-only. Order is seq within a domain, which is tick order."""

    seq = models.BigAutoField(primary_key=True)
    id = IdField(max_length=32, unique=True, default=new_event_id, editable=False)
    domain = models.CharField(max_length=32)
    # Indexed by event_brand_type, whose first column it is.
    brand = models.ForeignKey(Brand, on_delete=models.CASCADE, related_name="events", null=True, db_index=False)
    type = models.CharField(max_length=64)
    subject = models.CharField(max_length=160, blank=True)
    owed_at = models.DateTimeField(null=True, blank=True)
    key = ByteOrderCharField(max_length=255, blank=True)
    data = models.JSONField(default=dict, blank=True)
    fired_at = models.DateTimeField(null=True, blank=True)
    # How late the firing that wrote it was (live: fired_at less owed_at, or less armed_at if armed after it
    # was owed; 0 on a test clock). Not in the record's hash: it differs by way.
    late_by = models.DurationField(null=True, blank=True)

    class Meta:
        indexes = [
            models.Index(fields=["domain", "seq"], name="event_domain_seq"),
            models.Index(fields=["brand", "type", "seq"], name="event_brand_type"),
            models.Index(fields=["domain", "key"], name="event_domain_key"),
            # A subject's calendar (calendars/entries.py, clock_entries): how a kept date was kept, read from
            # the domain's clock.satisfied events by subject; a small slice of the record.
            models.Index(fields=["domain", "subject"], name="event_clock_satisfied",
                         condition=Q(type="clock.satisfied")),
            # A subject's history (a job's or a clock item's events, in order): the owner console's at-risk
            # jobs (portals/owner/dashboard.py) and any read of one subject's record. Without it such a read
            # walks the domain's or the brand's whole record: 100x slower at 10M events (docs/scaling.md,
            # "The record at 10M events"). Created CONCURRENTLY on PostgreSQL (migration 0012).
            models.Index(fields=["domain", "subject", "type", "seq"], name="event_domain_subject"),
        ]

    def __str__(self) -> str:
        return f"{self.type} {self.key}"
