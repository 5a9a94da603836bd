"""The armer: the one way domain code writes timers, the record and outside sends, inside the tick or outside it.

Inside the tick a write is part of the firing's proposal, which the gate commits or refuses whole; outside it
(an API call, the console, a command) it goes to the domain at once. Domain code never asks which: it asks
``armer.firing`` only to read what the batch holds ahead of it (``timers.batch``), and defers its own row writes
with ``timers.batch.save`` and ``timers.batch.create``, which keep them for the batch's set statements inside
the tick and write them at once outside it.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Protocol

from django.db.models import Q
from django.db.models.functions import Now

from .arming import timer_arm, timer_hold, timer_resume
from .domains import domain_writable
from .engine import Firing
from .errors import KeepingTimeError
from .ids import new_id
from .models import Brand, Event, Outbox, Timer
from .rearm import Rearm, rearm_cause


class Armer(Protocol):
    """How domain code writes time: inside the tick the firing in hand (``FiringArmer``), whose proposal the gate
    commits or refuses whole; outside it the domain directly (``DirectArmer``). The same service function runs
    on either, so an act from the API and one a firing makes land the same way."""

    now: datetime
    domain: str
    brand_id: str

    @property
    def firing(self) -> Firing | None:
        """The firing in hand inside the tick (its batch's reads ahead and what it has proposed so far), None
        outside it: what domain code asks instead of looking for the tick itself."""
        ...

    # The row of ``owner`` (a job, a clock) was made by this write, so none of its timers is stored yet: inside
    # the tick what it arms needs no look in the database (Firing.new_owner). Nothing to do outside it.
    def made(self, owner: str) -> None: ...

    def arm(self, key: str, *, owed_at: datetime, handler: str, data: dict[str, Any], opened_at: datetime,
            version: str = "") -> None: ...

    # A supersede with a successor, a retime and a hold are re-arms: ``by`` is from the closed list
    # (timers.rearm.Rearm), or ValueError. A supersede with no successor only ends the timer.
    def supersede(self, key: str, *, by: Rearm | str, successor: str = "") -> None: ...

    def supersede_all(self, keys: list[str], *, by: Rearm | str) -> None: ...

    def retime(self, key: str, *, owed_at: datetime, by: Rearm) -> None: ...

    # Pin armed and held timers to another version under their own keys and times (a clock's repin).
    def repin(self, keys: list[str], *, version: str) -> None: ...

    def record(self, type: str, *, subject: str, data: dict[str, Any]) -> None: ...

    def state(self, key: str) -> tuple[str, datetime | None] | None: ...

    def hold(self, key: str, *, by: Rearm, who: str = "") -> None: ...

    def resume(self, key: str, *, cap: datetime | None = None) -> None: ...

    # An outside send (a submit step's submission): it leaves through the outbox after the commit.
    def send(self, transport: str, payload: dict[str, Any], *, key: str) -> str: ...


class FiringArmer:
    """Inside the tick: every write is part of the firing's proposal, committed by the gate."""

    def __init__(self, f: Firing):
        self._firing = f
        self.now = f.now
        self.domain = f.run.domain
        self.brand_id = f.timer.brand_id

    @property
    def firing(self) -> Firing:
        return self._firing

    def made(self, owner: str) -> None:
        self._firing.new_owner(owner)

    def arm(self, key: str, *, owed_at: datetime, handler: str, data: dict[str, Any], opened_at: datetime,
            version: str = "") -> None:
        # A timer is pinned to the bundle it was armed under: the job's or subscription's, else its parent's.
        self._firing.arm(key, owed_at=owed_at, handler=handler, data=data, opened_at=opened_at, version=version or None)

    def supersede(self, key: str, *, by: Rearm | str, successor: str = "") -> None:
        self._firing.supersede(key, by=by, successor=successor)

    def supersede_all(self, keys: list[str], *, by: Rearm | str) -> None:
        for key in keys:
            self._firing.supersede(key, by=by)

    def retime(self, key: str, *, owed_at: datetime, by: Rearm) -> None:
        self._firing.retime(key, owed_at=owed_at, by=by)

    def repin(self, keys: list[str], *, version: str) -> None:
        for key in keys:
            self._firing.repin(key, version=version)

    def record(self, type: str, *, subject: str, data: dict[str, Any]) -> None:
        self._firing.record(type, subject=subject, data=data, key=self._firing.timer.key)

    def state(self, key: str) -> tuple[str, datetime | None] | None:
        return self._firing.state(key)

    def hold(self, key: str, *, by: Rearm, who: str = "") -> None:
        self._firing.hold(key, by=by, who=who)

    def resume(self, key: str, *, cap: datetime | None = None) -> None:
        self._firing.resume(key, cap=cap)

    def send(self, transport: str, payload: dict[str, Any], *, key: str) -> str:
        return self._firing.send(transport, payload)


class DirectArmer:
    """Outside the tick (an API call, the console, a command): writes the timers and the record directly."""

    def __init__(self, *, brand: Brand | str, domain: str, now: datetime | None = None, runtime: bool = False):
        self.brand_id = brand if isinstance(brand, str) else brand.id
        self.domain = domain
        # A write on a deleted or advancing test clock's objects is refused here, whoever makes it (the API, a
        # portal, the console, a command): 409 test_clock_deleted / test_clock_advancing, nothing written.
        # ``runtime``: the runtime's own write during an advance (a receipt), which an advance may take.
        writable_now = domain_writable(domain=domain, runtime=runtime)
        self.now = now or writable_now

    @property
    def firing(self) -> None:
        return None

    def made(self, owner: str) -> None:
        pass

    def arm(self, key: str, *, owed_at: datetime, handler: str, data: dict[str, Any], opened_at: datetime,
            version: str = "") -> None:
        try:
            timer_arm(brand=Brand(id=self.brand_id), key=key, owed_at=owed_at, domain=self.domain, handler=handler,
                      data=data, opened_at=opened_at, version=version, checked=True)
        except KeepingTimeError as exc:
            if exc.code != "timer_exists":  # a replay arms the same keys: nothing changes
                raise

    def supersede(self, key: str, *, by: Rearm | str, successor: str = "") -> None:
        if successor:  # a re-arm: its cause is on the closed list (as Firing.supersede)
            by = rearm_cause(by)
        succ = Timer.objects.filter(domain=self.domain, key=successor).values_list("id", flat=True).first()
        self._supersede(Q(key=key), by=str(by), successor=succ or successor)

    def supersede_all(self, keys: list[str], *, by: Rearm | str) -> None:
        self._supersede(Q(key__in=list(keys)), by=str(by))

    def _supersede(self, which: Q, *, by: str, successor: str = "") -> None:
        # As the tick supersedes: the timer keeps the time it was owed (history a list sorts by).
        Timer.objects.filter(which, domain=self.domain, status__in=["armed", "held"]).update(
            status="superseded", by=by, superseded_by=successor, held_since=None, remaining=None, held_by="",
            moved_at=Now(),  # its month of history (timers/history.py)
        )

    def retime(self, key: str, *, owed_at: datetime, by: Rearm) -> None:
        by = rearm_cause(by)
        # An unchanged time stays as it is, cause and all (as the tick's retime).
        Timer.objects.filter(domain=self.domain, key=key, status="armed").exclude(owed_at=owed_at).update(
            owed_at=owed_at, by=by.value, tick_pass=1)

    def repin(self, keys: list[str], *, version: str) -> None:
        Timer.objects.filter(domain=self.domain, key__in=list(keys), status__in=["armed", "held"]).update(
            version=version)

    def record(self, type: str, *, subject: str, data: dict[str, Any]) -> None:
        Event.objects.create(domain=self.domain, brand_id=self.brand_id, type=type, subject=subject,
                             owed_at=self.now, data=data, fired_at=self.now)

    def state(self, key: str) -> tuple[str, datetime | None] | None:
        row = Timer.objects.filter(domain=self.domain, key=key).values_list("status", "owed_at").first()
        return row  # values_list's row: a tuple already

    def hold(self, key: str, *, by: Rearm, who: str = "") -> None:
        by = rearm_cause(by)
        timer = Timer.objects.filter(domain=self.domain, key=key, status="armed").first()
        if timer is not None:
            timer_hold(timer=timer, by=who or by.value, now=self.now)

    def resume(self, key: str, *, cap: datetime | None = None) -> None:
        timer = Timer.objects.filter(domain=self.domain, key=key, status="held").first()
        if timer is not None:
            timer_resume(timer=timer, now=self.now, cap=cap)

    def send(self, transport: str, payload: dict[str, Any], *, key: str) -> str:
        # One submission per attempt, its id derived from the domain, key and attempt (as a firing's sends).
        attempt = Outbox.objects.filter(domain=self.domain, key=key).count() + 1
        submission = new_id("sub", seed=f"{self.domain}|{key}|{attempt}")
        Outbox.objects.create(id=submission, domain=self.domain, brand_id=self.brand_id, key=key, attempt=attempt,
                              transport=transport, payload=payload, created_at=self.now)
        return submission
