"""A batch's reads made once (timers/batch.py) and the savepoint a handler pays only when it touches the
database: what they save must never change what a firing sees or what a failure leaves behind."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from calendars.models import ClockItem
from services.models import Notification
from tests.conftest import T0, at
from tests.support.acme import acme_subject, open_return
from timers.advance import advance
from timers.arming import timer_arm
from timers.errors import Refused
from timers.models import Commit, Event, Timer
from timers.test_clocks import test_clock_create

from .test_tick import fired_keys


def _savepoints(ctx: CaptureQueriesContext) -> int:
    return sum(1 for q in ctx.captured_queries if q["sql"].lstrip().upper().startswith("SAVEPOINT"))


def _baseline(brand, n: int) -> int:
    """The SAVEPOINTs of an advance that fires ``n`` plain noops: the run's own (the test's transaction
    turns each of the run's transactions into a savepoint), none of a handler's."""
    other = test_clock_create(brand=brand, frozen_time=T0, name="baseline")
    for i in range(n):
        timer_arm(brand=brand, key=f"job_{i}:task:noop:1", owed_at=at("2026-11-25T10:00Z"), domain=other.id,
                  handler="noop")
    with CaptureQueriesContext(connection) as ctx:
        advance(other.id, at("2026-11-26T00:00Z"))
    return _savepoints(ctx)


def reads_nothing(f):
    f.record("t.seen", data={"key": f.timer.key})


def test_an_atomic_handler_that_asks_the_database_nothing_costs_no_savepoint(brand, arm, clock, handler):
    handler("t.quiet", reads_nothing, atomic=True)
    for n in range(20):
        arm(f"job_{n}:task:quiet:1", "2026-11-25T10:00Z", handler="t.quiet")
    with CaptureQueriesContext(connection) as ctx:
        stats = advance(clock.id, at("2026-11-26T00:00Z"))
    assert stats.fired == 20
    assert _savepoints(ctx) == _baseline(brand, 20)


def writes_then_fails(f):
    Notification.objects.create(brand_id=f.timer.brand_id, domain=f.domain, recipient="x", kind="t",
                                subject="s", key=f.timer.key, message="left behind?", created_at=f.instant)
    _fail(f, "after a write")


def _fail(f, after: str):
    if f.timer.data.get("how") == "refuse":
        raise Refused("t_refused", f"refused {after}")
    raise RuntimeError(f"failed {after}")


@pytest.mark.parametrize("how", ["refuse", "fail"])
def test_a_handler_that_writes_then_fails_leaves_nothing_and_the_batch_lands(brand, arm, clock, handler, how):
    handler("t.writes", writes_then_fails, atomic=True)
    handler("t.quiet", reads_nothing, atomic=True)
    arm("job_1:task:before:1", "2026-11-25T09:00Z", handler="t.quiet")
    arm("job_1:task:bad:1", "2026-11-25T10:00Z", handler="t.writes", data={"how": how})
    arm("job_1:task:after:1", "2026-11-25T11:00Z", handler="t.quiet")
    with CaptureQueriesContext(connection) as ctx:
        stats = advance(clock.id, at("2026-11-26T00:00Z"))
    assert not Notification.objects.filter(domain=clock.id).exists()
    assert _savepoints(ctx) == _baseline(brand, 3) + 1  # only the handler that wrote paid for one
    if how == "refuse":
        assert (stats.fired, stats.refused) == (2, 1)
        assert Event.objects.get(domain=clock.id, type="gate.refused").data["code"] == "t_refused"
    else:
        assert (stats.fired, stats.failed) == (2, 1)
        assert Timer.objects.get(domain=clock.id, key="job_1:task:bad:1").held_by == "error"
    assert Event.objects.filter(domain=clock.id, type="t.seen").count() == 2


def statement_fails(f):
    with connection.cursor() as cur:
        cur.execute("SELECT * FROM no_such_table_kt")  # on PostgreSQL this aborts the transaction


def test_a_handler_whose_first_statement_fails_is_pushed_out_and_the_batch_goes_on(arm, clock, handler):
    # The savepoint opens before the handler's first statement, so the failed one is rolled back alone.
    handler("t.div", statement_fails, atomic=True)
    arm("job_1:task:bad:1", "2026-11-25T10:00Z", handler="t.div")
    arm("job_1:task:good:1", "2026-11-25T11:00Z")
    stats = advance(clock.id, at("2026-11-26T00:00Z"))
    assert (stats.fired, stats.failed) == (1, 1)
    assert fired_keys(clock.id) == ["job_1:task:good:1"]


def arms_k(f):
    f.arm("job_9:task:k:1", owed_at=at("2026-11-25T12:00Z"), handler="noop")


def test_arming_a_key_that_fired_in_an_earlier_run_changes_nothing(arm, clock, handler):
    # The arm is checked against the database in one set query later, not one lookup per arm.
    handler("t.arms_k", arms_k, atomic=True)
    arm("job_1:task:first:1", "2026-11-25T10:00Z", handler="t.arms_k")
    assert advance(clock.id, at("2026-11-25T13:00Z")).armed == 1
    arm("job_2:task:again:1", "2026-11-25T14:00Z", handler="t.arms_k")
    stats = advance(clock.id, at("2026-11-26T00:00Z"))
    assert stats.armed == 0 and stats.fired == 1
    assert Commit.objects.filter(domain=clock.id, key="job_9:task:k:1").count() == 1
    assert fired_keys(clock.id).count("job_9:task:k:1") == 1


def settles(f):
    from timers import batch as batches

    item = ClockItem.objects.get(pk=f.timer.data["item"])
    if f.timer.data["how"] == "save":  # one row by its primary key: the batch drops that row
        item.status = ClockItem.Status.SATISFIED
        item.save(update_fields=["status"])
    elif f.timer.data["how"] == "kept":  # kept by the batch: the caches hold the new value at once
        item.status = ClockItem.Status.SATISFIED
        batches.save(item, fields=["status"])
    else:  # any other write: the batch drops everything it read from the table
        ClockItem.objects.filter(pk=item.pk).update(status=ClockItem.Status.SATISFIED)


def _filed_return(brand):
    """A test clock with Acme's return open: its file clock, the US item and the item's armed rungs in order."""
    tc = test_clock_create(brand=brand, frozen_time=at("2027-06-01T12:00Z"), name="acme")
    file, _ = open_return(brand, tc, acme_subject(brand, tc.id))
    item = ClockItem.objects.get(clock=file, item="US")
    rungs = list(Timer.objects.filter(domain=tc.id, owner=item.owner_key, handler="calendars.rung", status="armed")
                 .order_by("owed_at"))
    return tc, file, item, rungs


@pytest.mark.parametrize("how", ["save", "update", "kept"])
def test_a_row_written_in_the_batch_is_read_fresh_by_the_next_firing(brand, handler, how):
    tc, file, item, rungs = _filed_return(brand)
    first, second = rungs[0], rungs[1]
    assert second.owed_at > first.owed_at
    handler("t.settles", settles, atomic=True)
    settle_at = first.owed_at + (second.owed_at - first.owed_at) / 2
    Timer.objects.create(id="tmr_settle", domain=tc.id, brand=brand, key=f"{file.id}:task:settle:1", owner=file.id,
                         kind="task", place=4, handler="t.settles", status="armed", owed_at=settle_at, opened_at=T0,
                         armed_at=T0, data={"item": item.pk, "how": how})
    advance(tc.id, second.owed_at + timedelta(minutes=1))
    # The first rung read the item (and, in the same batch, every item the batch holds); the second rung
    # must see the item satisfied since, and ring nothing.
    after = Event.objects.filter(domain=tc.id, subject=item.owner_key, type__startswith="clock.",
                                 fired_at__gt=settle_at)
    assert not after.exists(), list(after.values_list("type", "fired_at"))
    before = Event.objects.filter(domain=tc.id, subject=item.owner_key, type__startswith="clock.",
                                  fired_at__lte=settle_at)
    assert before.exists()  # the first rung did ring: the item was read in this batch before the write


def test_what_a_write_drops_from_the_batch_caches(brand):
    from django.db import transaction

    from timers import batch as batches
    from timers.models import Brand

    with transaction.atomic(), batches.batch() as b:
        rows = b.cache("t.rows", tables=("timers_brand",), pk=lambda v, table: (v,))
        rows["a"], rows["b"], rows["gone"] = brand.pk, "other-brand", None
        totals = b.cache("t.totals", tables=("timers_brand",))  # an aggregate: no row keys
        totals["count"] = 1
        Brand.objects.create(name="another.test", created_at=T0)
        # An insert changes no row a cache holds: rows by key stay, what was missing is asked again; an
        # aggregate is dropped.
        assert dict(rows) == {"a": brand.pk, "b": "other-brand"} and not totals
        brand.name = "renamed.test"
        brand.save(update_fields=["name"])  # one row by its primary key: only that row
        assert dict(rows) == {"b": "other-brand"}
        Brand.objects.filter(name="another.test").update(name="x.test")  # any other write: everything
        assert not rows


def test_a_row_a_loader_adds_unasked_is_dropped_by_its_write_like_any_other(brand):
    # A clock's other items come with the one asked for (calendars.clock_reads.load_items): a write to one of
    # them must drop it (or, kept, reach it) as it does a row that was asked for.
    from django.db import transaction

    from timers import batch as batches
    from timers.models import Brand

    other = Brand.objects.create(name="other.test", created_at=T0)
    with transaction.atomic(), batches.batch(keep_writes=True) as b:
        rows = b.cache("t.brands", tables=("timers_brand",), pk=lambda v, table: (v.pk,))
        rows.fill({"asked"}, lambda keys: {"asked": Brand.objects.get(pk=brand.pk),
                                           "unasked": Brand.objects.get(pk=other.pk)})
        assert set(rows) == {"asked", "unasked"}
        other.name = "kept.test"
        batches.save(other, fields=["name"])  # kept: the cached row takes the new value
        assert rows["unasked"].name == "kept.test"
        Brand.objects.filter(pk=other.pk).first().save(update_fields=["name"])  # a save by primary key
        assert "unasked" not in rows and "asked" in rows


def asks_after(f):
    states = [f.state(k) for k in f.timer.data["keys"]]
    f.record("t.states", data={"states": [s and s[0] for s in states]})


def _count_reads(monkeypatch) -> dict:
    from timers import store

    calls = {"owners": [], "key": 0}
    cls = type(store.get_store())
    load_owners, load = cls.load_owners, cls.load

    def counted_owners(self, domain, owners, limit):
        calls["owners"].append(list(owners))
        return load_owners(self, domain, owners, limit)

    def counted(self, *a, **k):
        calls["key"] += 1
        return load(self, *a, **k)

    monkeypatch.setattr(cls, "load_owners", counted_owners)
    monkeypatch.setattr(cls, "load", counted)
    return calls


@pytest.mark.parametrize("limit", [200, 2])
def test_a_firing_asking_after_timers_not_in_memory_reads_their_owner_once(arm, clock, handler, monkeypatch, limit):
    from timers import engine

    monkeypatch.setattr(engine, "OWNER_READ_LIMIT", limit)
    calls = _count_reads(monkeypatch)
    handler("t.asks", asks_after, atomic=True)
    # job_7's timers are owed after the advance's end: never fetched, so not in memory when asked after.
    for name, owed in (("a", "2026-12-20T10:00Z"), ("b", "2026-12-21T10:00Z"), ("c", "2026-12-22T10:00Z")):
        arm(f"job_7:task:{name}:1", owed)
    arm("job_1:task:ask:1", "2026-11-25T10:00Z", handler="t.asks",
        data={"keys": ["job_7:task:a:1", "job_7:task:zz:1", "job_7:task:c:1"]})
    advance(clock.id, at("2026-11-26T00:00Z"))
    assert Event.objects.get(domain=clock.id, type="t.states").data["states"] == ["armed", None, "armed"]
    if limit == 200:  # one read of the owner's timers answers all three, the missing one included
        assert calls == {"owners": [["job_7"]], "key": 0}
    else:  # an owner with more timers than the limit is read a key at a time
        assert calls == {"owners": [["job_7"]], "key": 3}


def asks_after_its_owner(f):
    f.record("t.states", subject=f.timer.key, data={"states": [s and s[0] for s in (
        f.state(f"{f.timer.owner}:task:later:1"), f.state(f"{f.timer.owner}:task:none:1"))]})


def test_the_first_firing_to_ask_after_its_owner_reads_the_owners_of_the_held_firings_that_ask_next(
        arm, clock, handler, monkeypatch):
    calls = _count_reads(monkeypatch)
    handler("t.asks_own", asks_after_its_owner, atomic=True)
    for n in range(6):
        arm(f"job_{n}:task:later:1", "2026-12-20T10:00Z")  # after the advance: never in memory unless read
        arm(f"job_{n}:task:ask:1", f"2026-11-25T1{n}:00Z", handler="t.asks_own")
    arm("job_9:task:other:1", "2026-11-25T09:00Z")  # held, but not by the handler that asks
    advance(clock.id, at("2026-11-26T00:00Z"))
    states = {e.subject: e.data["states"] for e in Event.objects.filter(domain=clock.id, type="t.states")}
    assert states == {f"job_{n}:task:ask:1": ["armed", None] for n in range(6)}
    # One statement for the six owners, asked in tick order: the asking firing's own first.
    assert calls == {"owners": [[f"job_{n}" for n in range(6)]], "key": 0}


def asks_across_the_instant(f):
    f.state("job_5:task:t:1")  # its owner is read (into memory, not onto the heap: it is not owed yet here)
    f.owed_by_now("job_6:task:t:1")  # the gap rule's question at the horizon's instant: the rest of it is read
    f.record("t.fired", subject=f.timer.key)


def test_the_rest_of_the_horizons_instant_fires_in_the_batch_that_read_it_and_is_not_read_again(
        arm, clock, handler, settings, monkeypatch):
    from timers import store

    settings.KEEPING_TIME = {**settings.KEEPING_TIME, "BATCH_SIZE": 3}  # the instant's 7 timers straddle batches
    cls = type(store.get_store())
    fetch_sent, reads = cls.fetch_sent, []

    def counted(self, *a, **k):  # every read of armed timers, a batch's claim or not, is sent this way
        read = fetch_sent(self, *a, **k)

        def rows():
            got = read()
            reads.append(len(got))
            return got

        return rows

    monkeypatch.setattr(cls, "fetch_sent", counted)
    handler("t.across", asks_across_the_instant, atomic=True)
    keys = [f"job_{n}:task:t:1" for n in range(7)]
    for key in keys:
        arm(key, "2026-11-25T10:00Z", handler="t.across")
    stats = advance(clock.id, at("2026-11-26T00:00Z"))
    # Each once, in order: job_5's too, though a lookup of its owner had read it before the rest did.
    fired = Event.objects.filter(domain=clock.id, type="t.fired").order_by("seq").values_list("subject", flat=True)
    assert list(fired) == keys and stats.fired == 7
    # The batch's query (3 rows), the rest of the instant (4), and the query after it that finds nothing.
    assert reads == [3, 4, 0]


# -- writes the batch keeps (batches.save / batches.create) ---------------------------------------------
def _note(f, recipient: str = "x") -> Notification:
    return Notification(brand_id=f.timer.brand_id, domain=f.domain, recipient=recipient, kind="t",
                        subject="s", key=f.timer.key, message="kept", created_at=f.instant)


def keeps(f):
    from timers import batch as batches

    batches.create(_note(f))


def counts_notes(f):
    f.record("t.notes", data={"n": Notification.objects.filter(domain=f.domain).count()})


def test_kept_inserts_cost_the_handlers_nothing_and_land_as_one_statement_before_they_are_read(
        brand, arm, clock, handler, monkeypatch):
    from timers import rows

    sent = []
    insert_rows = rows.insert_rows

    def counted(objs, **kw):  # on PostgreSQL through a cursor of its own: counted here, not in the capture
        if objs:
            sent.append(objs[0]._meta.db_table)
        return insert_rows(objs, **kw)

    monkeypatch.setattr(rows, "insert_rows", counted)
    handler("t.keeps", keeps, atomic=True)
    handler("t.counts", counts_notes, atomic=True)
    for n in range(20):
        arm(f"job_{n}:task:keep:1", "2026-11-25T10:00Z", handler="t.keeps")
    arm("job_99:task:count:1", "2026-11-25T11:00Z", handler="t.counts")
    for n in range(20, 25):
        arm(f"job_{n}:task:keep:1", "2026-11-25T12:00Z", handler="t.keeps")
    with CaptureQueriesContext(connection) as ctx:
        stats = advance(clock.id, at("2026-11-26T00:00Z"))
    assert stats.fired == 26
    # The 20 before the count are sent just before its query reads the table; the 5 after at the batch's end.
    assert sent.count("services_notification") == 2
    assert Event.objects.get(domain=clock.id, type="t.notes").data["n"] == 20
    assert Notification.objects.filter(domain=clock.id).count() == 25
    # Only the handler that asked the database something paid for a savepoint.
    assert _savepoints(ctx) == _baseline(brand, 26) + 1


def keeps_then_fails(f):
    from timers import batch as batches

    batches.create(_note(f))
    from calendars.handlers import _item

    item = _item(f) if "clock" in f.timer.data else None  # from the batch's cache: no statement, no savepoint
    if item is not None:
        item.status = ClockItem.Status.SATISFIED
        batches.save(item, fields=["status"])
    _fail(f, "after keeping writes")


@pytest.mark.parametrize("how", ["refuse", "fail"])
def test_a_handler_that_keeps_writes_then_fails_leaves_nothing(brand, arm, clock, handler, how):
    handler("t.keeps_fails", keeps_then_fails, atomic=True)
    handler("t.keeps", keeps, atomic=True)
    for name, t, fn in (("before", "09", "t.keeps"), ("bad", "10", "t.keeps_fails"), ("after", "11", "t.keeps")):
        arm(f"job_1:task:{name}:1", f"2026-11-25T{t}:00Z", handler=fn, data={"how": how})
    stats = advance(clock.id, at("2026-11-26T00:00Z"))
    assert sorted(Notification.objects.filter(domain=clock.id).values_list("key", flat=True)) == [
        "job_1:task:after:1", "job_1:task:before:1"]
    assert (stats.fired, stats.refused + stats.failed) == (2, 1)


def test_a_kept_save_of_a_handler_that_fails_never_reaches_the_next_firing(brand, handler):
    tc, file, item, rungs = _filed_return(brand)
    handler("t.keeps_fails", keeps_then_fails, atomic=True)
    fail_at = rungs[0].owed_at + (rungs[1].owed_at - rungs[0].owed_at) / 2
    Timer.objects.create(id="tmr_fails", domain=tc.id, brand=brand, key=f"{file.id}:task:fails:1", owner=file.id,
                         kind="task", place=4, handler="t.keeps_fails", status="armed", owed_at=fail_at,
                         opened_at=T0, armed_at=T0, data={"clock": file.id, "item": "US"})
    advance(tc.id, rungs[1].owed_at + timedelta(minutes=1))
    # The failed handler had marked the item satisfied in the batch's cache; the second rung still rings.
    assert Event.objects.filter(domain=tc.id, subject=item.owner_key, type__startswith="clock.",
                                fired_at__gt=fail_at).exists()
    assert ClockItem.objects.get(pk=item.pk).status == ClockItem.Status.OPEN


def reads_notes_then_fails(f):
    from timers.models import Brand

    Brand.objects.filter(pk=f.timer.brand_id).count()  # its savepoint is open from here
    Notification.objects.filter(domain=f.domain).count()  # earlier handlers' kept rows are sent in it
    raise RuntimeError("failed after reading")


def test_earlier_kept_writes_sent_inside_a_failing_handlers_savepoint_still_land(brand, arm, clock, handler):
    handler("t.keeps", keeps, atomic=True)
    handler("t.reads_fails", reads_notes_then_fails, atomic=True)
    arm("job_1:task:keep:1", "2026-11-25T09:00Z", handler="t.keeps")
    arm("job_2:task:reads:1", "2026-11-25T10:00Z", handler="t.reads_fails")
    arm("job_3:task:keep:1", "2026-11-25T11:00Z", handler="t.keeps")
    stats = advance(clock.id, at("2026-11-26T00:00Z"))
    assert (stats.fired, stats.failed) == (2, 1)
    assert sorted(Notification.objects.filter(domain=clock.id).values_list("key", flat=True)) == [
        "job_1:task:keep:1", "job_3:task:keep:1"]


def keeps_a_taken_row(f):
    from timers import batch as batches

    batches.create(_note(f, recipient=f.timer.data.get("to", "x")))


def test_a_kept_write_that_fails_when_sent_runs_the_batch_again_and_pushes_out_only_its_firing(
        brand, arm, clock, handler, caplog):
    handler("t.keeps", keeps_a_taken_row, atomic=True)
    for n in range(5):
        arm(f"job_{n}:task:keep:1", "2026-11-25T10:00Z", handler="t.keeps")
    # job_2's row is there already: the batch's one INSERT fails, and with it the batch.
    Notification.objects.create(brand=brand, domain=clock.id, recipient="x", kind="t", subject="s",
                                key="job_2:task:keep:1", message="first", created_at=T0)
    stats = advance(clock.id, at("2026-11-26T00:00Z"))
    assert "runs again with each write in its firing's savepoint" in caplog.text
    assert (stats.fired, stats.failed) == (4, 1)
    assert Timer.objects.get(domain=clock.id, key="job_2:task:keep:1").held_by == "error"
    assert sorted(Commit.objects.filter(domain=clock.id).values_list("key", flat=True)) == [
        f"job_{n}:task:keep:1" for n in (0, 1, 3, 4)]  # each once: the lost batch's commits were rolled back
    assert Notification.objects.filter(domain=clock.id).count() == 5


def sees_the_collector(f):
    import gc

    f.record("t.gc", data={"enabled": gc.isenabled()})


def test_the_collector_is_paused_inside_a_batch_and_back_after_it(arm, clock, handler):
    import gc

    from timers import gcpause

    handler("t.gc", sees_the_collector)
    arm("job_1:task:gc:1", "2026-11-25T10:00Z", handler="t.gc")
    assert gc.isenabled()
    advance(clock.id, at("2026-11-26T00:00Z"))
    assert Event.objects.get(domain=clock.id, type="t.gc").data == {"enabled": False}
    assert gc.isenabled()
    # Counted: nested pauses (runs in threads) bring it back with the last; one that was off stays off.
    with gcpause.paused():
        with gcpause.paused():
            assert not gc.isenabled()
        assert not gc.isenabled()
    assert gc.isenabled()
    gc.disable()
    try:
        with gcpause.paused():
            pass
        assert not gc.isenabled()
    finally:
        gc.enable()


def _fields(obj) -> dict:
    return {k: v for k, v in obj.__dict__.items() if k != "_state"}


def test_rows_read_plain_are_the_instances_the_orm_gives(brand):
    from calendars.models import Calendar, Subject
    from timers.rows import read

    tc, file, item, _ = _filed_return(brand)
    items = ClockItem.objects.filter(clock__domain=tc.id).order_by("id")
    plain, orm = read(items, related=("clock",)), list(items.select_related("clock"))
    assert [_fields(x) for x in plain] == [_fields(x) for x in orm] and len(plain) > 1
    assert [_fields(x.clock) for x in plain] == [_fields(x.clock) for x in orm]
    assert all(not x._state.adding and x._state.db == "default" for x in plain)
    got = plain[0]
    got.status = ClockItem.Status.SATISFIED
    got.save(update_fields=["status"])  # a row like any other: saved by update
    assert ClockItem.objects.get(pk=got.pk).status == ClockItem.Status.SATISFIED
    # A null foreign key reads as None, a set one as its row.
    subjects = Subject.objects.filter(pk=file.subject_id)
    assert subjects.get().calendar_id is not None
    subjects.update(calendar=None)
    assert read(subjects, related=("calendar",))[0].calendar is None
    subjects.update(calendar=Calendar.objects.create(brand=brand, name="plain", zone="Europe/Paris"))
    plain, orm = read(subjects, related=("calendar",)), list(subjects.select_related("calendar"))
    assert [_fields(x) for x in plain] == [_fields(x) for x in orm]
    assert [_fields(x.calendar) for x in plain] == [_fields(x.calendar) for x in orm]


def test_an_advance_takes_batches_of_advance_batch_size(arm, clock, settings, monkeypatch):
    from timers import store

    cls = type(store.get_store())
    fetch_sent, limits = cls.fetch_sent, []

    def counted(self, domain, to, after, limit):
        limits.append(limit)
        return fetch_sent(self, domain, to, after, limit)

    monkeypatch.setattr(cls, "fetch_sent", counted)
    for n in range(7):
        arm(f"job_{n}:task:t:1", f"2026-11-25T1{n}:00Z")
    settings.KEEPING_TIME = {**settings.KEEPING_TIME, "BATCH_SIZE": 2, "ADVANCE_BATCH_SIZE": 5}
    assert advance(clock.id, at("2026-11-25T13:30Z")).fired == 4
    assert limits == [5]  # one batch holds the four owed
    settings.KEEPING_TIME = {**settings.KEEPING_TIME, "ADVANCE_BATCH_SIZE": None}  # unset: BATCH_SIZE
    assert advance(clock.id, at("2026-11-26T00:00Z")).fired == 3
    assert limits == [5, 2, 2]


def asks_after_another_owner(f):
    f.record("t.states", subject=f.timer.key, data={"states": [f.state("job_side:task:later:1")[0]]})


def test_a_firing_asking_after_an_owner_no_held_timer_leads_to_reads_that_owner_alone(arm, clock, handler,
                                                                                       monkeypatch):
    calls = _count_reads(monkeypatch)
    handler("t.asks_side", asks_after_another_owner, atomic=True)
    arm("job_side:task:later:1", "2026-12-20T10:00Z")
    for n in range(4):
        arm(f"job_{n}:task:ask:1", f"2026-11-25T1{n}:00Z", handler="t.asks_side")
    advance(clock.id, at("2026-11-26T00:00Z"))
    assert Event.objects.filter(domain=clock.id, type="t.states").count() == 4
    # Not the held firings' owners: none of them asks after its own (they would be read for nothing).
    assert calls == {"owners": [["job_side"]], "key": 0}
