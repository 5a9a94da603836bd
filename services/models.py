"""Subscriptions, jobs and money lines: what a Service runs for a subject."""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.db.models import Q

from calendars.models import Contact, Subject
from timers.fields import IdField
from timers.ids import new_id
from timers.models import Brand


def new_subscription_id() -> str:
    return new_id("sbn", length=10)


def new_job_id() -> str:
    return new_id("job", length=10)


def new_money_id() -> str:
    return new_id("mny")


class Subscription(models.Model):
    """A Service ordered for a subject: its cycle renews, its schedules mint jobs."""

    class Status(models.TextChoices):
        ACTIVE = "active"
        ENDED = "ended"  # canceled at the cycle's end, and the end came
        VOIDED = "voided"  # its test clock was deleted

    id = IdField(primary_key=True, max_length=32, default=new_subscription_id, editable=False)
    brand = models.ForeignKey(Brand, on_delete=models.CASCADE, related_name="subscriptions")
    domain = models.CharField(max_length=32, default="live")
    subject = models.ForeignKey(Subject, on_delete=models.CASCADE, related_name="subscriptions")
    service = models.CharField(max_length=64)
    version = models.CharField(max_length=80, blank=True)
    input = models.JSONField(default=dict, blank=True)
    status = models.CharField(max_length=12, choices=Status.choices, default=Status.ACTIVE)
    cancel_at_period_end = models.BooleanField(default=False)
    paused_at = models.DateTimeField(null=True, blank=True, help_text="its schedules mint nothing while paused")
    pause_note = models.CharField(max_length=200, blank=True)
    cycle = models.PositiveIntegerField(default=1)
    cycle_started_at = models.DateTimeField()
    usage = models.JSONField(default=dict, blank=True, help_text="allowances used this cycle, by Service")
    opened_at = models.DateTimeField()
    metadata = models.JSONField(default=dict, blank=True, help_text="the brand's own keys and values (Stripe's)")

    class Meta:
        constraints = [
            # A plan runs once per subject at a time: a second would mint every job twice.
            models.UniqueConstraint(fields=["subject", "service"], condition=Q(status="active"),
                                    name="subscription_one_active_per_plan"),
        ]

    def __str__(self) -> str:
        return f"{self.id} {self.service}"


class Job(models.Model):
    class Status(models.TextChoices):
        OPEN = "open"
        DELIVERED = "delivered"
        LAPSED = "lapsed"
        CANCELED = "canceled"
        VOIDED = "voided"

    id = IdField(primary_key=True, max_length=32, default=new_job_id, editable=False)
    brand = models.ForeignKey(Brand, on_delete=models.CASCADE, related_name="jobs")
    domain = models.CharField(max_length=32, default="live")
    service = models.CharField(max_length=64)
    version = models.CharField(max_length=80, blank=True)
    subject = models.ForeignKey(Subject, on_delete=models.CASCADE, related_name="jobs")
    subscription = models.ForeignKey(Subscription, on_delete=models.CASCADE, null=True, blank=True,
                                     related_name="jobs")
    schedule = models.CharField(max_length=64, blank=True, help_text="the schedule that minted it")
    period = models.CharField(max_length=32)
    input = models.JSONField(default=dict, blank=True)
    status = models.CharField(max_length=12, choices=Status.choices, default=Status.OPEN)
    price_cents = models.IntegerField(default=0)
    late_at = models.DateTimeField(null=True, blank=True)
    late = models.BooleanField(default=False)
    waiting_on = models.CharField(
        max_length=200, blank=True, help_text="The party the work waits on; while set, its at-risk timer is held")
    last_activity_at = models.DateTimeField(
        null=True, blank=True, help_text="the last job.activity: a silent signal reads it when it fires")
    step = models.CharField(max_length=40, blank=True, help_text="the current step of its delivery")
    step_entry = models.PositiveIntegerField(
        default=0, help_text="how many times a step was entered: names the current step's Task, ask and timers")
    opened_at = models.DateTimeField()
    closed_at = models.DateTimeField(null=True, blank=True)
    metadata = models.JSONField(default=dict, blank=True, help_text="the brand's own keys and values (Stripe's)")

    class Meta:
        constraints = [
            # period_taken: a schedule mints each period once, however often it is woken. Orders take no
            # schedule's slot (a return and a notice's reply of one year are both ordered): an order's id
            # names its Service and period, and is the one a mint of that period under the plan would take.
            models.UniqueConstraint(fields=["subscription", "schedule", "period"], name="period_taken",
                                    condition=Q(subscription__isnull=False) & ~Q(schedule="order")),
        ]

    def __str__(self) -> str:
        return f"{self.id} {self.service} {self.period}"


class MoneyLine(models.Model):
    """One line of the ledger, an integer amount in the currency's smallest unit (cents for usd). Money moves
    last in an instant (place 8).

    Who each kind is between: a hold is the buyer's funds put aside; a charge moves them (or a cycle's price)
    to the brand, a release returns what a hold did not charge, a credit or a refund comes off the brand's
    line back to the buyer; a pay is the member's share of an act they did, owed by the brand to them. A
    member's pay is its own line so nothing that comes off the brand's line (a late price, a guarantee's
    credit, a lapse) can touch it."""

    class Kind(models.TextChoices):
        CHARGE = "charge"
        CREDIT = "credit"
        REFUND = "refund"
        HOLD = "hold"
        RELEASE = "release"
        PAY = "pay"

    class Status(models.TextChoices):
        OWED = "owed"
        COLLECTED = "collected"
        VOID = "void"

    id = IdField(primary_key=True, max_length=32, default=new_money_id, editable=False)
    brand = models.ForeignKey(Brand, on_delete=models.CASCADE, related_name="money")
    domain = models.CharField(max_length=32, default="live")
    subscription = models.ForeignKey(Subscription, on_delete=models.CASCADE, null=True, blank=True,
                                     related_name="money")
    job = models.ForeignKey(Job, on_delete=models.CASCADE, null=True, blank=True, related_name="money")
    kind = models.CharField(max_length=8, choices=Kind.choices)
    amount_cents = models.IntegerField()
    currency = models.CharField(max_length=3, default="usd")
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.OWED)
    memo = models.CharField(max_length=200, blank=True)
    step = models.CharField(max_length=40, blank=True, help_text="the act it charges: a step done")
    # PROTECT: a member's earnings are the record of what they were owed; a user with pay is deactivated,
    # never deleted (removing a membership keeps the user).
    member = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, null=True, blank=True,
                               related_name="pay", help_text="a pay line's member: who did the act")
    owed_at = models.DateTimeField()
    collected_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        constraints = [
            models.CheckConstraint(name="money_amount_positive", condition=Q(amount_cents__gte=0)),
            models.CheckConstraint(name="money_kind_known",
                                   condition=Q(kind__in=["charge", "credit", "refund", "hold", "release", "pay"])),
            # A pay line is to a member, and only a pay line is: the brand's lines never name one.
            models.CheckConstraint(name="money_pay_has_member",
                                   condition=Q(kind="pay", member__isnull=False) | (~Q(kind="pay")
                                                                                    & Q(member__isnull=True))),
        ]
        indexes = [
            # A member's earnings over a period (services/ledger.py, member_earnings).
            models.Index(fields=["member", "owed_at"], name="money_member_owed",
                         condition=Q(member__isnull=False)),
        ]

    def __str__(self) -> str:
        return f"{self.kind} {self.amount_cents / 100:.2f} {self.currency}"


def new_notification_id() -> str:
    return new_id("ntf")


class Notification(models.Model):
    """Who hears a lapse: one row per recipient (a person or a role by name), read by the apps.

    Written inside the firing that raised it (the gate commits it with the lapse, or nothing); the unique
    constraint means a replay or a redelivered wake never notifies twice. Each one also leaves as one email
    through the outbox ("email" transport), exactly once.
    """

    id = IdField(primary_key=True, max_length=32, default=new_notification_id, editable=False)
    brand = models.ForeignKey(Brand, on_delete=models.CASCADE, db_index=False, related_name="notifications")
    domain = models.CharField(max_length=32, default="live")
    recipient = models.CharField(max_length=200, help_text='who, by name: "Ada Lovelace", "Olive Owner"; "owner" '
                                                          "for a brand with no owner of record")
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True,
                             related_name="notifications", help_text="the recipient's account: a member's")
    contact = models.ForeignKey(Contact, on_delete=models.SET_NULL, null=True, blank=True,
                                related_name="notifications", help_text="the recipient: a customer's contact")
    email = models.EmailField(max_length=254, blank=True, default="", help_text="where its email went; empty: no email")
    kind = models.CharField(max_length=40, help_text="clock.due, clock.passed, job.lapsed …")
    subject = models.CharField(max_length=64, help_text="what lapsed: the clock item or job id")
    key = models.CharField(max_length=255, help_text="the timer key whose firing raised it")
    message = models.TextField()
    created_at = models.DateTimeField(help_text="the domain's time of the lapse")
    read_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["domain", "key", "recipient", "kind"], name="notification_once"),
        ]
        indexes = [models.Index(fields=["brand", "domain", "recipient", "created_at"], name="notification_inbox")]

    def __str__(self) -> str:
        return f"{self.kind} {self.subject} → {self.recipient}"


def new_task_id() -> str:
    return new_id("tsk", length=10)


class Task(models.Model):
    """A step done by a member of a Pool. A member takes it for the pool's hold (warned at three quarters);
    at the hold's end the Task opens again for the pool. A hold is extended once."""

    class Status(models.TextChoices):
        OPEN = "open"  # the pool's: any member may take it
        TAKEN = "taken"
        DONE = "done"
        CANCELED = "canceled"  # the job left the step (a goto, a lapse, a cancel)

    id = IdField(primary_key=True, max_length=32, default=new_task_id, editable=False)
    brand = models.ForeignKey(Brand, on_delete=models.CASCADE, related_name="tasks")
    domain = models.CharField(max_length=32, default="live")
    job = models.ForeignKey(Job, on_delete=models.CASCADE, db_index=False, related_name="tasks")
    step = models.CharField(max_length=40)
    entry = models.PositiveIntegerField(help_text="the job's step entry this Task belongs to")
    pool = models.CharField(max_length=40)
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.OPEN)
    member = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, db_index=False, null=True, blank=True,
                               related_name="tasks")
    takes = models.PositiveIntegerField(default=0, help_text="how many times it was taken: names the hold's timers")
    taken_at = models.DateTimeField(null=True, blank=True)
    hold_until = models.DateTimeField(null=True, blank=True)
    extended = models.BooleanField(default=False, help_text="this take's hold was extended")
    extensions = models.PositiveSmallIntegerField(
        default=0, db_default=0, help_text="holds extended on this Task, whoever took it: once per Task, whatever takes and "
                             "give-backs happen")
    due_at = models.DateTimeField(null=True, blank=True, help_text="the step's deadline (deliver.<step>.within)")
    opened_at = models.DateTimeField()
    closed_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["job", "entry"], name="task_once_per_entry"),
            # A taken Task names its member and when the hold ends; an open one holds for no one.
            models.CheckConstraint(name="task_taken_has_hold", condition=(
                Q(status="taken", member__isnull=False, hold_until__isnull=False)
                | (~Q(status="taken") & Q(hold_until__isnull=True)))),
        ]
        indexes = [models.Index(fields=["member", "status"], name="task_member_status")]  # the delivery portal

    def __str__(self) -> str:
        return f"{self.id} {self.step}"


def new_ask_id() -> str:
    return new_id("ask", length=10)


class Ask(models.Model):
    """A step (or a grant) waiting on a party through a link. The link is sent once and may open once more:
    ``link`` 1, then 2. The second expiry ends the job lapsed."""

    class Status(models.TextChoices):
        OPEN = "open"
        ANSWERED = "answered"
        EXPIRED = "expired"
        CANCELED = "canceled"

    id = IdField(primary_key=True, max_length=32, default=new_ask_id, editable=False)
    brand = models.ForeignKey(Brand, on_delete=models.CASCADE, related_name="asks")
    domain = models.CharField(max_length=32, default="live")
    job = models.ForeignKey(Job, on_delete=models.CASCADE, db_index=False, related_name="asks")
    step = models.CharField(max_length=40, blank=True)
    scope = models.CharField(max_length=40, blank=True, help_text="a grant asked for again, once its term ended")
    entry = models.PositiveIntegerField(help_text="the step entry, or the grant's number")
    party = models.CharField(max_length=200)
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.OPEN)
    link = models.PositiveSmallIntegerField(default=1, help_text="1: sent; 2: opened once more after an expiry")
    expires_at = models.DateTimeField(null=True, blank=True)
    sent_at = models.DateTimeField()
    answered_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["job", "step", "scope", "entry"], name="ask_once"),
            models.CheckConstraint(name="ask_link_once_more", condition=Q(link__in=[1, 2])),
            models.CheckConstraint(name="ask_step_or_scope", condition=(
                (Q(step="") & ~Q(scope="")) | (~Q(step="") & Q(scope="")))),
        ]

    def __str__(self) -> str:
        return f"{self.id} {self.step or self.scope} → {self.party}"


def new_grant_id() -> str:
    return new_id("grt", length=10)


class Grant(models.Model):
    """A party's grant of a scope for a term (scope.<g>.for)."""

    class Status(models.TextChoices):
        ACTIVE = "active"
        ENDED = "ended"

    id = IdField(primary_key=True, max_length=32, default=new_grant_id, editable=False)
    brand = models.ForeignKey(Brand, on_delete=models.CASCADE, related_name="grants")
    domain = models.CharField(max_length=32, default="live")
    job = models.ForeignKey(Job, on_delete=models.CASCADE, db_index=False, related_name="grants")
    scope = models.CharField(max_length=40)
    number = models.PositiveIntegerField(help_text="the nth grant of this scope on the job")
    party = models.CharField(max_length=200)
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.ACTIVE)
    granted_at = models.DateTimeField()
    ends_at = models.DateTimeField()

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["job", "scope", "number"], name="grant_numbered"),
            models.CheckConstraint(name="grant_ends_after_start", condition=Q(ends_at__gt=models.F("granted_at"))),
        ]

    def __str__(self) -> str:
        return f"{self.id} {self.scope}"


def new_window_id() -> str:
    return new_id("win", length=10)


class Window(models.Model):
    """A member's standby window: opened for a span and closed at its end (a timer) or by the member."""

    class Status(models.TextChoices):
        OPEN = "open"
        CLOSED = "closed"

    id = IdField(primary_key=True, max_length=32, default=new_window_id, editable=False)
    brand = models.ForeignKey(Brand, on_delete=models.CASCADE, related_name="windows")
    domain = models.CharField(max_length=32, default="live")
    member = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="windows")
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.OPEN)
    opened_at = models.DateTimeField()
    closes_at = models.DateTimeField()
    closed_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        constraints = [
            # One standby at a time per member and clock domain.
            models.UniqueConstraint(fields=["member", "domain"], condition=Q(status="open"), name="window_one_open"),
            models.CheckConstraint(name="window_closes_after_open", condition=Q(closes_at__gt=models.F("opened_at"))),
        ]

    def __str__(self) -> str:
        return f"{self.id} {self.member_id}"


class PolicyValue(models.Model):
    """A brand's value of a Service's policy (stall_days), set with policy.set; the declaration's default
    holds until one is set."""

    brand = models.ForeignKey(Brand, on_delete=models.CASCADE, db_index=False, related_name="policy_values")
    domain = models.CharField(max_length=32, default="live")
    service = models.CharField(max_length=64)
    name = models.CharField(max_length=40)
    value = models.PositiveIntegerField()
    set_at = models.DateTimeField()

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["brand", "domain", "service", "name"], name="policy_value_once"),
            models.CheckConstraint(name="policy_value_positive", condition=Q(value__gte=1)),
        ]

    def __str__(self) -> str:
        return f"{self.service}.{self.name} = {self.value}"


def new_portal_session_id() -> str:
    return new_id("pts")


class PortalSession(models.Model):
    """A link the brand makes for one subject's customer (``POST /portal_sessions``, Stripe's customer-portal
    sessions): valid for an hour, it signs the customer in to the customer portal for that subject. Only the
    token's sha256 is stored."""

    id = IdField(primary_key=True, max_length=32, default=new_portal_session_id, editable=False)
    brand = models.ForeignKey(Brand, on_delete=models.CASCADE, related_name="portal_sessions")
    subject = models.ForeignKey(Subject, on_delete=models.CASCADE, related_name="portal_sessions")
    contact = models.ForeignKey(Contact, on_delete=models.CASCADE, null=True, blank=True,
                                related_name="portal_sessions", help_text="Who it is for: the page's 'you'")
    digest = models.CharField(max_length=64, unique=True)
    created_at = models.DateTimeField()
    expires_at = models.DateTimeField()
    used_at = models.DateTimeField(null=True, blank=True, help_text="When the link signed someone in: it works once")

    class Meta:
        constraints = [models.CheckConstraint(name="portal_session_expires_after_creation",
                                              condition=models.Q(expires_at__gt=models.F("created_at")))]

    def __str__(self) -> str:
        return f"{self.id} · {self.subject_id}"


class PoolMember(models.Model):
    """Who is in a pool: data the owner console edits, never a deploy. A Service declares a pool by name and
    its hold (``Pool(hold="2d")``); a member of the brand in the pool of that name may take its Tasks."""

    brand = models.ForeignKey(Brand, on_delete=models.CASCADE, db_index=False, related_name="pool_members")
    pool = models.CharField(max_length=40, help_text="the pool's name, as Services declare it: brokers")
    membership = models.ForeignKey("timers.Membership", on_delete=models.CASCADE, db_index=False, related_name="pools")
    added_at = models.DateTimeField()

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["membership", "pool"], name="pool_member_once"),
        ]
        indexes = [
            # task_take and the delivery portal: is this member in the pool; who is in it.
            models.Index(fields=["brand", "pool"], name="pool_member_brand_pool"),
        ]

    def __str__(self) -> str:
        return f"{self.pool}: {self.membership.user}"
