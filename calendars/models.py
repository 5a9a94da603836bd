"""Business calendars, subjects, and clocks: dates the world sets, one item per state or form.

A clock (clk_…) is one date-keeping of one owner (a job or a subject) for one period; each of its
items (#US, #US-CA…) has its own date, its own moves, and owns its timers (``clk_…#US:rung:…``).
"""

from __future__ import annotations

from datetime import time

from django.db import models
from django.db.models import Q

from timers.domains import domain_id
from timers.fields import IdField
from timers.ids import LIVE, is_live, new_id
from timers.models import Brand, Membership

from .civil import BusinessCalendar, calendar_from


def new_calendar_id() -> str:
    return new_id("cal")


def new_subject_id() -> str:
    return new_id("sbj")


def seeded_subject_id(*, brand: Brand, domain: str, kind: str, key: str) -> str:
    """A subject's id derived from its domain's seed and what it is, so the same scenario names it alike.

    A live subject's id derives from "live" and its brand (as when every brand's live clock was one domain,
    so a subject keeps its id across that split); a test clock belongs to one brand, and its (random) id
    must not enter a seeded scenario's ids."""
    if is_live(domain):
        return new_id("sbj", seed="|".join((LIVE, brand.id, kind, key)))
    return domain_id("sbj", domain, kind, key)


def new_contact_id() -> str:
    return new_id("ctc")


def new_proposal_id() -> str:
    return new_id("prp")


def new_clock_id() -> str:
    return new_id("clk", length=8)


def default_weekends() -> list[int]:
    return [5, 6]


class Calendar(models.Model):
    """Written on a brand or a Service: zone, weekends, closed days, and the minute a due closes."""

    id = IdField(primary_key=True, max_length=32, default=new_calendar_id, editable=False)
    brand = models.ForeignKey(Brand, on_delete=models.CASCADE, db_index=False, related_name="calendars")
    name = models.CharField(max_length=200)
    zone = models.CharField(max_length=64, default="UTC", help_text="An IANA zone, e.g. America/New_York")
    weekends = models.JSONField(default=default_weekends, help_text="0 Monday … 6 Sunday")
    closes = models.TimeField(default=time(23, 59))
    dst_skipped = models.CharField(
        max_length=16, choices=[("next_minute", "next_minute"), ("skip", "skip")], default="next_minute",
        db_default="next_minute",
        help_text="A local time the spring change skips: next_minute (it happens at the first minute after the gap) "
                  "or skip (a schedule's fire there does not happen)")
    dst_repeated = models.CharField(
        max_length=16, choices=[("first", "first"), ("second", "second")], default="first", db_default="first",
        help_text="A local time the fall change repeats: its first occurrence or its second")
    holiday_country = models.CharField(max_length=8, blank=True, help_text="holidays package country, e.g. US")
    holiday_subdiv = models.CharField(max_length=16, blank=True, help_text="its subdivision, e.g. DC")
    is_default = models.BooleanField(
        default=False, help_text="The brand's calendar: a subject that names none, of a Service that declares none, "
                                 "keeps its dates on it")
    metadata = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["brand", "name"], name="calendar_name_per_brand"),
            models.CheckConstraint(condition=Q(dst_skipped__in=["next_minute", "skip"]), name="calendar_dst_skipped"),
            models.CheckConstraint(condition=Q(dst_repeated__in=["first", "second"]), name="calendar_dst_repeated"),
            models.UniqueConstraint(fields=["brand"], condition=Q(is_default=True), name="calendar_one_default"),
        ]

    def __str__(self) -> str:
        return f"{self.name} ({self.zone})"

    def civil(self) -> BusinessCalendar:
        return calendar_from(
            zone=self.zone, weekends=self.weekends, closes=self.closes, holiday_country=self.holiday_country,
            holiday_subdiv=self.holiday_subdiv,
            closed_days={c.date: c.why for c in self.closed.all()}, name=self.name,
            dst_skipped=self.dst_skipped, dst_repeated=self.dst_repeated,
        )


class ClosedDay(models.Model):
    """A hand-written closed day (an IRS disaster day, a office closure)."""

    calendar = models.ForeignKey(Calendar, on_delete=models.CASCADE, db_index=False, related_name="closed")
    date = models.DateField()
    why = models.CharField(max_length=200)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["calendar", "date"], name="closed_day_once")]

    def __str__(self) -> str:
        return f"{self.date} {self.why}"


class Subject(models.Model):
    """Who the work is for, across jobs and years: a taxpayer by EIN, an account by domain."""

    id = IdField(primary_key=True, max_length=32, default=new_subject_id, editable=False)
    brand = models.ForeignKey(Brand, on_delete=models.CASCADE, db_index=False, related_name="subjects")
    domain = models.CharField(max_length=32, default="live", help_text='"live" or the test clock id')
    kind = models.CharField(max_length=64)
    key_name = models.CharField(max_length=64, help_text="e.g. ein")
    key = models.CharField(max_length=128, help_text="e.g. 12-3456789")
    name = models.CharField(max_length=200)
    calendar = models.ForeignKey(Calendar, on_delete=models.PROTECT, null=True, blank=True, related_name="subjects")
    keeps = models.JSONField(default=dict, blank=True)
    input = models.JSONField(default=dict, blank=True)
    feed_digest = models.CharField(max_length=64, blank=True, help_text="sha256 of the calendar feed token")
    created_at = models.DateTimeField()
    metadata = models.JSONField(default=dict, blank=True, help_text="the brand's own keys and values (Stripe's)")

    class Meta:
        verbose_name = "customer"  # what the owner console calls a subject: who the work is for
        constraints = [
            models.UniqueConstraint(fields=["brand", "domain", "kind", "key"], name="subject_key_per_domain"),
        ]
        indexes = [
            # The calendar feed looks a token up by its digest.
            models.Index(fields=["feed_digest"], name="subject_feed", condition=~Q(feed_digest="")),
        ]

    def __str__(self) -> str:
        return f"{self.name} ({self.key_name} {self.key})"

    def business_calendar(self) -> BusinessCalendar:
        return self.calendar.civil() if self.calendar_id else calendar_from(zone="UTC", weekends=())


class Contact(models.Model):
    """A person of the customer's (Stripe's customers carry theirs): who a date the customer answers for goes to,
    who hears its notices and opens the customer portal. Its role is the brand's word (officer, bookkeeper); a
    Service's ``answers_for="customer:officer"`` finds them by it, and ``"customer"`` finds the primary one."""

    id = IdField(primary_key=True, max_length=32, default=new_contact_id, editable=False)
    brand = models.ForeignKey(Brand, on_delete=models.CASCADE, related_name="contacts")
    subject = models.ForeignKey(Subject, on_delete=models.CASCADE, db_index=False, related_name="contacts")
    name = models.CharField(max_length=200)
    email = models.EmailField(max_length=254)
    phone = models.CharField(max_length=32, blank=True)
    zone = models.CharField(max_length=64, blank=True, help_text="The zone their times are said in; blank: the "
                                                                  "customer's calendar's")
    role = models.CharField(max_length=32, default="contact", help_text="The brand's word for them: officer, "
                                                                        "bookkeeper")
    primary = models.BooleanField(default=False, help_text="Who a date the customer answers for goes to first")
    seq = models.PositiveIntegerField(default=0, help_text="The order they were added in (several in one instant)")
    created_at = models.DateTimeField()

    ORDER = ("-primary", "seq", "id")  # how they are listed: primary first, then as they were added

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["subject"], condition=Q(primary=True), name="contact_one_primary"),
            models.UniqueConstraint(fields=["subject", "email"], name="contact_email_per_subject"),
        ]

    def __str__(self) -> str:
        return f"{self.name} <{self.email}>"


class MemberOfRecord(models.Model):
    """The member who answers in a role for a subject's work (``answers_for="member:preparer"``): for one job
    (``owner_ref`` its id) or for all of the subject's (``owner_ref`` empty). Set by the owner's Assign, or by
    the member who takes a Task of the job's pool (the role is then the pool's name)."""

    brand = models.ForeignKey(Brand, on_delete=models.CASCADE, related_name="members_of_record")
    subject = models.ForeignKey(Subject, on_delete=models.CASCADE, db_index=False, related_name="members_of_record")
    owner_ref = models.CharField(max_length=32, blank=True, help_text="The job it is for; empty: the subject's")
    role = models.CharField(max_length=32)
    member = models.ForeignKey(Membership, on_delete=models.CASCADE, related_name="of_record")

    class Meta:
        constraints = [models.UniqueConstraint(fields=["subject", "owner_ref", "role"], name="member_of_record_once")]

    def __str__(self) -> str:
        return f"{self.role} of {self.subject_id} {self.owner_ref}".strip()


class Clock(models.Model):
    """A date the world sets, for one owner and period, declared by a ClockSpec (calendars.specs)."""

    class LivesOn(models.TextChoices):
        JOB = "job"
        SUBJECT = "subject"

    id = IdField(primary_key=True, max_length=32, default=new_clock_id, editable=False)
    brand = models.ForeignKey(Brand, on_delete=models.CASCADE, related_name="clocks")
    domain = models.CharField(max_length=32, default="live")
    # Indexed by clock_subject, whose first column it is: a second index on subject alone only costs writes,
    # and leaves the planner two to pick from for a subject's calendar.
    subject = models.ForeignKey(Subject, on_delete=models.CASCADE, related_name="clocks", db_index=False)
    spec = models.CharField(max_length=200, help_text="the registered ClockSpec, e.g. apis_tax.annual_return.file")
    name = models.CharField(max_length=64, help_text="the clock's name in its Service: file, pay")
    title = models.CharField(max_length=200, blank=True, help_text="what the calendar calls it: file the 2027 return")
    lives_on = models.CharField(max_length=8, choices=LivesOn.choices, default=LivesOn.JOB)
    owner_ref = models.CharField(max_length=32, help_text="the job or subject it belongs to")
    period = models.CharField(max_length=32)
    hard = models.BooleanField(default=False)
    # Who answers for it: the Service's role, and the person it resolved to (a contact of the customer's or a
    # member of the brand; neither: the brand itself, or nobody yet), whose name ``answers_for`` keeps as the
    # record said it. ``assigned``: set on this clock itself (the owner's Assign, a hand-over), so a change of
    # contact or member of record leaves it where it is.
    role = models.CharField(max_length=48, default="brand", help_text="customer, customer:<role>, brand, member:<role>")
    contact = models.ForeignKey(Contact, on_delete=models.SET_NULL, null=True, blank=True, related_name="clocks")
    member = models.ForeignKey(Membership, on_delete=models.SET_NULL, null=True, blank=True, related_name="clocks")
    assigned = models.BooleanField(default=False)
    answers_for = models.CharField(max_length=200, blank=True, help_text="who answers for it, by name: the brand, "
                                                                          "a person; empty: nobody yet")
    guarantee = models.JSONField(null=True, blank=True)
    version = models.CharField(max_length=80, blank=True)
    inputs = models.JSONField(default=dict, blank=True, help_text="what its due function read")
    opened_at = models.DateTimeField()

    class Meta:
        indexes = [
            # A subject's calendar (calendars/entries.py, clock_entries): its clocks on one clock domain.
            models.Index(fields=["subject", "domain"], name="clock_subject"),
            # A job's clocks (services/deadlines.py: _deadline_times; services/jobs.py: job_end; services/repin.py):
            # without it a lagging statistic nests a scan of every clock under each item (bench/README.md).
            models.Index(fields=["owner_ref", "domain"], name="clock_owner"),
        ]
        constraints = [
            models.CheckConstraint(name="clock_one_person", condition=Q(contact__isnull=True) | Q(member__isnull=True)),
        ]

    def __str__(self) -> str:
        return f"{self.id} {self.name} {self.period}"

    @property
    def guarantee_cap_cents(self) -> int:
        """What the brand credits at most for penalties on this clock's period: 0 without a guarantee."""
        return round(float((self.guarantee or {}).get("cap_usd", 0)) * 100)


class ClockItem(models.Model):
    """One coming of a clock's date for one item: its civil date, the rolled date, its moves."""

    class Status(models.TextChoices):
        OPEN = "open"
        SATISFIED = "satisfied"
        DUE = "due"  # came unsatisfied: waits on its owner's choice
        PASSED = "passed"  # a hard date came unsatisfied: the gate refuses what it bars
        VOIDED = "voided"

    clock = models.ForeignKey(Clock, on_delete=models.CASCADE, db_index=False, related_name="items")
    item = models.CharField(max_length=32, help_text="US, US-CA, … or '' for a clock with one date")
    civil = models.DateField(help_text="what the due function returned (or the move set)")
    due_date = models.DateField(help_text="the civil date rolled to the first open day")
    due_at = models.DateTimeField(help_text="the start of the closing minute, UTC")
    rolled_why = models.TextField(blank=True)
    moves = models.PositiveIntegerField(default=0, help_text="each move of its date, and each undo that armed its "
                                        "timers again (its timers' @n; the feed's SEQUENCE)")
    reopened = models.PositiveIntegerField(default=0, help_text="of its moves, the undos (a mark done or an "
                                           "acknowledgement taken back): the date itself did not move")
    status = models.CharField(max_length=12, choices=Status.choices, default=Status.OPEN)
    satisfied_at = models.DateTimeField(null=True, blank=True)
    changed_at = models.DateTimeField(help_text="domain time of the last change: the feed's DTSTAMP")
    # Whose closed days bind the date, resolved when the clock opens (the clock's calendar, else its Service's,
    # else the brand's default) and kept, so a later change of default never moves it; the subject's own
    # calendar gives the zone and adds its closed days. None: the subject's calendar alone (opened before).
    calendar = models.ForeignKey(Calendar, on_delete=models.PROTECT, null=True, blank=True, db_index=False,
                                 related_name="bound_items",
                                 help_text="the calendar whose closed days bind the date (the Service's)")

    class Meta:
        constraints = [models.UniqueConstraint(fields=["clock", "item"], name="clock_item_once")]
        ordering = ["due_at", "item"]
        indexes = [
            # A change to a calendar's closed days re-rolls the open dates bound to it (brand_calendars._reroll).
            models.Index(fields=["calendar"], name="clockitem_bound_open",
                         condition=Q(status__in=["open", "due"]) & Q(calendar__isnull=False)),
        ]

    def __str__(self) -> str:
        return self.owner_key

    @property
    def moved(self) -> int:
        """How often its date moved (its moves less the undos that only armed its timers again)."""
        return self.moves - self.reopened

    @property
    def owner_key(self) -> str:
        """The owner part of its timers' keys: clk_8Tx1#US."""
        return f"{self.clock_id}#{self.item}" if self.item else self.clock_id




class Proposal(models.Model):
    """A step proposed on a clock's date, queued for the gate. Whose time decides near the close: one already in
    the gate (``queued``) is judged by when it was proposed, however late the gate reaches it; one waiting on a
    person (``waiting``) is judged by when it commits, once that person says yes (calendars/proposals.py)."""

    class State(models.TextChoices):
        QUEUED = "queued"  # in the gate: judged at proposed_at
        WAITING = "waiting"  # on a person (waits_on): judged when it commits
        COMMITTED = "committed"
        REFUSED = "refused"

    id = IdField(primary_key=True, max_length=32, default=new_proposal_id, editable=False)
    domain = models.CharField(max_length=32)
    item = models.ForeignKey(ClockItem, on_delete=models.CASCADE, related_name="proposals")
    step = models.CharField(max_length=40)
    waits_on = models.CharField(max_length=200, blank=True, help_text="The person it waits on; '' when none")
    state = models.CharField(max_length=12, choices=State.choices)
    proposed_at = models.DateTimeField()
    committed_at = models.DateTimeField(null=True, blank=True)
    judged_at = models.DateTimeField(null=True, blank=True, help_text="The instant on time was judged at")
    on_time = models.BooleanField(null=True)
    outcome = models.CharField(max_length=16, blank=True, help_text="committed, moved, submitted or the refusal's code")

    class Meta:
        constraints = [
            models.CheckConstraint(name="proposal_state_known",
                                   condition=Q(state__in=["queued", "waiting", "committed", "refused"])),
            models.CheckConstraint(name="proposal_waiting_names_whom",
                                   condition=~Q(state="waiting") | ~Q(waits_on="")),
        ]
        indexes = [models.Index(fields=["domain", "state", "proposed_at", "id"], name="proposal_queue")]

    def __str__(self) -> str:
        return f"{self.step} on {self.item_id} ({self.state})"


class FeedStamp(models.Model):
    """The newest change stamp a subject's feed was served at (calendars/feed_stamp.py), and since when, on
    the wall clock: the feed's Last-Modified. Written by the feed when it sees a stamp other than this one,
    a second or more after the last, so a client's If-Modified-Since never matches a newer stamp."""

    subject = models.OneToOneField(Subject, on_delete=models.CASCADE, primary_key=True, related_name="feed_stamp")
    stamp = models.CharField(max_length=64, help_text="sha256 hex of what the feed reads")
    seen_at = models.DateTimeField(help_text="wall time the feed first served this stamp")

    def __str__(self) -> str:
        return f"{self.subject_id} {self.stamp[:12]} since {self.seen_at}"
