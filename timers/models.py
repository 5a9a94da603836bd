"""The runtime's tables: brands and their keys, test clocks, timers, the gate's commits, the record, the outbox.

A clock domain is a brand's live clock (live_<brand id>) or one test clock (its id). Keys are unique per
domain. One worker holds a domain at a time: its Lease row (timers/lease.py).
"""

from __future__ import annotations

from datetime import timedelta

from django.conf import settings
from django.db import models
from django.db.models import Q
from django.db.models.functions import Now

from .fields import ByteOrderCharField, IdField
from .ids import LIVE, LIVE_PREFIX, brand_domain, is_live, live_domain, new_id
from .keys import KINDS

__all__ = ["LIVE", "LIVE_PREFIX", "brand_domain", "in_domain", "is_live", "live_domain"]


def in_domain(domain: str, field: str = "domain") -> Q:
    """Rows on ``domain``; "live" (what a console's "as of" names) is every brand's live clock, which a
    brand filter beside it narrows to the brands shown."""
    return Q(**{f"{field}__startswith": LIVE_PREFIX}) if domain == LIVE else Q(**{field: domain})


def new_brand_id() -> str:
    return new_id("brd")


def new_key_id() -> str:
    return new_id("key")


def new_test_clock_id() -> str:
    return new_id("tc")


def new_timer_id() -> str:
    return new_id("tmr")


def new_event_id() -> str:
    return new_id("evt")


def new_commit_id() -> str:
    return new_id("cmt")


class Brand(models.Model):
    """The tenant: a brand owns its test clocks, timers and events, and sees only its own."""

    class Tier(models.TextChoices):
        # What time runs live (services/tiers.py): on a test clock every key runs on every tier.
        FREE = "free"  # time that stays on the job
        LAUNCH = "launch"  # time a Service holds for someone past the job: schedules, cycles, subject clocks
        TEAM = "team"  # time that needs a market of people (pools), or is sold as a guarantee

    id = IdField(primary_key=True, max_length=32, default=new_brand_id, editable=False)
    name = models.CharField(max_length=200, unique=True)
    tier = models.CharField(max_length=8, choices=Tier.choices, default=Tier.TEAM)
    created_at = models.DateTimeField()

    class Meta:
        constraints = [models.CheckConstraint(name="brand_tier_known", condition=models.Q(tier__in=["free", "launch",
                                                                                                   "team"]))]

    def __str__(self) -> str:
        return self.name


class ApiKey(models.Model):
    """A brand's secret key, stored as its sha256: the secret itself is shown once, at creation."""

    id = IdField(primary_key=True, max_length=32, default=new_key_id, editable=False)
    brand = models.ForeignKey(Brand, on_delete=models.CASCADE, related_name="api_keys")
    name = models.CharField(max_length=200, blank=True)
    prefix = models.CharField(max_length=16, help_text="The first characters, to recognise a key.")
    digest = models.CharField(max_length=64, unique=True)
    created_at = models.DateTimeField()
    revoked_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        verbose_name = "API key"

    def __str__(self) -> str:
        return f"{self.prefix}… ({self.brand})"


class Membership(models.Model):
    """A person's place in a brand, part of the tenant beside it: an owner signs in to the owner console (a
    staff user) and sees only the brand's objects; a member signs in to the delivery portal and sees only their
    own Tasks and clocks. Pools (services.PoolMember) and clocks' answers_for name members."""

    class Role(models.TextChoices):
        OWNER = "owner"
        MEMBER = "member"

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="memberships")
    brand = models.ForeignKey(Brand, on_delete=models.CASCADE, related_name="memberships")
    role = models.CharField(max_length=8, choices=Role.choices)
    name = models.CharField(max_length=200, blank=True,
                            help_text="The name clocks and notifications use for this person (answers_for)")
    zone = models.CharField(max_length=64, blank=True,
                            help_text="The zone the delivery portal says this person's times in (an IANA name); "
                                      "blank: the brand calendar's")

    class Meta:
        verbose_name = "member"
        constraints = [
            models.UniqueConstraint(fields=["user", "brand"], name="membership_once"),
            models.CheckConstraint(name="membership_role_known", condition=Q(role__in=["owner", "member"])),
        ]

    def __str__(self) -> str:
        return f"{self.user} · {self.role} of {self.brand}"

    @property
    def display_name(self) -> str:
        return self.name or self.user.get_full_name() or self.user.get_username()


class IdempotencyKey(models.Model):
    """A POST's first answer under its Idempotency-Key, kept 24 hours (Stripe's rules, timers/api/idempotency.py).

    Written in the request's own transaction with what the request did, so an answer is kept exactly when its
    effects are; a request that died left neither, and its key is free again."""

    brand = models.ForeignKey(Brand, on_delete=models.CASCADE, related_name="idempotency_keys")
    livemode = models.BooleanField(help_text="The mode of the key that sent it: a key's answers are its mode's")
    key = models.CharField(max_length=255)
    request_digest = models.CharField(max_length=64, help_text="sha256 of the method, path and body")
    method = models.CharField(max_length=8)
    path = models.CharField(max_length=2000)
    status = models.PositiveSmallIntegerField()
    content_type = models.CharField(max_length=100)
    body = models.BinaryField()
    created_at = models.DateTimeField(help_text="Wall time of the first request")

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["brand", "livemode", "key"], name="idempotency_key_once"),
        ]
        indexes = [
            # timers/api/idempotency.py prunes answers older than a day, oldest first.
            models.Index(fields=["created_at"], name="idempotency_key_age"),
        ]

    def __str__(self) -> str:
        return f"{self.key} → {self.status}"


class TestClock(models.Model):
    """A frozen time that moves only forward; each one is its own clock domain."""

    __test__ = False  # not a pytest class

    class Status(models.TextChoices):
        READY = "ready"
        ADVANCING = "advancing"
        INTERNAL_FAILURE = "internal_failure"
        DELETING = "deleting"  # marked: its advance stops at the next batch, then it is voided under its lease
        DELETED = "deleted"

    GONE = ("deleting", "deleted")

    id = IdField(primary_key=True, max_length=32, default=new_test_clock_id, editable=False)
    brand = models.ForeignKey(Brand, on_delete=models.CASCADE, related_name="test_clocks")
    name = models.CharField(max_length=200, blank=True)
    frozen_time = models.DateTimeField()
    status = models.CharField(max_length=20, choices=Status.choices, default=Status.READY)
    advance_to = models.DateTimeField(null=True, blank=True)
    redeliver = models.BooleanField(default=False)
    failure = models.TextField(blank=True)
    # Writes the runtime made to the clock's objects outside the tick's batches while it advanced (a send's
    # receipt, timers.domains.domain_writable(runtime=True)): a run that keeps rows from one batch to the
    # next lets them go when this moves (timers/worker.py, advance).
    runtime_writes = models.BigIntegerField(default=0, db_default=0)
    seed = models.CharField(
        max_length=64, blank=True,
        help_text="Ids minted in this domain derive from the seed and the key; blank means the clock's id.")
    created_at = models.DateTimeField()

    class Meta:
        constraints = [
            models.CheckConstraint(
                name="test_clock_advancing_has_target",
                condition=~Q(status="advancing") | Q(advance_to__isnull=False),
            ),
            # Ids minted on a clock derive from its seed: two clocks of one seed would mint the same keys'
            # ids. A deleted clock keeps its rows, so it holds its seed until they are removed.
            models.UniqueConstraint(fields=["seed"], condition=~Q(seed=""), name="test_clock_seed_once"),
        ]
        indexes = [
            # The advance queue: `tick` (timers/worker.py, run_requested_advances) claims the oldest requested
            # advance with SKIP LOCKED, ORDER BY created_at LIMIT 1; in created_at order, so no sort.
            models.Index(fields=["created_at", "id"], name="test_clock_advance_queue",
                         condition=Q(status="advancing")),
            # `tick` (timers/worker.py, finish_deletes) looks for deletes whose requester died, every step.
            models.Index(fields=["id"], name="test_clock_deleting", condition=Q(status="deleting")),
        ]

    def __str__(self) -> str:
        return self.id


class Version(models.Model):
    """A bundle of Service code, content-addressed: the Service module and every module it imports from
    its own package, their source stored. Never edited; never deleted while anything pins it."""

    digest = models.CharField(primary_key=True, max_length=80, help_text="sha256:… over the files")
    name = models.CharField(max_length=64, blank=True, help_text="A deploy's name, e.g. 2027-06")
    module = models.CharField(max_length=200, help_text="The entry module's dotted path")
    services = models.JSONField(default=list, help_text="The Services the bundle declares")
    sources = models.JSONField(default=dict, help_text="{module name: {path, source}} for each file")
    created_at = models.DateTimeField()

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["name"], condition=~Q(name=""), name="version_name_once"),
        ]

    def __str__(self) -> str:
        return self.name or self.digest[:15]

    @property
    def label(self) -> str:
        """How headers print it: the name where it has one, else the short hash."""
        return self.name or self.digest[:15]


class Deploy(models.Model):
    """A version going live for a Service in a clock domain at an instant (a test clock replays deploys)."""

    domain = models.CharField(max_length=32, help_text='"live" or the test clock id')
    service = models.CharField(max_length=64)
    version = models.ForeignKey(Version, on_delete=models.PROTECT, related_name="deploys")
    at = models.DateTimeField(help_text="From this instant in the domain's time, new work pins the version")
    created_at = models.DateTimeField()

    class Meta:
        indexes = [
            # registry.live_version: the latest deploy of a Service in a domain at or before now.
            models.Index(fields=["domain", "service", "at"], name="deploy_live"),
        ]

    def __str__(self) -> str:
        return f"{self.service} {self.version} on {self.domain} at {self.at}"


class LiveClock(models.Model):
    """How far a brand's live clock domain (live_<brand id>) has ticked: the floor of the next instant it
    visits. The live loop runs the domains these rows name, each on its own (timers/worker.py)."""

    id = models.CharField(primary_key=True, max_length=32)
    position = models.DateTimeField(null=True, blank=True)

    def __str__(self) -> str:
        return f"{self.id} at {self.position}"


class Lease(models.Model):
    """Who holds a clock domain: one row per domain, taken by one conditional upsert that bumps the epoch
    (timers/lease.py). Every batch the holder writes first renews the row under its epoch, in the batch's
    transaction: a holder whose lease was taken over finds no row and writes nothing (the fence)."""

    domain = models.CharField(primary_key=True, max_length=32)
    holder = models.CharField(max_length=120)
    epoch = models.BigIntegerField()
    expires = models.DateTimeField(help_text="Anyone may take the domain after this; the holder renews it.")
    session = models.CharField(max_length=64, blank=True, default="",
                               help_text="The holder's database session (PostgreSQL): once it ends, the lease is free")

    class Meta:
        constraints = [models.CheckConstraint(name="lease_epoch_positive", condition=Q(epoch__gte=1))]

    def __str__(self) -> str:
        return f"{self.domain} #{self.epoch} {self.holder}"


class LeaseTerm(models.Model):
    """The history of a domain's leases, a row per epoch, written with the take: one holder per epoch (the
    constraint), and when each term began and was let go (null: its holder died and it expired)."""

    domain = models.CharField(max_length=32)
    epoch = models.BigIntegerField()
    holder = models.CharField(max_length=120)
    taken_at = models.DateTimeField()
    released_at = models.DateTimeField(null=True, blank=True)
    batches = models.PositiveIntegerField(default=0, help_text="Batches fenced under this term, counted at release")

    class Meta:
        constraints = [models.UniqueConstraint(fields=["domain", "epoch"], name="lease_term_one_holder_per_epoch")]

    def __str__(self) -> str:
        return f"{self.domain} #{self.epoch} {self.holder}"


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
            # The tick's claim query (timers/engine.py, Store.fetch): armed timers in tick order.
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


OUTBOX_OWED_IN_ORDER = models.Index(fields=["domain", "key", "attempt", "seq"], name="outbox_owed_in_order",
                                    condition=Q(transport="webhook", status__in=["pending", "sending"]))


class Outbox(models.Model):
    """Sends to outside systems leave from here after the commit, one submission id per attempt.

    A sender claims rows with a lease (``claimed_by``, ``lease_until``). A row claimed by a sender whose
    lease expired, or whose database session is gone (killed mid-send), is *in doubt*: the next sender
    asks the outside system about that submission before it sends anything again. A row being sent by a
    live sender is not in doubt and is left alone.
    """

    class Status(models.TextChoices):
        PENDING = "pending"
        SENDING = "sending"
        SENT = "sent"
        FAILED = "failed"
        VOIDED = "voided"  # its test clock was deleted before it left

    id = IdField(primary_key=True, max_length=40, help_text="The submission id.")
    domain = models.CharField(max_length=32)
    brand = models.ForeignKey(Brand, on_delete=models.CASCADE, related_name="outbox", null=True)
    key = ByteOrderCharField(max_length=255)
    attempt = models.PositiveIntegerField()
    seq = models.PositiveSmallIntegerField(default=0, db_default=0, help_text="The firing's sends, from 0")
    transport = models.CharField(max_length=64)
    payload = models.JSONField(default=dict)
    status = models.CharField(max_length=12, choices=Status.choices, default=Status.PENDING)
    receipt = models.JSONField(null=True, blank=True)
    error = models.TextField(blank=True)
    created_at = models.DateTimeField()
    sent_at = models.DateTimeField(null=True, blank=True)
    claimed_by = models.CharField(max_length=80, blank=True, help_text="The sender holding (or last holding) it.")
    lease_until = models.DateTimeField(null=True, blank=True)
    tries = models.PositiveIntegerField(default=0, db_default=0, help_text="Sends that raised.")
    next_try_at = models.DateTimeField(null=True, blank=True, help_text="Not claimed again before this.")

    class Meta:
        verbose_name = "outbox send"
        constraints = [
            models.UniqueConstraint(fields=["domain", "key", "attempt", "seq"], name="outbox_one_submission_per_send"),
            models.CheckConstraint(
                name="outbox_status_known",
                condition=Q(status__in=["pending", "sending", "sent", "failed", "voided"]),
            ),
            models.CheckConstraint(
                name="outbox_sending_is_claimed", condition=~Q(status="sending") | ~Q(claimed_by=""),
            ),
        ]
        indexes = [
            # The outbox sender (timers/outbox.py): _claim takes a domain's owed rows ORDER BY created_at, id
            # with SKIP LOCKED; every key is in the index, so the rows come out in claim order and the LIMIT
            # stops the scan (no sort of every owed row, whatever the planner's row estimate). Also
            # _owed_domains (the worker loop's sweep: a skip scan, a probe per domain) and _held_elsewhere.
            models.Index(fields=["domain", "created_at", "id"], name="outbox_owed_domain",
                         condition=Q(status__in=["pending", "sending"])),
            # An ordered domain's claim (timers/outbox.py, _claim_ordered: a webhook endpoint's deliveries, in
            # record order): its owed rows by key, so the head is the first index entry and the LIMIT stops the
            # scan, however long the endpoint's history. Only webhook rows: the tick's sends never pay for it.
            OUTBOX_OWED_IN_ORDER,
        ]

    def __str__(self) -> str:
        return f"{self.id} {self.status}"


# -- schedules: one mechanism that fires on a spec (timers/schedules.py) ---------------------------------
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
    brand = models.ForeignKey(Brand, on_delete=models.CASCADE, related_name="schedules")
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
    revision = models.PositiveIntegerField(default=1)
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
            models.UniqueConstraint(fields=["domain", "owner_ref"], condition=~Q(owner_ref=""),
                                    name="schedule_one_per_service_schedule"),
            # A user's schedule is named once per brand and clock (a Service's own are named by owner_ref).
            models.UniqueConstraint(fields=["brand", "domain", "name"], condition=Q(owner_ref="") & ~Q(name=""),
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
    schedule = models.ForeignKey(Schedule, on_delete=models.CASCADE, related_name="runs")
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
    schedule = models.ForeignKey(Schedule, on_delete=models.CASCADE, related_name="ticks")
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


# -- webhook endpoints: the brand's systems hear the record (timers/webhooks.py) ---------------------------
def new_webhook_endpoint_id() -> str:
    return new_id("we")


class WebhookEndpoint(models.Model):
    """Where a brand's own systems hear its record: every event an endpoint's ``enabled_events`` match is
    POSTed to ``url``, signed with ``secret``, through the outbox (transport ``webhook``), in record order.

    Mode-scoped as keys are: a live endpoint hears the brand's live clock, a test endpoint its test clocks.
    Its deliveries are outbox rows whose domain is the endpoint's id, so one endpoint's backlog is claimed
    and sent in order on its own, apart from the clocks' sends and from other endpoints."""

    class Status(models.TextChoices):
        ENABLED = "enabled"
        DISABLED = "disabled"  # hears nothing new; what it is owed waits, in order, until it is enabled again

    id = IdField(primary_key=True, max_length=32, default=new_webhook_endpoint_id, editable=False)
    brand = models.ForeignKey(Brand, on_delete=models.CASCADE, related_name="webhook_endpoints")
    livemode = models.BooleanField(help_text="Hears the live clock (a live key made it), else the test clocks")
    url = models.CharField(max_length=2048)
    enabled_events = models.JSONField(default=list, help_text='Event types: "*", an exact type, or "prefix.*"')
    secret = models.CharField(max_length=80, help_text="Signs each delivery (whsec_…); shown once, at creation")
    status = models.CharField(max_length=8, choices=Status.choices, default=Status.ENABLED)
    description = models.CharField(max_length=5000, blank=True)
    metadata = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField()

    class Meta:
        constraints = [
            models.CheckConstraint(name="webhook_endpoint_status_known",
                                   condition=Q(status__in=["enabled", "disabled"])),
        ]
        indexes = [
            # GET /webhook_endpoints: a brand's endpoints of one mode, in the order they were made.
            models.Index(fields=["brand", "livemode", "created_at", "id"], name="webhook_endpoint_list"),
            # The fan-out (timers/webhooks.py): which endpoints hear a batch's brand, one probe per batch.
            models.Index(fields=["brand", "livemode"], name="webhook_endpoint_hears",
                         condition=Q(status="enabled")),
        ]

    def __str__(self) -> str:
        return self.description or self.url


class WebhookAttempt(models.Model):
    """One try at delivering an event to an endpoint, written right after the POST returned (or failed): the
    delivery log the owner console shows, and what an in-doubt delivery is checked against before it is sent
    again (a 2xx here means it arrived)."""

    endpoint = models.ForeignKey(WebhookEndpoint, on_delete=models.CASCADE, related_name="attempts")
    event_id = models.CharField(max_length=32)
    event_type = models.CharField(max_length=64)
    submission = models.CharField(max_length=40, help_text="The outbox row (timers_outbox.id) this try sent")
    attempt = models.PositiveIntegerField(help_text="The n-th try of this event at this endpoint, resends included")
    at = models.DateTimeField(help_text="Wall time the POST left")
    status = models.PositiveSmallIntegerField(null=True, blank=True, help_text="The HTTP status, if it answered")
    answer = models.TextField(blank=True, help_text="The start of the answer's body")
    error = models.TextField(blank=True, help_text="Why it failed, when it did")
    duration_ms = models.PositiveIntegerField(default=0)

    class Meta:
        indexes = [
            # The console's delivery log: an endpoint's attempts, newest first.
            models.Index(fields=["endpoint", "-id"], name="webhook_attempt_log"),
            # An event's tries at an endpoint (the attempt number; the console's resend).
            models.Index(fields=["endpoint", "event_id"], name="webhook_attempt_event"),
            # Did this submission arrive? (an in-doubt delivery is asked here before it is sent again)
            models.Index(fields=["submission"], name="webhook_attempt_submission"),
        ]

    def __str__(self) -> str:
        return f"{self.event_type} → {self.status or self.error[:40]}"

    @property
    def ok(self) -> bool:
        return self.status is not None and 200 <= self.status < 300
