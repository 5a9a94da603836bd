"""Calendars, dates the world sets, rungs and moves: DESIGN.md's Acme Robotics example, on PostgreSQL."""

from __future__ import annotations

from datetime import date

import pytest

from calendars.brand_calendars import calendar_close_day, calendar_postpone
from calendars.clocks import clock_choose, clock_inputs_changed, clock_open, clock_satisfy, clock_step
from calendars.models import ClockItem
from tests.conftest import at
from tests.support.acme import acme_subject, open_return
from timers import transports
from timers.advance import advance
from timers.armer import DirectArmer
from timers.errors import Refused
from timers.models import Commit, Event, Timer
from timers.test_clocks import test_clock_create


@pytest.fixture
def acme(brand):
    clock = test_clock_create(brand=brand, frozen_time=at("2027-06-01T12:00Z"), name="acme")
    subject = acme_subject(brand, clock.id)
    return clock, subject


def items(clock):
    return {i.item: i for i in ClockItem.objects.filter(clock=clock)}


def owed(tc, key):
    return Timer.objects.get(domain=tc.id, key=key).owed_at


def test_acme_file_dates_roll_past_emancipation_day(brand, acme):
    tc, subject = acme
    file, pay = open_return(brand, tc, subject)
    got = items(file)
    for state in ("US", "US-CA", "US-NY"):
        assert got[state].civil == date(2028, 4, 15) and got[state].due_date == date(2028, 4, 18)
        # Whose closed day each was: the subject's calendar, which these test clocks are bound by alone.
        assert got[state].rolled_why.endswith("Monday 2028-04-17: Emancipation Day (observed), on the Acme Robotics "
                                              "calendar")
    assert got["US-NJ"].due_date == date(2028, 5, 15) and got["US-NJ"].rolled_why == ""
    assert items(pay)["US"].due_date == date(2028, 4, 18)
    rolled = Event.objects.filter(domain=tc.id, type="clock.rolled", subject=f"{file.id}#US").get()
    assert rolled.data["why"] == "Emancipation Day (observed), on the Acme Robotics calendar"
    assert rolled.data["closed_on"] == "Acme Robotics"
    assert rolled.data["from"] == "2028-04-15" and rolled.data["to"] == "2028-04-18"
    # Due closes at 23:59 New York: on time through 23:59:59.999 local.
    assert got["US"].due_at == at("2028-04-19T03:59Z")
    # Rungs ring at 09:00 New York.
    assert owed(tc, f"{file.id}#US:rung:notice 90d:2027@0") == at("2028-01-19T14:00Z")
    assert owed(tc, f"{file.id}#US-NJ:rung:notice 90d:2027@0") == at("2028-02-15T14:00Z")
    assert owed(tc, f"{file.id}#US:rung:run tentative 3d:2027") == at("2028-04-15T13:00Z")


def test_the_extension_moves_file_but_never_pay(brand, acme):
    tc, subject = acme
    transports.register("notices", transports.RecordingTransport())
    file, pay = open_return(brand, tc, subject)
    advance(tc.id, at("2028-04-16T00:00Z"))
    got = items(file)
    assert got["US"].due_date == date(2028, 10, 16) and got["US"].civil == date(2028, 10, 15)
    assert got["US-NY"].due_date == date(2028, 10, 16)
    assert got["US-CA"].due_date == date(2028, 11, 15)
    assert got["US-NJ"].due_date == date(2028, 5, 15) and got["US-NJ"].moves == 0
    assert items(pay)["US"].due_date == date(2028, 4, 18)
    moved = Event.objects.get(domain=tc.id, type="clock.moved", subject=f"{file.id}#US")
    assert moved.data["by"] == "extend" and moved.data["rolled_from"] == "2028-10-15"
    assert moved.owed_at == at("2028-04-15T13:00Z")
    # notice 30d:2027@1 rings on 2028-09-16, 09:00 New York; its @0 was superseded by the move.
    assert owed(tc, f"{file.id}#US:rung:notice 30d:2027@1") == at("2028-09-16T13:00Z")
    old = Timer.objects.get(domain=tc.id, key=f"{file.id}#US:due:file:2027@0")
    new = Timer.objects.get(domain=tc.id, key=f"{file.id}#US:due:file:2027@1")
    assert old.status == "superseded" and old.by == "clock.moved" and old.superseded_by == new.id
    # The run rung keeps its key and ran once: a move can never arm a second extension.
    run = Timer.objects.filter(domain=tc.id, key__startswith=f"{file.id}#US:rung:run")
    assert [(t.key, t.status) for t in run] == [(f"{file.id}#US:rung:run tentative 3d:2027", "fired")]
    # New Jersey runs its own, three days before 05-15.
    assert owed(tc, f"{file.id}#US-NJ:rung:run tentative 3d:2027") == at("2028-05-12T13:00Z")
    advance(tc.id, at("2028-12-31T00:00Z"))
    assert items(file)["US-NJ"].due_date == date(2028, 11, 15)
    assert Timer.objects.get(domain=tc.id, key=f"{file.id}#US:rung:run tentative 3d:2027").wakes == 1


def test_a_hard_date_that_passes_refuses_what_it_bars(brand, acme):
    tc, subject = acme
    file, pay = open_return(brand, tc, subject)
    advance(tc.id, at("2028-04-20T00:00Z"))
    item = ClockItem.objects.select_related("clock__subject__calendar").get(clock=pay, item="US")
    assert item.status == "passed"
    assert Event.objects.filter(domain=tc.id, type="clock.passed").count() == 1
    with pytest.raises(Refused) as err:
        clock_step(armer=DirectArmer(brand=brand, domain=tc.id), item=item, step="pay")
    assert err.value.code == "date_passed"
    # A proposal already in the gate before the close is judged by when it was proposed.
    assert clock_step(armer=DirectArmer(brand=brand, domain=tc.id), item=item, step="pay",
                      proposed_at=at("2028-04-19T03:59:59.999Z")) == "committed"


@pytest.mark.parametrize("batch", [2000, 1, 3])
def test_after_a_gap_only_the_latest_notice_is_sent(brand, acme, settings, batch):
    # Small batches put the later notice past the batch's horizon when the earlier one fires: the gap rule
    # must still find it (Firing.owed_by_now asks the database there).
    settings.KEEPING_TIME = {**settings.KEEPING_TIME, "BATCH_SIZE": batch}
    tc, subject = acme
    tc.frozen_time = at("2028-03-25T12:00Z")  # the return was opened late: two notices already owed
    tc.save()
    transports.register("notices", transport := transports.RecordingTransport())
    file, _ = open_return(brand, tc, subject, now=tc.frozen_time)
    advance(tc.id, at("2028-03-26T00:00Z"))
    us = f"{file.id}#US"
    types = dict(Event.objects.filter(domain=tc.id, subject=us, type__startswith="clock.").exclude(
        type__in=["clock.rolled"]).values_list("key", "type"))
    # The earlier notice is recorded superseded (its timer's status), never fired: no event, no commit.
    assert f"{us}:rung:notice 90d:2027@0" not in types
    assert types[f"{us}:rung:notice 30d:2027@0"] == "clock.notice"
    early = Timer.objects.get(domain=tc.id, key=f"{us}:rung:notice 90d:2027@0")
    later = Timer.objects.get(domain=tc.id, key=f"{us}:rung:notice 30d:2027@0")
    assert (early.status, early.by, early.superseded_by, early.fired_at) == ("superseded", "gap", later.id, None)
    assert later.status == "fired"
    assert not Commit.objects.filter(domain=tc.id, key=early.key).exists()
    assert not Event.objects.filter(domain=tc.id, type="clock.rung_superseded").exists()
    # One notice per item: file's US, CA and NY 30d (their 90d superseded), NJ's 90d (its 30d is ahead),
    # and pay's 30d.
    assert len(transport.received) == 5
    nj = f"{file.id}#US-NJ"
    assert Event.objects.get(domain=tc.id, key=f"{nj}:rung:notice 90d:2027@0").type == "clock.notice"


def test_ack_daily_records_each_day_even_after_a_gap(brand, acme):
    from timers.clock import VirtualWallClock
    from timers.worker import Worker

    tc, subject = acme
    file, _ = open_return(brand, tc, subject)
    advance(tc.id, at("2028-04-10T00:00Z"))
    # The worker is down from 04-10 to 04-14 noon, then wakes once.
    Worker(VirtualWallClock(at("2028-04-14T18:00Z")), domain=tc.id, until=at("2028-04-14T18:00Z"),
           test_clocks=False).run()
    acks = Event.objects.filter(domain=tc.id, type="clock.ack_requested", subject=f"{file.id}#US").order_by("seq")
    assert [e.data["day"] for e in acks] == [1, 2, 3, 4]  # 04-11 … 04-14, each missed day recorded
    assert [e.owed_at for e in acks][:2] == [at("2028-04-11T13:00Z"), at("2028-04-12T13:00Z")]


def test_a_satisfied_clock_arms_nothing_further(brand, acme):
    tc, subject = acme
    file, _ = open_return(brand, tc, subject)
    item = ClockItem.objects.select_related("clock__subject").get(clock=file, item="US")
    clock_satisfy(armer=DirectArmer(brand=brand, domain=tc.id), item=item)
    assert not Timer.objects.filter(domain=tc.id, owner=f"{file.id}#US", status="armed").exists()
    advance(tc.id, at("2028-12-31T00:00Z"))
    assert not Event.objects.filter(domain=tc.id, subject=f"{file.id}#US", type__in=["clock.notice", "clock.due"])


def test_an_edit_to_closed_days_re_rolls_every_date_it_touches(brand, acme):
    tc, subject = acme
    file, pay = open_return(brand, tc, subject)
    moved = calendar_close_day(calendar=subject.calendar, day=date(2028, 4, 18), why="IRS disaster day")
    assert moved == 4  # federal, CA, NY file and federal pay
    assert items(file)["US"].due_date == date(2028, 4, 19)
    assert items(pay)["US"].due_date == date(2028, 4, 19)
    assert owed(tc, f"{file.id}#US:rung:notice 90d:2027@1") == at("2028-01-20T14:00Z")
    ev = Event.objects.get(domain=tc.id, type="clock.moved", subject=f"{file.id}#US")
    assert ev.data["by"] == "calendar" and "IRS disaster day" in ev.data["calendar"]


def test_a_postponement_moves_a_hard_date(brand, acme):
    tc, subject = acme
    file, pay = open_return(brand, tc, subject)
    item = ClockItem.objects.select_related("clock__subject").get(clock=pay, item="US")
    calendar_postpone(calendar=subject.calendar, items=[item], to=date(2028, 6, 15), notice="IR-2028-77")
    assert items(pay)["US"].due_date == date(2028, 6, 15)
    ev = Event.objects.get(domain=tc.id, type="clock.moved", subject=f"{pay.id}#US")
    assert ev.data == {**ev.data, "by": "calendar", "notice": "IR-2028-77", "from": "2028-04-18"}


def test_a_commit_that_changes_what_due_reads_runs_it_again(brand, acme, handler):
    from calendars import specs
    from calendars.specs import ClockSpec

    specs.register("tests.statute", ClockSpec(
        name="assess", due=lambda x: date.fromisoformat(x.get("statute_extended_to", "2030-04-15")),
        lives_on="subject"))
    tc, subject = acme
    armer = DirectArmer(brand=brand, domain=tc.id)
    clock = clock_open(armer=armer, brand=brand, domain=tc.id, subject=subject, spec_name="tests.statute",
                       owner_ref=subject.id, period="2026")
    assert items(clock)[""].due_date == date(2030, 4, 15)
    clock_inputs_changed(armer=armer, clock=clock, inputs={"statute_extended_to": "2031-12-31"})
    assert items(clock)[""].due_date == date(2031, 12, 31)
    ev = Event.objects.get(domain=tc.id, type="clock.moved", subject=clock.id)
    assert ev.data["by"] == "due"
    # Closes 23:59 New York (04:59Z); the due timer fires once that minute has ended.
    assert Timer.objects.get(domain=tc.id, key=f"{clock.id}:due:assess:2026@1").owed_at == at("2032-01-01T05:00Z")


def test_a_date_that_came_unsatisfied_waits_on_its_owners_choice(brand, acme):
    tc, subject = acme
    file, pay = open_return(brand, tc, subject)
    advance(tc.id, at("2028-05-20T00:00Z"))
    nj = ClockItem.objects.select_related("clock__subject__calendar").get(clock=file, item="US-NJ")
    assert nj.status == "open"  # extended by its own run rung to 11-15
    advance(tc.id, at("2028-11-17T00:00Z"))
    nj.refresh_from_db()
    assert nj.status == "due"
    armer = DirectArmer(brand=brand, domain=tc.id)
    assert clock_choose(armer=armer, item=nj, option="file late", by="Ada Lovelace") == "committed"
    assert Event.objects.filter(domain=tc.id, type="clock.chosen", subject=nj.owner_key).get().data["step"] == "file"
    assert Event.objects.filter(domain=tc.id, type="clock.step", subject=nj.owner_key).exists()
    item = ClockItem.objects.select_related("clock__subject__calendar").get(clock=pay, item="US")
    assert item.status == "passed"
    with pytest.raises(Refused) as err:  # the option names a step the hard date bars
        clock_choose(armer=armer, item=item, option="pay late")
    assert err.value.code == "date_passed"
    from timers.errors import KeepingTimeError

    with pytest.raises(KeepingTimeError) as err:
        clock_choose(armer=armer, item=item, option="shrug")
    assert err.value.code == "unknown_option"


def test_a_move_sends_again_only_what_is_still_ahead(brand, acme):
    # timers-and-replay, the re-arm table: clock.moved "supersedes each notice, escalate, ack and due timer still
    # ahead and arms its successor at @n+1". A rung that rang for the old date and whose time for the new one
    # has passed too is not armed again: it would send the same notice weeks late.
    tc, subject = acme
    file, _ = open_return(brand, tc, subject)
    advance(tc.id, at("2028-04-16T00:00Z"))  # NJ's 90d and 30d notices rang for 05-15
    nj = f"{file.id}#US-NJ"

    def notices():
        return [tuple(e) for e in Event.objects.filter(domain=tc.id, type="clock.notice", subject=nj)
                .order_by("fired_at", "id").values_list("data__rung", "data__due")]

    assert notices() == [("notice 90d", "2028-05-15"), ("notice 30d", "2028-05-15")]
    assert calendar_close_day(calendar=subject.calendar, day=date(2028, 5, 15), why="office closed") == 1
    assert items(file)["US-NJ"].due_date == date(2028, 5, 16)
    assert not Timer.objects.filter(domain=tc.id, key=f"{nj}:rung:notice 90d:2027@1").exists()
    # Still ahead for the new date: the 30d notice rings for 05-16 (as notice 30d@1 rings for the extended
    # date in the seed), and the escalation moves a day.
    assert owed(tc, f"{nj}:rung:notice 30d:2027@1") == at("2028-04-16T13:00Z")
    assert owed(tc, f"{nj}:rung:escalate 7d:2027@1") == at("2028-05-09T13:00Z")
    advance(tc.id, at("2028-05-01T00:00Z"))
    assert notices() == [("notice 90d", "2028-05-15"), ("notice 30d", "2028-05-15"), ("notice 30d", "2028-05-16")]


def test_a_move_earlier_sends_the_latest_notice_it_passed_over(brand, acme):
    # The other way: rungs still ahead whose times for the new date have passed are re-armed, and the gap rule
    # sends only the latest of them at once (the earlier one is recorded superseded by 'gap').
    from calendars import specs
    from calendars.specs import ClockSpec

    specs.register("tests.moving", ClockSpec(
        name="report", due=lambda x: date.fromisoformat(x.get("due", "2027-09-30")),
        rungs=("notice 60d", "notice 30d", "notice 10d"), lives_on="subject"))
    tc, subject = acme  # frozen at 2027-06-01 12:00Z: every rung is ahead
    armer = DirectArmer(brand=brand, domain=tc.id)
    clock = clock_open(armer=armer, brand=brand, domain=tc.id, subject=subject, spec_name="tests.moving",
                       owner_ref=subject.id, period="2027")
    clock_inputs_changed(armer=armer, clock=clock, inputs={"due": "2027-06-22"})
    advance(tc.id, at("2027-06-02T00:00Z"))
    sent = [tuple(e) for e in Event.objects.filter(domain=tc.id, type="clock.notice", subject=clock.id)
            .values_list("data__rung", "data__due")]
    assert sent == [("notice 30d", "2027-06-22")]
    gap = Timer.objects.get(domain=tc.id, key=f"{clock.id}:rung:notice 60d:2027@1")
    assert (gap.status, gap.by) == ("superseded", "gap")
    assert owed(tc, f"{clock.id}:rung:notice 10d:2027@1") == at("2027-06-12T13:00Z")
