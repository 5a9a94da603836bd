"""The clocks' tables: test clocks, the brands' live clocks' positions, and who holds a clock domain (its lease
and the lease's terms).

A clock domain is a brand's live clock (live_<brand id>) or one test clock (its id). One worker holds a domain
at a time: its Lease row (timers/lease.py).
"""

from __future__ import annotations

from django.db import models
from django.db.models import Q

from ..fields import IdField
from ..ids import LIVE, LIVE_PREFIX, new_id
from .tenants import Brand


def in_domain(domain: str, field: str = "domain") -> Q:
    """Rows on ``domain``; "live" (what a console's "as of" names) is every brand's live clock, which a
    brand filter beside it narrows to the brands shown."""
    return Q(**{f"{field}__startswith": LIVE_PREFIX}) if domain == LIVE else Q(**{field: domain})


def new_test_clock_id() -> str:
    return new_id("tc")


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
    # next lets them go when this moves (timers/advance.py, advance).
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
            # The advance queue: `tick` (timers/advance.py, run_requested_advances) claims the oldest requested
            # advance with SKIP LOCKED, ORDER BY created_at LIMIT 1; in created_at order, so no sort.
            models.Index(fields=["created_at", "id"], name="test_clock_advance_queue",
                         condition=Q(status="advancing")),
            # `tick` (timers/advance.py, finish_deletes) looks for deletes whose requester died, every step.
            models.Index(fields=["id"], name="test_clock_deleting", condition=Q(status="deleting")),
        ]

    def __str__(self) -> str:
        return self.id


class LiveClock(models.Model):
    """How far a brand's live clock domain (live_<brand id>) has ticked: the floor of the next instant it
    visits. The live loop runs the domains these rows name, each on its own (timers/live.py)."""

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
