"""Deleting a brand leaves nothing of it behind, and no worker keeps its clock domains.

A brand's rows are of two kinds: those that name it (a foreign key to ``Brand``, deleted with it by the
database's cascade as Django collects it) and those that name one of its clock domains (its live clock
``live_<brand id>`` and each of its test clocks): the timers, the commits, the record, the outbox, the leases
and their terms, the live clock's position, the fire tally, and whatever a domain app keeps by domain. The
second kind is found by what the models declare (every model with a ``domain`` field), so a table added later
is not forgotten.

The order is the test clock delete's (timers/test_clocks.py), for every domain at once:

1. **Mark**, committed: the live clock's row goes (the worker loop runs only the domains ``LiveClock`` names,
   and a turn's position write never makes the row again), and each test clock is ``deleting`` (an advance
   running on it stops at its next batch, and no worker claims it).
2. **Wait**: take each domain's lease, so a worker in a turn or an advance there finishes its batch and lets go.
3. **Delete**, under those leases, in one transaction: every row of every domain, the leases and their terms
   among them, then the brand and what names it. What /metrics counted stays counted: the domains' fire tally
   is folded into the retired rows (``test:retired``, ``live_:retired``), as a deleted test clock's is.

The people stay: an account may be another brand's member; one that owns no brand any more is no longer staff.
"""

from __future__ import annotations

import contextlib
from collections import Counter
from dataclasses import dataclass, field

from django.apps import apps
from django.contrib.auth import get_user_model
from django.db import transaction

from timers.lease import lease
from timers.models import Brand, FireTally, Lease, LeaseTerm, LiveClock, Membership, TestClock, live_domain
from timers.sql import tallies

from .members import sync_staff


@dataclass
class Deleted:
    brand: str
    domains: list[str]
    rows: Counter[str] = field(default_factory=Counter)  # model label → rows deleted

    def says(self) -> str:
        clocks = len(self.domains) - 1
        total = sum(self.rows.values())
        return (f"deleted {self.brand} · its live clock and {clocks} test clock{'s' if clocks != 1 else ''} · "
                f"{total:,} rows, {self.rows.get('timers.Timer', 0):,} of them timers · nothing of it is left")


def _by_domain() -> list[type]:
    """Every model that keeps rows by clock domain, but the lease's, which go last."""
    return [m for m in apps.get_models() if any(f.name == "domain" and f.concrete for f in m._meta.get_fields())
            and m not in (Lease, LeaseTerm, FireTally)]


def brand_delete(*, brand: Brand) -> Deleted:
    live = live_domain(brand.id)
    with transaction.atomic():  # 1. mark
        LiveClock.objects.filter(pk=live).delete()
        TestClock.objects.filter(brand=brand).exclude(status__in=TestClock.GONE).update(
            status=TestClock.Status.DELETING, advance_to=None)
        clocks = sorted(TestClock.objects.filter(brand=brand).values_list("id", flat=True))
    done = Deleted(brand=brand.name, domains=[live, *clocks])
    with contextlib.ExitStack() as held:
        for domain in sorted(done.domains):  # 2. wait: in one order, so two deletes never hold each other up
            held.enter_context(lease(domain))
        with transaction.atomic():  # 3. delete
            owners = list(Membership.objects.filter(brand=brand, role=Membership.Role.OWNER)
                          .values_list("user_id", flat=True))
            tallies.retire([live], into=FireTally.LIVE_RETIRED)
            if clocks:
                tallies.retire(clocks)
            for model in _by_domain():
                _, counts = model._base_manager.filter(domain__in=done.domains).delete()
                done.rows.update(counts)
            _, counts = Brand.objects.filter(pk=brand.pk).delete()
            done.rows.update(counts)
            LiveClock.objects.filter(pk=live).delete()  # as marked: nothing writes it again, but a mark is cheap
            for model in (Lease, LeaseTerm):
                _, counts = model.objects.filter(domain__in=done.domains).delete()
                done.rows.update(counts)
            for user in get_user_model().objects.filter(pk__in=owners):
                sync_staff(user)
    done.rows = Counter({k: v for k, v in done.rows.items() if v})
    return done
