"""An advance keeps its timers and its handlers' rows from one batch to the next, and only while nobody else
can write to the clock: every advance marks its test clock advancing (outside writes get 409
test_clock_advancing), and a write the runtime itself makes between batches (a send's receipt) lets go of
what was kept."""

from __future__ import annotations

import pytest

from tests.conftest import at
from timers import outbox, transports
from timers.advance import advance, observing_flushes
from timers.arming import timer_arm, timer_wake
from timers.errors import TestClockAdvancing
from timers.models import Event, TestClock


@pytest.fixture
def small_batches(settings, monkeypatch):
    # Batches of two timers, each kept for the next (the runtime keeps them only from 500 a batch).
    settings.KEEPING_TIME = {**settings.KEEPING_TIME, "ADVANCE_BATCH_SIZE": 2}
    monkeypatch.setattr("timers.advance.CARRY_MIN_BATCH", 1)


def look(f):
    """Records what the tick says of job_a's extra timer, and sends (so the advance delivers after the batch)."""
    got = f.state("job_a:ask:extra:1")
    f.record("looked", data={"saw": None if got is None else [got[0], got[1].isoformat()]})
    f.send("recording", {"what": f.timer.key})


def two_looks(arm, handler) -> None:
    """Two looks a day apart, each in a batch of its own (two timers a batch)."""
    handler("t.look", look)
    transports.register("recording", transports.RecordingTransport())
    arm("job_a:ask:look:1", "2026-11-25T09:00Z", handler="t.look")
    arm("job_b:ask:noop:1", "2026-11-25T10:00Z")
    arm("job_a:ask:look:2", "2026-11-26T09:00Z", handler="t.look")
    arm("job_c:ask:noop:1", "2026-11-26T10:00Z")


def saw(domain: str) -> list:
    return [e.data["saw"] for e in Event.objects.filter(domain=domain, type="looked").order_by("seq")]


def test_an_advance_refuses_outside_writes_until_it_is_ready_and_marks_nothing_on_the_record(arm, brand, clock):
    for day in (25, 26, 27):
        arm(f"job_{day}:ask:noop:1", f"2026-11-{day}T09:00Z")
    refused = []

    def write(clock_id, _at):
        status = TestClock.objects.get(pk=clock_id).status
        try:
            timer_arm(brand=brand, key="job_x:ask:outside:1", owed_at=at("2026-12-01T09:00Z"), domain=clock_id,
                      handler="noop")
        except TestClockAdvancing as exc:
            refused.append((status, exc.code, exc.status))

    with observing_flushes(write):
        advance(clock.id, at("2026-11-28T00:00Z"))
    assert refused and set(refused) == {("advancing", "test_clock_advancing", 409)}
    clock.refresh_from_db()
    assert (clock.status, clock.advance_to) == ("ready", None)
    assert not Event.objects.filter(domain=clock.id, type__startswith="test_clock.").exists()  # tick 1y's record
    timer_arm(brand=brand, key="job_x:ask:outside:1", owed_at=at("2026-12-01T09:00Z"), domain=clock.id,
              handler="noop")  # ready again: taken


def test_a_failed_advance_leaves_its_clock_ready(arm, clock, handler):
    def boom(f):
        raise KeyboardInterrupt  # not a handler's failure (those are recorded): the run itself stops

    handler("t.boom", boom)
    arm("job_1:ask:boom:1", "2026-11-25T09:00Z", handler="t.boom")
    with pytest.raises(KeyboardInterrupt):
        advance(clock.id, at("2026-11-26T00:00Z"))
    clock.refresh_from_db()
    assert (clock.status, clock.advance_to) == ("ready", None)


def test_the_api_and_the_schedules_refuse_writes_on_an_advancing_clock(arm, brand, clock):
    from timers.schedules import schedule_create

    t = arm("job_1:ask:noop:1", "2026-11-25T09:00Z")
    TestClock.objects.filter(pk=clock.id).update(status="advancing", advance_to=at("2026-11-26T00:00Z"))
    for write in (
        lambda: timer_arm(brand=brand, key="job_2:ask:noop:1", owed_at=at("2026-11-25T09:00Z"), domain=clock.id,
                          handler="noop"),
        lambda: timer_wake(timer=t),
        lambda: schedule_create(brand=brand, domain=clock.id, spec={"every": "1h"}, target={"url": "https://x.test/"},
                                name="hourly"),
    ):
        with pytest.raises(TestClockAdvancing):
            write()


def test_a_runtime_write_between_batches_lets_go_of_what_the_advance_kept(arm, brand, clock, handler, small_batches,
                                                                          monkeypatch):
    """job_a's timers are read whole by its first look (batch 1). A receipt heard after batch 1 arms another
    timer of job_a, from outside the batches: the second look (batch 2) must see it. A run that kept job_a's
    timers as read in batch 1 would answer that job_a has no such timer."""
    two_looks(arm, handler)
    real = outbox.deliver
    heard = []

    def deliver(domain, **kw):
        if not heard:  # after batch 1: what a settled hook does (calendars.receipts.submissions_settled)
            heard.append(timer_arm(brand=brand, key="job_a:ask:extra:1", owed_at=at("2026-12-20T09:00Z"),
                                   domain=domain, handler="noop", runtime=True))
        return real(domain, **kw)

    monkeypatch.setattr(outbox, "deliver", deliver)
    advance(clock.id, at("2026-11-27T00:00Z"))
    assert heard
    assert saw(clock.id) == [None, ["armed", "2026-12-20T09:00:00+00:00"]]
    assert TestClock.objects.get(pk=clock.id).runtime_writes == 1


def test_an_advance_keeps_what_it_read_from_batch_to_batch(arm, clock, handler, small_batches, monkeypatch):
    """The same two looks with nothing written between them: job_a's timers are read once, in batch 1."""
    from timers.store import get_store

    two_looks(arm, handler)
    store = type(get_store())
    reads = []
    real = store.load_owners
    monkeypatch.setattr(store, "load_owners", lambda self, domain, owners, limit: reads.append(list(owners))
                        or real(self, domain, owners, limit))
    advance(clock.id, at("2026-11-27T00:00Z"))
    assert saw(clock.id) == [None, None]
    assert reads == [["job_a"]]  # batch 2 asked nothing: what batch 1 read of job_a still holds


def test_a_long_chain_read_whole_by_its_first_fetch_keeps_its_rows_from_its_second_batch(arm, brand, clock, handler,
                                                                                          small_batches):
    """One timer armed, and each fire arms the next a day on: the first fetch reads every armed timer, and the
    budget alone ends each batch (two fires). The run reads its token at the second batch's start, so the
    handlers' rows are read in batches 1 and 2 and kept from then on; before, every batch read them again."""
    from datetime import timedelta

    from timers import batch as batches
    from timers.models import Brand

    loads = []

    def load(keys):
        loads.append(set(keys))
        return {b.id: b for b in Brand.objects.filter(pk__in=keys)}

    def chain(f):
        got = batches.row(f, brand.id, name="t.brands", load=load, ahead=("t.chain",), key_of=lambda t: brand.id,
                          tables=("timers_brand",), pk=lambda b, table: (b.pk,), carry=True)
        assert got.id == brand.id
        n = int(f.timer.key.rsplit(":", 1)[1])
        if n < 8:
            f.arm(f"job_a:ask:chain:{n + 1}", owed_at=f.timer.owed_at + timedelta(days=1), handler="t.chain")

    handler("t.chain", chain)
    arm("job_a:ask:chain:1", "2026-11-25T09:00Z", handler="t.chain")
    stats = advance(clock.id, at("2026-12-10T00:00Z"))
    assert stats.fired == 8
    assert len(loads) == 2  # batches 1 and 2 of 4; 4 when every batch read them


def test_a_batch_ends_within_a_third_of_the_lease_however_large_its_size(arm, clock, handler, settings, monkeypatch):
    """The lease is renewed as a batch starts; a batch that outlived it could not commit. Each fire here takes
    6 s (a fake monotonic clock) and the lease is 30 s: a batch ends after two fires, though its size is 1,000."""
    from datetime import timedelta
    from types import SimpleNamespace

    from timers import engine

    settings.KEEPING_TIME = {**settings.KEEPING_TIME, "ADVANCE_BATCH_SIZE": 1000, "LEASE_SECONDS": 30}
    monkeypatch.setattr(engine, "BATCH_CLOCK_EVERY", 1)
    elapsed = [0.0]
    monkeypatch.setattr(engine, "time", SimpleNamespace(monotonic=lambda: elapsed[0]))  # the engine's alone

    def chain(f):
        elapsed[0] += 6
        n = int(f.timer.key.rsplit(":", 1)[1])
        if n < 6:
            f.arm(f"job_a:ask:slow:{n + 1}", owed_at=f.timer.owed_at + timedelta(days=1), handler="t.slow")

    handler("t.slow", chain)
    arm("job_a:ask:slow:1", "2026-11-25T09:00Z", handler="t.slow")
    flushes = []
    with observing_flushes(lambda clock_id, at: flushes.append(at)):
        stats = advance(clock.id, at("2026-12-10T00:00Z"))
    assert stats.fired == 6
    assert len(flushes) == 3  # 2 fires a batch; one batch of 6 without the time limit


@pytest.fixture
def trimmed(settings, monkeypatch):
    """Batches of four timers kept from batch to batch, of which the run keeps two beyond the heap's."""
    from timers import engine

    settings.KEEPING_TIME = {**settings.KEEPING_TIME, "ADVANCE_BATCH_SIZE": 4}
    monkeypatch.setattr("timers.advance.CARRY_MIN_BATCH", 1)
    monkeypatch.setattr(engine, "KEEP_AT_LEAST", 2)
    monkeypatch.setattr(engine, "KEEP_BATCHES", 0)


def test_an_advance_of_many_batches_holds_a_bounded_working_set(arm, clock, trimmed, monkeypatch):
    """Thirty batches of four noops: what the run holds as each batch starts to fire is that batch's four and
    the two it kept of the last, not every timer it has touched since the advance began."""
    from timers.engine import Run

    for i in range(120):
        arm(f"job_{i}:ask:noop:1", at("2026-11-25T09:00Z") + i * (at("2026-11-25T09:01Z") - at("2026-11-25T09:00Z")))
    held = []
    real = Run._drain
    monkeypatch.setattr(Run, "_drain", lambda run: held.append(len(run._by_key)) or real(run))
    stats = advance(clock.id, at("2026-11-26T00:00Z"))
    assert stats.fired == 120
    assert len(held) >= 30
    assert max(held) == 4 + 2  # a batch's fetch and what the batch before it kept


def test_an_owner_whose_timers_were_let_go_is_read_again(arm, clock, handler, trimmed):
    """job_a is read whole by its first look (batch 1); the batches after it let go of job_a's timers. Its
    second look, batches later, must still see job_a's extra timer: a run that still took job_a as read whole
    would answer that it has none."""

    def look(f):
        got = f.state("job_a:ask:extra:1")
        f.record("looked", data={"saw": None if got is None else [got[0], got[1].isoformat()]})

    handler("t.look", look)
    arm("job_a:ask:extra:1", "2026-12-20T09:00Z")
    arm("job_a:ask:look:1", "2026-11-25T09:00Z", handler="t.look")
    for i in range(12):
        arm(f"job_{i}:ask:noop:1", f"2026-11-25T1{i // 6}:{10 * (i % 6):02d}Z")
    arm("job_a:ask:look:2", "2026-11-26T09:00Z", handler="t.look")
    advance(clock.id, at("2026-11-27T00:00Z"))
    assert saw(clock.id) == [["armed", "2026-12-20T09:00:00+00:00"]] * 2


def test_a_batch_that_holds_too_many_fired_timers_ends_early(arm, clock, trimmed, settings, monkeypatch):
    """One fetch of forty noops (the batch's size is 1,000), and the run may hold ten beyond its heap: the batch
    ends once eleven have fired, is written and let go of but for the two it keeps, and the next goes on from
    the heap."""
    # 11 fires, then 9 a batch beside the 2 kept; one batch of 40 without the limit.
    assert _forty_noops_flushed(arm, clock, settings, monkeypatch, limit="HOLD_LIMIT") == 5


def test_owners_that_fire_at_every_instant_are_kept_to_the_trims_size(arm, clock, trimmed, monkeypatch):
    """Four owners fire in turn, one timer each a minute (K subscribers on one plan fire at every instant). The run
    keeps two timers beyond its heap: the owners kept whole are those whose timers come to two, not the owners of
    the two most recent timers, each with every timer it fired since the advance began (a list that grew with the
    year: at 1,000 subscribers, 45,000 timers kept)."""
    from timers.engine import Run

    for m in range(48):
        arm(f"job_{m % 4}:ask:noop:{m // 4}", at("2026-11-25T09:00Z") + m * (at("2026-11-25T09:01Z")
                                                                           - at("2026-11-25T09:00Z")))
    held = []
    real = Run._drain
    monkeypatch.setattr(Run, "_drain", lambda run: held.append(len(run._by_key) - len(run._armed)) or real(run))
    stats = advance(clock.id, at("2026-11-26T00:00Z"))
    assert stats.fired == 48
    assert len(held) >= 12
    assert max(held) <= 2


def test_a_firing_lists_as_touched_only_what_changed_since_the_last_batch_was_written(arm, clock, handler,
                                                                                       small_batches):
    """A job's close lists its timers as the table has them plus what the run changed and has not written yet
    (Firing.touched). What earlier batches wrote is in the table: listing it again scanned every timer the run
    held, the heap's thousands, once a close."""
    seen = []

    def touched(f):
        seen.append(sorted(key for key, _, _ in f.touched()))

    handler("t.touched", touched)
    arm("job_a:ask:look:1", "2026-11-25T09:00Z", handler="t.touched")
    arm("job_b:ask:look:1", "2026-11-25T10:00Z", handler="t.touched")
    arm("job_c:ask:look:1", "2026-11-26T09:00Z", handler="t.touched")
    arm("job_d:ask:look:1", "2026-11-26T10:00Z", handler="t.touched")
    advance(clock.id, at("2026-11-27T00:00Z"))
    assert seen == [[], ["job_a:ask:look:1"], [], ["job_c:ask:look:1"]]


def test_a_batch_that_holds_too_many_rows_to_write_ends_early(arm, clock, trimmed, settings, monkeypatch):
    """One fetch of forty noops (the batch's size is 1,000), each two rows to write (its commit and its event),
    and the run may hold ten rows to write: the batch ends once six have fired, and the next goes on from the
    heap."""
    # 6 fires a batch; one batch of 40 without the limit.
    assert _forty_noops_flushed(arm, clock, settings, monkeypatch, limit="BATCH_ROWS_LIMIT") == 7


def _forty_noops_flushed(arm, clock, settings, monkeypatch, *, limit: str) -> int:
    """Forty noops a minute apart in one fetch (the batch's size is 1,000) with the engine's ``limit`` at 10, a
    clock look every batch: how many batches the advance wrote."""
    from timers import engine

    settings.KEEPING_TIME = {**settings.KEEPING_TIME, "ADVANCE_BATCH_SIZE": 1000}
    monkeypatch.setattr(engine, limit, 10)
    monkeypatch.setattr(engine, "BATCH_CLOCK_EVERY", 1)
    for i in range(40):
        arm(f"job_{i}:ask:noop:1", at("2026-11-25T09:00Z") + i * (at("2026-11-25T09:01Z") - at("2026-11-25T09:00Z")))
    flushes = []
    with observing_flushes(lambda clock_id, at: flushes.append(at)):
        stats = advance(clock.id, at("2026-11-26T00:00Z"))
    assert stats.fired == 40
    return len(flushes)
