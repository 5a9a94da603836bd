"""The Schedule resource on PostgreSQL: specs in a zone with the DST rule, run identity, ticks and dead letters
(a real local HTTP server as the target), overlap, the catch-up window, pause and resume, the API and the CLI."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from datetime import timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from io import StringIO

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.db import connection

from calendars.models import Calendar, Subject
from services import registry
from services.jobs import job_deliver
from services.models import Job
from tests.conftest import admin_url, at
from timers import schedule_spec
from timers.advance import advance
from timers.armer import DirectArmer
from timers.arming import timer_arm
from timers.clock import VirtualWallClock
from timers.errors import KeepingTimeError
from timers.live import live_step
from timers.models import DeadLetter, Event, Outbox, Schedule, ScheduleRun, ScheduleTick
from timers.schedule_targets import FIRE
from timers.schedules import (
    next_fire_at,
    schedule_create,
    schedule_json,
    schedule_pause,
    schedule_resume,
    schedule_trigger,
)
from timers.signing import SIGNATURE_HEADER, verify
from timers.test_clocks import test_clock_create

NY = "America/New_York"


# -- a real HTTP target --------------------------------------------------------------------------------
class Target:
    """A local HTTP endpoint that keeps every POST (headers and body) and answers ``status`` (or the next of
    ``statuses``)."""

    def __init__(self) -> None:
        self.status = 200
        self.statuses: list[int] = []
        self.delay = 0.0  # seconds before answering
        self.calls: list[dict] = []
        self._lock = threading.Lock()
        target = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args) -> None:
                pass

            def do_POST(self) -> None:  # noqa: N802 - http.server's name
                body = self.rfile.read(int(self.headers["Content-Length"]))
                with target._lock:
                    code = target.statuses.pop(0) if target.statuses else target.status
                    target.calls.append({"headers": dict(self.headers), "body": body, "status": code})
                if target.delay:
                    time.sleep(target.delay)
                data = json.dumps({"ok": code < 300}).encode()
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/hooks/fire"
        self._thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self._thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()

    def scheduled(self) -> list[str]:
        return [json.loads(c["body"])["scheduled_at"] for c in self.calls]


@pytest.fixture
def target() -> Iterator[Target]:
    t = Target()
    yield t
    t.close()


@pytest.fixture(autouse=True)
def fixtures_loaded():
    registry.load(["tests.support.svc_fixtures"])


def clock_at(brand, when: str):
    return test_clock_create(brand=brand, frozen_time=at(when), name="schedules")


def ticks(sch: Schedule) -> list[tuple[str, str]]:
    return [(t.intended_at.strftime("%Y-%m-%dT%H:%MZ"), t.state)
            for t in ScheduleTick.objects.filter(schedule=sch).order_by("intended_at")]


def started(sch: Schedule) -> list[tuple[str, str]]:
    """(intended, started) of each Run started, in the order they started."""
    return [(r.intended_at.strftime("%H:%M"), r.started_at.strftime("%H:%M"))
            for r in ScheduleRun.objects.filter(schedule=sch, started_at__isnull=False).order_by("started_at",
                                                                                                 "intended_at")]


# -- (1) specs in a zone, with the DST rule ------------------------------------------------------------
def _fires(spec: dict, zone: str, start: str, n: int) -> list[str]:
    ev = schedule_spec.parse(spec, zone)
    return [t.strftime("%Y-%m-%dT%H:%MZ") for t in schedule_spec.next_fires(ev, at(start), n)]


def test_cron_in_a_zone_skipped_minute_fires_at_the_next_and_a_repeated_hour_once():
    # 02:30 New York: 07:30Z in EST; on 2027-03-14 02:30 does not exist (03:00 EDT); then 06:30Z in EDT.
    assert _fires({"cron": "30 2 * * *"}, NY, "2027-03-12T12:00Z", 4) == [
        "2027-03-13T07:30Z", "2027-03-14T07:00Z", "2027-03-15T06:30Z", "2027-03-16T06:30Z"]
    # Every 30 minutes through the fall change: 01:00 and 01:30 happen twice and fire once, at the first.
    assert _fires({"cron": "*/30 * * * *"}, NY, "2027-11-07T04:10Z", 5) == [
        "2027-11-07T04:30Z", "2027-11-07T05:00Z", "2027-11-07T05:30Z", "2027-11-07T07:00Z", "2027-11-07T07:30Z"]
    # ... and through the spring gap, 02:00 and 02:30 both fall on 03:00, which fires once.
    assert _fires({"cron": "*/30 * * * *"}, NY, "2027-03-14T06:10Z", 3) == [
        "2027-03-14T06:30Z", "2027-03-14T07:00Z", "2027-03-14T07:30Z"]


def test_interval_with_phase_and_calendar_period_with_a_local_at():
    assert _fires({"every": "30m", "phase": "5m"}, "UTC", "2027-01-01T02:00Z", 3) == [
        "2027-01-01T02:05Z", "2027-01-01T02:35Z", "2027-01-01T03:05Z"]
    assert _fires({"every": "30m", "phase": "35m"}, "UTC", "2027-01-01T02:00Z", 1) == ["2027-01-01T02:05Z"]
    # Weekdays at 09:00 New York: a range; a reversed one reads from the smaller to the larger.
    assert _fires({"cron": "0 9 * * 5-1"}, NY, "2027-01-01T15:00Z", 2) == ["2027-01-04T14:00Z", "2027-01-05T14:00Z"]
    # A month's '1mo after end' at 06:30 local (not 09:00), EST then EDT.
    assert _fires({"each": "month", "at": "1mo after end", "time": "06:30"}, NY, "2027-02-15T00:00Z", 3) == [
        "2027-03-01T11:30Z", "2027-04-01T10:30Z", "2027-05-01T10:30Z"]


@pytest.mark.parametrize("spec", [
    {}, {"cron": "61 * * * *"}, {"cron": 5}, {"cron": "0 0 30 2 *"}, {"cron": "30 2 * * *\n"}, {"cron": "@daily"},
    {"every": "1mo"}, {"every": "10000m"}, {"every": "10m", "phase": "-5m"}, {"every": "1h", "at": "x"},
    {"each": "fortnight"}, {"each": "month", "at": "1mo after pay"}, {"each": "month", "time": "25:00"},
    {"each": "month", "ends": "02-30"},
])
def test_a_bad_spec_is_invalid_spec(spec):
    with pytest.raises(KeepingTimeError) as err:
        schedule_spec.parse(spec, "UTC")
    assert err.value.code == "invalid_spec" and err.value.status == 400


def test_repeat_steps_in_local_time_across_the_spring_change(brand, clock, arm):
    """A repeat started at 02:30 EST rings at 03:00 on the change (02:30 does not exist) and at 02:30 EDT
    after it; it used to add 24h in UTC and ring at 03:30 EDT."""
    arm("job_r:ask:reminder:1", "2027-03-13T07:30Z", handler="repeat",
        data={"every": {"days": 1}, "count": 3, "zone": NY})
    advance(clock.id, at("2027-03-16T00:00Z"))
    fired = list(Event.objects.filter(domain=clock.id, type="timer.fired").order_by("seq")
                 .values_list("owed_at", flat=True))
    assert fired == [at("2027-03-13T07:30Z"), at("2027-03-14T07:00Z"), at("2027-03-15T06:30Z")]


def test_a_daily_0230_new_york_schedule_fires_once_a_day_across_both_changes(brand, target):
    for start, end, expected in (
        ("2027-03-12T12:00Z", "2027-03-16T12:00Z",
         ["2027-03-13T07:30:00Z", "2027-03-14T07:00:00Z", "2027-03-15T06:30:00Z", "2027-03-16T06:30:00Z"]),
        ("2027-11-05T12:00Z", "2027-11-09T12:00Z",
         ["2027-11-06T06:30:00Z", "2027-11-07T07:30:00Z", "2027-11-08T07:30:00Z", "2027-11-09T07:30:00Z"]),
    ):
        tc = clock_at(brand, start)
        sch = schedule_create(brand=brand, domain=tc.id, spec={"cron": "30 2 * * *"}, zone=NY,
                              target={"url": target.url})
        advance(tc.id, at(end))
        assert [t for t, _ in ticks(sch)] == [e[:16] + "Z" for e in expected]
        assert all(state == "succeeded" for _, state in ticks(sch))
    # A claim's calls leave several at once (timers/outbox.py, concurrent_sends): they arrive in any order.
    assert sorted(target.scheduled()) == [e for pair in (
        ["2027-03-13T07:30:00Z", "2027-03-14T07:00:00Z", "2027-03-15T06:30:00Z", "2027-03-16T06:30:00Z"],
        ["2027-11-06T06:30:00Z", "2027-11-07T07:30:00Z", "2027-11-08T07:30:00Z", "2027-11-09T07:30:00Z"]) for e in pair]


# -- (2) run identity, ticks, the HTTP target and dead letters -----------------------------------------
def test_a_duplicated_wake_starts_one_run(brand, clock, target):
    sch = schedule_create(brand=brand, domain=clock.id, spec={"every": "1h"}, target={"url": target.url},
                          overlap="allow")
    # A second wake for the schedule's first instant, under another timer (a redelivery the gate cannot see).
    first = next_fire_at(sch)
    timer_arm(brand=brand, key=f"{sch.id}:schedule:fire:again", owed_at=first, domain=clock.id, handler=FIRE,
              data={"at": first.isoformat()})
    advance(clock.id, first)
    assert ScheduleRun.objects.filter(schedule=sch).count() == 1
    assert len(target.calls) == 1
    assert Event.objects.filter(domain=clock.id, type="schedule.duplicate").count() == 1


def test_without_the_run_identity_constraint_the_duplicate_wake_starts_twice(brand, clock, target):
    """The guarantee is the constraint: dropped, the same two wakes start two Runs and call twice."""
    if connection.vendor != "postgresql":
        pytest.skip("drops the constraint in the test's transaction: PostgreSQL's DDL is transactional")
    with connection.cursor() as cur:
        cur.execute("ALTER TABLE timers_schedulerun DROP CONSTRAINT schedule_run_once")
    sch = schedule_create(brand=brand, domain=clock.id, spec={"every": "1h"}, target={"url": target.url},
                          overlap="allow")
    first = next_fire_at(sch)
    timer_arm(brand=brand, key=f"{sch.id}:schedule:fire:again", owed_at=first, domain=clock.id, handler=FIRE,
              data={"at": first.isoformat()})
    advance(clock.id, first)
    assert ScheduleRun.objects.filter(schedule=sch).count() == 2
    assert len(target.calls) == 2


def test_a_2xx_succeeds_the_tick_signed_with_the_submission_as_idempotency_key(brand, clock, target):
    sch = schedule_create(brand=brand, domain=clock.id, spec={"every": "1h"}, target={"url": target.url})
    advance(clock.id, at("2026-11-24T10:00Z"))
    assert ticks(sch) == [("2026-11-24T10:00Z", "succeeded")]
    (call,) = target.calls
    body = json.loads(call["body"])
    run = ScheduleRun.objects.get(schedule=sch)
    assert body["scheduled_at"] == "2026-11-24T10:00:00Z" and body["run"] == run.id
    assert call["headers"]["Idempotency-Key"] == body["id"] == run.ref
    assert verify(sch.secret, call["body"], call["headers"][SIGNATURE_HEADER])
    assert not verify("whsec_other", call["body"], call["headers"][SIGNATURE_HEADER])
    run.refresh_from_db()
    assert run.state == "closed" and run.outcome == "http 200"  # the Run's own outcome: the HTTP answer
    assert not DeadLetter.objects.exists()


def test_a_target_answering_500_dead_letters_its_tick_after_its_retries(brand, clock, target):
    target.status = 500
    sch = schedule_create(brand=brand, domain=clock.id, spec={"every": "1h"},
                          target={"url": target.url, "retries": 0, "timeout": 5})
    advance(clock.id, at("2026-11-24T10:00Z"))
    assert ticks(sch) == [("2026-11-24T10:00Z", "dead_lettered")]
    letter = DeadLetter.objects.get(schedule=sch)
    assert letter.status == 500 and "500" in letter.error and letter.payload["scheduled_at"] == "2026-11-24T10:00:00Z"
    read = schedule_json(sch)
    assert read["last_tick"]["state"] == "dead_lettered" and read["dead_letters"][0]["status"] == 500
    assert read["last_tick"]["run"]["state"] == "closed"


def test_a_500_is_retried_with_the_same_idempotency_key_then_succeeds(brand, clock, target):
    target.statuses = [500]
    sch = schedule_create(brand=brand, domain=clock.id, spec={"every": "1h"},
                          target={"url": target.url, "retries": 2})
    advance(clock.id, at("2026-11-24T10:00Z"))
    assert ticks(sch) == [("2026-11-24T10:00Z", "open")]  # in doubt, retrying: the Run is open
    row = Outbox.objects.get(transport="schedule.http")
    assert row.status == "sending" and row.error
    Outbox.objects.filter(pk=row.pk).update(next_try_at=None)  # the backoff is wall time: skip it
    advance(clock.id, at("2026-11-24T10:00Z"))
    assert ticks(sch) == [("2026-11-24T10:00Z", "succeeded")]
    keys = [c["headers"]["Idempotency-Key"] for c in target.calls]
    assert len(keys) == 2 and keys[0] == keys[1]


def test_a_target_that_outlasts_its_timeout_is_dead_lettered(brand, clock, target):
    target.delay = 3.0
    sch = schedule_create(brand=brand, domain=clock.id, spec={"every": "1h"},
                          target={"url": target.url, "retries": 0, "timeout": 0.3})
    advance(clock.id, at("2026-11-24T10:00Z"))
    assert ticks(sch) == [("2026-11-24T10:00Z", "dead_lettered")]
    assert "timed out" in DeadLetter.objects.get(schedule=sch).error


def test_a_refusal_4xx_is_not_retried(brand, clock, target):
    target.status = 422
    sch = schedule_create(brand=brand, domain=clock.id, spec={"every": "1h"}, target={"url": target.url, "retries": 3})
    advance(clock.id, at("2026-11-24T10:00Z"))
    assert ticks(sch) == [("2026-11-24T10:00Z", "dead_lettered")] and len(target.calls) == 1


# -- (3) overlap: every 10 minutes, the :10 Run open until :34 -----------------------------------------
@pytest.fixture
def subject(brand):
    def make(tc):
        cal = Calendar.objects.create(brand=brand, name=f"ny {tc.id}", zone=NY)
        return Subject.objects.create(brand=brand, domain=tc.id, kind="account", key_name="domain",
                                      key="acme.example", name="Acme", calendar=cal, created_at=tc.frozen_time)
    return make


def _overlap(brand, subject, policy: str):
    tc = clock_at(brand, "2027-01-04T15:05Z")
    sbj = subject(tc)
    sch = schedule_create(brand=brand, domain=tc.id, spec={"every": "10m"}, overlap=policy,
                          target={"service": "t-task", "subject": sbj.id})
    advance(tc.id, at("2027-01-04T15:34Z"))
    first = Job.objects.get(pk=ScheduleRun.objects.get(schedule=sch, intended_at=at("2027-01-04T15:10Z")).ref)
    if first.status == Job.Status.OPEN:
        job_deliver(armer=DirectArmer(brand=brand, domain=tc.id), job=first)  # the :10 Run closes at :34
    return tc, sch


def _deliver_open(brand, tc, sch) -> None:
    for job in Job.objects.filter(schedule=sch.id, status=Job.Status.OPEN).order_by("opened_at"):
        job_deliver(armer=DirectArmer(brand=brand, domain=tc.id), job=job)


def test_overlap_skip_starts_nothing_while_the_run_is_open(brand, subject):
    tc, sch = _overlap(brand, subject, "skip")
    advance(tc.id, at("2027-01-04T15:45Z"))
    sch.refresh_from_db()
    assert started(sch) == [("15:10", "15:10"), ("15:40", "15:40")]
    assert sch.skipped == 2 and sch.dropped == 0


def test_overlap_buffer_all_starts_each_in_order_as_the_last_closes(brand, subject):
    tc, sch = _overlap(brand, subject, "buffer_all")
    advance(tc.id, at("2027-01-04T15:34Z"))  # :20 starts at :34, when :10 closed
    tc.refresh_from_db()
    advance(tc.id, at("2027-01-04T15:36Z"))
    _deliver_open(brand, tc, sch)  # :20 closes at :36: :30 starts
    advance(tc.id, at("2027-01-04T15:37Z"))
    sch.refresh_from_db()
    assert started(sch) == [("15:10", "15:10"), ("15:20", "15:34"), ("15:30", "15:36")]
    assert sch.skipped == 0 and sch.dropped == 0


def test_overlap_buffer_all_is_bounded_and_counts_its_overflow(brand, subject):
    tc = clock_at(brand, "2027-01-04T15:05Z")
    sch = schedule_create(brand=brand, domain=tc.id, spec={"every": "10m"}, overlap="buffer_all", buffer_limit=2,
                          target={"service": "t-task", "subject": subject(tc).id})
    advance(tc.id, at("2027-01-04T15:55Z"))  # :10 open all along: :20 and :30 wait, :40 and :50 overflow
    sch.refresh_from_db()
    assert schedule_json(sch)["buffered"] == ["2027-01-04T15:20:00Z", "2027-01-04T15:30:00Z"]
    assert sch.dropped == 2 and started(sch) == [("15:10", "15:10")]


def test_overlap_buffer_one_starts_one_and_drops_the_rest(brand, subject):
    tc, sch = _overlap(brand, subject, "buffer_one")
    advance(tc.id, at("2027-01-04T15:35Z"))
    sch.refresh_from_db()
    assert started(sch) == [("15:10", "15:10"), ("15:20", "15:34")]
    assert sch.dropped == 1 and sch.skipped == 0


def test_overlap_cancel_other_cancels_the_open_run_and_starts_the_newest(brand, subject):
    tc, sch = _overlap(brand, subject, "cancel_other")
    sch.refresh_from_db()
    assert started(sch) == [("15:10", "15:10"), ("15:20", "15:20"), ("15:30", "15:30")]
    status = dict(Job.objects.filter(schedule=sch.id).values_list("id", "status"))
    jobs = {r.intended_at.strftime("%H:%M"): status[r.ref] for r in ScheduleRun.objects.filter(schedule=sch)
            if r.ref}
    assert jobs == {"15:10": "canceled", "15:20": "canceled", "15:30": "open"}
    outcomes = dict(ScheduleRun.objects.filter(schedule=sch).values_list("intended_at__minute", "outcome"))
    assert outcomes[10] == "job canceled" and outcomes[20] == "job canceled"


def test_overlap_allow_starts_each_on_time(brand, subject):
    tc, sch = _overlap(brand, subject, "allow")
    sch.refresh_from_db()
    assert started(sch) == [("15:10", "15:10"), ("15:20", "15:20"), ("15:30", "15:30")]
    assert sch.skipped == sch.dropped == 0


# -- (4) the catch-up window, pause and resume ---------------------------------------------------------
def test_catch_up_starts_only_what_the_window_keeps(brand, target):
    """Every 30 minutes at :05 and :35; the worker is down from 02:00 to 06:00; a 45-minute window: only
    05:35 starts, and the seven older fires are counted missed."""
    tc = clock_at(brand, "2027-01-04T01:50Z")
    sch = schedule_create(brand=brand, domain=tc.id, spec={"every": "30m", "phase": "5m"}, catchup_window="45m",
                          target={"url": target.url})
    advance(tc.id, at("2027-01-04T02:00Z"))
    live_step(VirtualWallClock(at("2027-01-04T06:00Z")), domain=tc.id)  # the worker comes back at 06:00
    sch.refresh_from_db()
    assert ticks(sch) == [("2027-01-04T05:35Z", "succeeded")]
    assert sch.missed == 7
    assert target.scheduled() == ["2027-01-04T05:35:00Z"]
    assert next_fire_at(sch) == at("2027-01-04T06:05Z")


def test_pause_skips_and_resume_follows_the_window(brand, target):
    tc = clock_at(brand, "2027-01-04T00:12Z")
    sch = schedule_create(brand=brand, domain=tc.id, spec={"every": "10m"}, catchup_window="25m", overlap="allow",
                          target={"url": target.url})
    schedule_pause(schedule=sch, note="migrating the endpoint")
    sch.refresh_from_db()
    assert sch.paused and sch.pause_note == "migrating the endpoint" and schedule_json(sch)["next_fire_times"] == []
    advance(tc.id, at("2027-01-04T01:00Z"))
    assert not target.calls  # paused: nothing starts
    schedule_resume(schedule=sch)  # at 01:00: :20 … 01:00 were missed; the window keeps 00:35 onward
    advance(tc.id, at("2027-01-04T01:05Z"))
    sch.refresh_from_db()
    assert [t for t, _ in ticks(sch)] == ["2027-01-04T00:40Z", "2027-01-04T00:50Z", "2027-01-04T01:00Z"]
    assert sch.missed == 2 and not sch.paused
    assert sch.spec == {"every": "10m"} and sch.revision == 1  # a pause keeps the spec and revision


def test_catchup_window_outside_10s_to_365d_is_refused(brand, clock, target):
    for window in ("5s", "366d", "1mo", 9, "soon"):
        with pytest.raises(KeepingTimeError) as err:
            schedule_create(brand=brand, domain=clock.id, spec={"every": "1h"}, target={"url": target.url},
                            catchup_window=window)
        assert err.value.code == "invalid_catchup_window" and err.value.status == 400
    assert not Schedule.objects.exists()


def test_on_a_test_clock_a_failing_call_is_settled_at_its_fire_however_the_advance_is_cut(brand, target):
    """schedules.txt: a schedule runs "the same way on a test clock as on the brand's own". The outbox retries a
    failing call in wall time, outside the clock's; whether the next fire found the Run open depended on
    whether the advance was one call (the call still queued: fired) or two (its retry pending: skipped)."""
    target.status = 500

    def way(steps: list[str]) -> tuple[list, int]:
        tc = clock_at(brand, "2027-03-01T00:00Z")
        sch = schedule_create(brand=brand, domain=tc.id, spec={"every": "1h"},
                              target={"url": target.url, "retries": 3})
        for step in steps:
            advance(tc.id, at(step))
        sch.refresh_from_db()
        return started(sch), sch.skipped

    one = way(["2027-03-01T03:30Z"])
    two = way(["2027-03-01T01:30Z", "2027-03-01T03:30Z"])
    assert one == two == ([("01:00", "01:00"), ("02:00", "02:00"), ("03:00", "03:00")], 0)


def test_trigger_fires_now_under_the_overlap_policy(brand, clock, target):
    sch = schedule_create(brand=brand, domain=clock.id, spec={"every": "1d"}, target={"url": target.url})
    schedule_trigger(schedule=sch)
    with pytest.raises(KeepingTimeError) as err:
        schedule_trigger(schedule=sch)
    assert err.value.code == "schedule_triggered"
    advance(clock.id, clock.frozen_time)
    assert ticks(sch) == [("2026-11-24T09:00Z", "succeeded")]


def test_an_hourly_schedules_fires_are_written_per_batch_not_per_fire(brand, clock, target, monkeypatch):
    """Ten days of an hourly HTTP schedule in one advance: the schedule is read once a batch, its Runs, ticks
    and next fires written as sets, its next fires' timers looked for in one query; each fire used to cost
    seven statements (a savepoint, the schedule's row, the Run, the tick, its ref). Every statement psycopg
    sends is counted but the outbox's (its claims, receipts and settles: a few per 200 sends, more the slower
    the far end, as receipts are written every half second)."""
    if connection.vendor != "postgresql":
        pytest.skip("counts at psycopg's cursor")
    import psycopg

    sch = schedule_create(brand=brand, domain=clock.id, spec={"every": "1h"}, target={"url": target.url})
    from timers import outbox

    sent, sending = [], []
    for name in ("execute", "executemany", "copy"):
        original = psycopg.Cursor.__dict__[name]

        def counted(cur, query, *args, _original=original, **kwargs):
            if not sending:
                sent.append(query)
            return _original(cur, query, *args, **kwargs)

        monkeypatch.setattr(psycopg.Cursor, name, counted)
    deliver = outbox.deliver

    def delivering(*args, **kwargs):
        sending.append(1)
        try:
            return deliver(*args, **kwargs)
        finally:
            sending.pop()

    monkeypatch.setattr(outbox, "deliver", delivering)
    stats = advance(clock.id, clock.frozen_time + timedelta(days=10))
    monkeypatch.undo()
    assert stats.fired == 240 and len(target.calls) == 240
    assert ScheduleRun.objects.filter(schedule=sch, state="closed", outcome="http 200").count() == 240
    assert ScheduleTick.objects.filter(schedule=sch, state="succeeded").count() == 240
    # An advance's own statements (its lease, the clock's row, the batch's fetch and flush) are about 30
    # whatever it fires; the fires add a few per batch of thousands.
    assert len(sent) <= 40 + 0.05 * stats.fired, f"{len(sent)} statements for {stats.fired} fires:\n" + "\n".join(
        str(q)[:100] for q in sent)


def test_a_fires_rows_are_built_without_model_init(brand, clock, target, monkeypatch):
    """The Run and tick each fire keeps, and on PostgreSQL its send's outbox row, are built as values
    (timers.rows.new, the store's tuples): Model.__init__ for three rows a fire was a fifth of an HTTP schedule's
    fire in Python. What is written is as before: every Run closed on its 200, every tick succeeded."""
    from collections import Counter

    from django.db.models import Model

    sch = schedule_create(brand=brand, domain=clock.id, spec={"every": "1h"}, target={"url": target.url})
    made: Counter[str] = Counter()
    init = Model.__init__

    def counted(self, *args, **kwargs):
        made[type(self).__name__] += 1
        init(self, *args, **kwargs)

    monkeypatch.setattr(Model, "__init__", counted)
    stats = advance(clock.id, clock.frozen_time + timedelta(days=2))
    monkeypatch.undo()
    assert stats.fired == 48 and len(target.calls) == 48
    assert made["ScheduleRun"] == made["ScheduleTick"] == 0, made
    if connection.vendor == "postgresql":
        assert made["Outbox"] == 0, made
    assert ScheduleRun.objects.filter(schedule=sch, state="closed", outcome="http 200").count() == 48
    assert ScheduleTick.objects.filter(schedule=sch, state="succeeded").count() == 48


def test_an_advances_sends_are_written_claimed_by_its_sender_not_claimed_again(brand, clock, target, monkeypatch):
    """An advance's batch writes its sends claimed by the advance's own sender (outbox.claim_ahead), which sends
    them once the batch commits: a row is written twice (the batch's COPY, the receipt), where a claim wrote it
    a third time, 200 rows a statement. Every call still arrives once."""
    if connection.vendor != "postgresql":
        pytest.skip("a sender is a PostgreSQL session; SQLite's batches leave their sends owed to any sender")
    from timers import outbox

    sch = schedule_create(brand=brand, domain=clock.id, spec={"every": "1h"}, target={"url": target.url})
    claimed: list[int] = []
    claim = outbox._claim

    def counted(*args, **kwargs):
        rows = claim(*args, **kwargs)
        claimed.append(len(rows))
        return rows

    monkeypatch.setattr(outbox, "_claim", counted)
    stats = advance(clock.id, clock.frozen_time + timedelta(days=3))
    assert stats.fired == 72 and stats.sends.sent == 72 and sum(claimed) == 0, claimed
    assert len(target.calls) == 72 and len({json.loads(c["body"])["id"] for c in target.calls}) == 72
    assert set(Outbox.objects.filter(domain=clock.id).values_list("status", flat=True)) == {"sent"}
    assert ScheduleRun.objects.filter(schedule=sch, state="closed", outcome="http 200").count() == 72


def test_a_row_built_as_values_is_the_row_init_builds(brand, clock):
    from timers.rows import new

    sch = Schedule.objects.create(id="sch_values", brand=brand, domain=clock.id, spec={"every": "1h"},
                                  target_kind="http", target={}, created_at=clock.frozen_time)
    values = {"id": "run_values", "schedule": sch, "intended_at": clock.frozen_time, "state": "open",
              "started_at": clock.frozen_time}
    built, inited = new(ScheduleRun, **values), ScheduleRun(**values)
    fields = [f.attname for f in ScheduleRun._meta.concrete_fields]
    assert [getattr(built, f) for f in fields] == [getattr(inited, f) for f in fields]
    assert built.schedule is sch and built._state.adding and built._state.db is None
    tick = new(ScheduleTick, id="tck_values", schedule=sch, run=built, intended_at=built.intended_at,
               fired_at=built.started_at)
    assert tick.run is built and tick.run_id == "run_values" and tick.state == "open" and tick.settled_at is None
    built.save(force_insert=True)
    tick.save(force_insert=True)
    assert ScheduleTick.objects.get(pk="tck_values").run.schedule_id == "sch_values"
    with pytest.raises(TypeError):
        new(ScheduleRun, id="run_x", scheduled=sch)


def test_the_four_ways_agree_on_a_clock_with_schedules(brand, subject, target):
    """One advance, daily advances, the live loop and every wake twice record the same fires in the same order:
    a settle lands outside tick order, so it writes rows, never the record."""
    from timers.compare import compare

    tc = clock_at(brand, "2027-03-12T12:00Z")
    schedule_create(brand=brand, domain=tc.id, spec={"cron": "30 2 * * *"}, zone=NY, target={"url": target.url})
    schedule_create(brand=brand, domain=tc.id, spec={"every": "6h"}, overlap="buffer_one",
                    target={"service": "t-task", "subject": subject(tc).id})
    ways = compare(tc.id, at("2027-03-16T12:00Z"), redeliver=True)
    assert len({w.sha256 for w in ways}) == 1, [(w.label, w.events, w.sha256) for w in ways]
    assert ways[0].events > 10 and ways[3].replayed == ways[0].fired and ways[3].sent_twice == 0


def test_a_services_schedule_mints_through_the_same_runs_and_ticks(brand, subject):
    """A subscription's schedule is a Schedule row: each mint a Run of (schedule, its instant) with a tick that
    succeeds with its job, and the Run closes when the job is delivered."""
    from services.subscriptions import subscription_create

    tc = clock_at(brand, "2027-01-02T14:00Z")
    sub = subscription_create(brand=brand, domain=tc.id, subject=subject(tc), service="t-monthly")
    sch = Schedule.objects.get(domain=tc.id, owner_ref=f"{sub.id}:job")
    assert sch.target_kind == "subscription" and sch.zone == NY
    advance(tc.id, at("2027-03-05T00:00Z"))
    jobs = list(Job.objects.filter(subscription=sub).order_by("opened_at"))
    runs = list(ScheduleRun.objects.filter(schedule=sch).order_by("intended_at"))
    assert [r.ref for r in runs] == [j.id for j in jobs] and len(jobs) == 3
    assert [state for _, state in ticks(sch)] == ["succeeded"] * 3
    assert ticks(sch)[0][0] == "2027-01-02T14:00Z"  # '1d after start' at 09:00 New York
    job_deliver(armer=DirectArmer(brand=brand, domain=tc.id), job=jobs[0])
    runs[0].refresh_from_db()
    assert runs[0].state == "closed" and runs[0].outcome == "job delivered"
    assert schedule_json(sch)["next_fire_times"] == ["2027-04-02T13:00:00Z"]  # EDT by April



def test_a_service_target_opens_its_job_for_the_period_the_service_declares(brand, subject):
    """The job a fire opens is of the Service's own period kind: the period the fire's day falls in (t-task's
    month), or, for a calendar-period spec of that kind, the period whose fire it is (the quarter that ended):
    its clocks' due functions read that period, where a fire's instant crashed them into dead letters."""
    from tests.support.acme import acme_subject

    tc = clock_at(brand, "2027-01-04T15:05Z")
    task = schedule_create(brand=brand, domain=tc.id, spec={"every": "1d"}, overlap="allow",
                           target={"service": "t-task", "subject": subject(tc).id})
    estimate = schedule_create(brand=brand, domain=tc.id, spec={"each": "quarter", "at": "15d after end",
                                                                "time": "09:00"}, zone=NY, overlap="allow",
                               target={"service": "estimate", "subject": acme_subject(brand, tc.id).id})
    advance(tc.id, at("2027-04-20T00:00Z"))
    days = list(Job.objects.filter(schedule=task.id).order_by("opened_at").values_list("period", flat=True))
    assert days[0] == "2027-01" and days[-1] == "2027-04" and len(days) == 106
    # 15 days after each quarter's end, at 09:00 New York: the quarter that ended is the job's.
    assert ticks(estimate) == [("2027-01-16T14:00Z", "succeeded"), ("2027-04-16T13:00Z", "succeeded")]
    jobs = Job.objects.filter(schedule=estimate.id).order_by("opened_at")
    assert [(j.period, j.status) for j in jobs] == [("2026-Q4", "open"), ("2027-Q1", "open")]
    assert not DeadLetter.objects.filter(schedule__in=[task, estimate]).exists()


def test_a_service_targets_input_is_checked_when_the_schedule_is_made(brand, subject, api):
    tc = clock_at(brand, "2027-01-04T15:05Z")
    sbj = subject(tc).id
    for bad, param in (({"reply_by": "not-a-date"}, "target.input.reply_by"), ({}, "target.input.reply_by")):
        r = api.post("/schedules", {"test_clock": tc.id, "spec": {"every": "1d"},
                                    "target": {"service": "notice-response", "subject": sbj, "input": bad}},
                     format="json")
        assert r.status_code == 400, r.json()
        assert r.json()["error"]["code"] == "invalid_input" and r.json()["error"]["param"] == param
    assert not Schedule.objects.filter(domain=tc.id).exists()


# -- (5) the API and the CLI -----------------------------------------------------------------------------
def test_the_api_creates_reads_pauses_resumes_and_triggers(api, clock, target):
    r = api.post("/schedules", {"test_clock": clock.id, "name": "nightly", "spec": {"cron": "30 2 * * *"},
                                "zone": NY, "target": {"url": target.url}, "catchup_window": "1h"}, format="json")
    assert r.status_code == 200, r.json()
    made = r.json()
    assert made["secret"].startswith("whsec_") and made["next_fire_times"][:2] == [
        "2026-11-25T07:30:00Z", "2026-11-26T07:30:00Z"]  # 02:30 New York, EST
    sid = made["id"]
    assert api.get(f"/schedules/{sid}").json().get("secret") is None  # shown once
    listed = api.get(f"/schedules?test_clock={clock.id}").json()
    assert [s["id"] for s in listed["data"]] == [sid]
    r = api.post(f"/schedules/{sid}/pause", {"pause_note": "quiet week"}, format="json")
    assert r.status_code == 200 and r.json()["paused"] and r.json()["pause_note"] == "quiet week"
    assert api.post(f"/schedules/{sid}/pause", {}, format="json").json()["error"]["code"] == "schedule_paused"
    assert api.post(f"/schedules/{sid}/resume", {}, format="json").json()["paused"] is False
    assert api.post(f"/schedules/{sid}/trigger", {}, format="json").status_code == 200
    advance(clock.id, clock.frozen_time)
    read = api.get(f"/schedules/{sid}").json()
    assert read["last_tick"]["state"] == "succeeded" and read["counters"]["fired"] == 1
    bad = api.post("/schedules", {"test_clock": clock.id, "spec": {"every": "1h"}, "target": {"url": target.url},
                                  "catchup_window": "2s"}, format="json")
    assert bad.status_code == 400 and bad.json()["error"]["code"] == "invalid_catchup_window"
    bad = api.post("/schedules", {"test_clock": clock.id, "spec": {"cron": "nope"}, "target": {"url": target.url}},
                   format="json")
    assert bad.status_code == 400 and bad.json()["error"]["code"] == "invalid_spec"
    assert api.get("/schedules/sch_nope").status_code == 404
    for body in ({"test_clock": clock.id, "spec": {"every": "1h"}, "target": {"url": target.url + "\x00"}},
                 {"test_clock": clock.id, "spec": {"cron": "* * * * *\x00"}, "target": {"url": target.url}},
                 {"test_clock": clock.id, "spec": {"every": "1h"}, "target": {"url": target.url}, "zone": "Mars/Base"},
                 {"test_clock": clock.id, "spec": {"every": "1h"}, "target": {"url": target.url}, "overlap": "queue"},
                 ["not", "an", "object"]):
        r = api.post("/schedules", body, format="json")
        assert r.status_code == 400, (body, r.status_code, r.content[:200])
    raw = json.dumps({"test_clock": clock.id, "spec": {"every": "1h"}, "target": {"url": target.url, "timeout": 0}})
    r = api.post("/schedules", raw.replace('"timeout": 0', '"timeout": 1e999'), content_type="application/json")
    assert r.status_code == 400
    assert Schedule.objects.count() == 1
    assert api.post("/schedules", {"spec": {"every": "1h"}, "target": {"url": target.url}},
                    format="json").json()["error"]["code"] == "live_mode_only"  # a test key names its clock


def test_the_cli_lists_shows_pauses_resumes_and_triggers(brand, clock, target):
    sch = schedule_create(brand=brand, domain=clock.id, spec={"every": "1h"}, target={"url": target.url},
                          name="hourly")

    def run(*args) -> str:
        out = StringIO()
        call_command("schedules", *args, stdout=out)
        return out.getvalue()

    assert sch.id in run("list", "--test-clock", clock.id)
    assert "paused" in run("pause", sch.id, "--note", "maintenance")
    with pytest.raises(CommandError, match="schedule_paused"):
        run("pause", sch.id)
    assert "resumed" in run("resume", sch.id)
    run("trigger", sch.id)
    advance(clock.id, clock.frozen_time)
    shown = run("show", sch.id)
    assert "succeeded" in shown and "America" not in shown and "hourly" in shown
    with pytest.raises(CommandError, match="resource_missing"):
        run("show", "sch_nope")


def test_the_admin_shows_schedules_with_ticks_and_dead_letters(admin_client, brand, clock, target):
    target.status = 500
    sch = schedule_create(brand=brand, domain=clock.id, spec={"every": "1h"}, name="hourly",
                          target={"url": target.url, "retries": 0})
    advance(clock.id, at("2026-11-24T10:00Z"))
    r = admin_client.get(admin_url(sch))
    assert r.status_code == 200, (r.status_code, r.headers.get("Location"))
    page = r.content.decode()
    assert "<td>failed</td>" in page and "HTTP 500" in page  # the console's page says it in the owner's words
    assert "hourly" in admin_client.get("/admin/timers/schedule/").content.decode()



# -- reading a chain of fires ahead ----------------------------------------------------------------------------
@pytest.mark.parametrize("batch, longest", [(1, 1), (8000, 23)])
def test_the_next_fires_are_read_ahead_only_as_far_as_the_batch_can_fire(brand, target, settings, monkeypatch,
                                                                        batch, longest):
    """What a fire reads ahead (its schedule's next fires, one query) is forgotten when the batch is written: a
    run of one-timer batches reads only the next fire's key, a big batch the day's chain in one query."""
    from timers.store import OrmStore, PostgresStore

    asked: list[int] = []
    for store in (PostgresStore, OrmStore):
        real = store.load_many

        def load_many(self, domain, keys, _real=real):
            asked.append(len(keys))
            return _real(self, domain, keys)

        monkeypatch.setattr(store, "load_many", load_many)
    settings.KEEPING_TIME = {**settings.KEEPING_TIME, "ADVANCE_BATCH_SIZE": batch}
    tc = clock_at(brand, "2027-01-04T00:30Z")
    sch = schedule_create(brand=brand, domain=tc.id, spec={"every": "1h"}, target={"url": target.url})
    advance(tc.id, at("2027-01-05T00:00Z"))
    assert len(ticks(sch)) == 24 and all(state == "succeeded" for _, state in ticks(sch))
    assert max(asked) == longest, asked
