"""A schedule's lifecycle after it is made (issue 40): update with a revision as the conflict token (the next fire
re-armed, open Runs untouched), delete (nothing fires after it, an open Run settles, the schedule stays
readable), bounds (start_at, end_at, remaining_actions), a skip list, and backfill. Each on a test clock; the
expected instants are written out by hand or computed from zoneinfo, never read from our output."""

from __future__ import annotations

from datetime import UTC, date, datetime, time, timedelta
from io import StringIO
from zoneinfo import ZoneInfo

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from services.jobs import job_deliver
from services.models import Job
from tests.conftest import at
from tests.timers.test_schedules import clock_at, ticks
from tests.timers.test_schedules import fixtures_loaded as fixtures_loaded  # noqa: F401 - a fixture, autouse
from tests.timers.test_schedules import subject as subject  # noqa: F401 - a fixture
from tests.timers.test_schedules import target as target  # noqa: F401 - a fixture
from timers.advance import advance
from timers.armer import DirectArmer
from timers.errors import KeepingTimeError
from timers.models import Event, Schedule, ScheduleRun, Timer
from timers.schedule_changes import schedule_backfill, schedule_delete, schedule_update
from timers.schedules import schedule_create, schedule_json, schedule_pause

NY = ZoneInfo("America/New_York")


def events(sch: Schedule, type_: str) -> list[dict]:
    return list(Event.objects.filter(subject=sch.id, type=type_).order_by("seq").values_list("data", flat=True))


def intended(sch: Schedule) -> list[str]:
    return [r.intended_at.strftime("%H:%M") for r in ScheduleRun.objects.filter(schedule=sch).order_by("intended_at")]


# -- update ----------------------------------------------------------------------------------------------
def test_an_update_mid_span_re_arms_the_next_fire_and_leaves_the_open_run(brand, subject):  # noqa: F811
    tc = clock_at(brand, "2027-01-04T15:05Z")
    sch = schedule_create(brand=brand, domain=tc.id, spec={"every": "10m"}, overlap="allow",
                          target={"service": "t-task", "subject": subject(tc).id})
    advance(tc.id, at("2027-01-04T15:12Z"))  # the 15:10 Run is open (its job is)
    run = ScheduleRun.objects.get(schedule=sch)
    assert run.state == "open" and schedule_json(sch)["next_fire_times"][0] == "2027-01-04T15:20:00Z"

    sch = schedule_update(schedule=sch, revision=1, spec={"every": "15m"})
    assert sch.revision == 2
    # Every 15 minutes from the epoch: 15:15 is the first after 15:12, not the old 15:20.
    assert schedule_json(sch)["next_fire_times"][:3] == [
        "2027-01-04T15:15:00Z", "2027-01-04T15:30:00Z", "2027-01-04T15:45:00Z"]
    old = Timer.objects.get(domain=tc.id, key=f"{sch.id}:schedule:fire:20270104T1520Z")
    assert old.status == "superseded" and old.by == "schedule.update"
    assert events(sch, "schedule.updated") == [{"revision": 2, "changed": {"spec": {"every": "15m"}},
                                                "next": "2027-01-04T15:15:00Z"}]
    run.refresh_from_db()
    assert run.state == "open" and run.intended_at == at("2027-01-04T15:10Z")  # untouched

    with pytest.raises(KeepingTimeError) as err:  # a stale revision changes nothing
        schedule_update(schedule=sch, revision=1, spec={"every": "5m"})
    assert err.value.code == "schedule_revision_conflict" and err.value.status == 409
    advance(tc.id, at("2027-01-04T15:50Z"))
    assert intended(sch) == ["15:10", "15:15", "15:30", "15:45"]
    # An update back to a spec whose next instant was superseded before arms it again (its key has @revision).
    sch = schedule_update(schedule=sch, spec={"every": "10m"})
    sch = schedule_update(schedule=sch, spec={"every": "15m"})
    sch = schedule_update(schedule=sch, spec={"every": "10m"})
    advance(tc.id, at("2027-01-04T16:05Z"))
    assert intended(sch)[-2:] == ["15:45", "16:00"] and sch.revision == 5


def test_a_zone_change_moves_the_next_fire_to_the_zones_wall_time(brand, target):  # noqa: F811
    tc = clock_at(brand, "2027-01-04T10:00Z")
    sch = schedule_create(brand=brand, domain=tc.id, spec={"cron": "0 9 * * *"}, target={"url": target.url})
    assert schedule_json(sch)["next_fire_times"][0] == "2027-01-05T09:00:00Z"
    sch = schedule_update(schedule=sch, zone="America/New_York")
    expected = datetime.combine(date(2027, 1, 4), time(9), NY).astimezone(UTC)  # 09:00 New York today: 14:00Z
    assert schedule_json(sch)["next_fire_times"][0] == expected.strftime("%Y-%m-%dT%H:%M:%SZ")
    advance(tc.id, at("2027-01-05T00:00Z"))
    assert ticks(sch) == [(expected.strftime("%Y-%m-%dT%H:%MZ"), "succeeded")]
    same = schedule_update(schedule=sch, zone="America/New_York", revision=2)  # nothing changed: no revision
    assert same.revision == 2 and len(events(sch, "schedule.updated")) == 1


# -- delete ----------------------------------------------------------------------------------------------
def test_a_delete_fires_nothing_after_it_and_its_open_run_settles(brand, subject):  # noqa: F811
    tc = clock_at(brand, "2027-01-04T15:05Z")
    sbj = subject(tc).id
    sch = schedule_create(brand=brand, domain=tc.id, spec={"every": "10m"}, overlap="allow", name="tasks",
                          target={"service": "t-task", "subject": sbj})
    advance(tc.id, at("2027-01-04T15:12Z"))
    schedule_delete(schedule=sch)
    assert not Timer.objects.filter(domain=tc.id, owner=sch.id, status__in=["armed", "held"]).exists()
    advance(tc.id, at("2027-01-04T16:30Z"))
    assert intended(sch) == ["15:10"]  # nothing after the delete
    job = Job.objects.get(schedule=sch.id)
    job_deliver(armer=DirectArmer(brand=brand, domain=tc.id), job=job)
    run = ScheduleRun.objects.get(schedule=sch)
    assert run.state == "closed" and run.outcome == "job delivered"  # the open Run went on and settled
    sch.refresh_from_db()
    read = schedule_json(sch)
    assert read["deleted"] is True and read["next_fire_times"] == [] and read["ended"] == "deleted"
    assert [t["scheduled_at"] for t in read["recent_ticks"]] == ["2027-01-04T15:10:00Z"]
    with pytest.raises(KeepingTimeError) as err:
        schedule_pause(schedule=sch)
    assert err.value.code == "schedule_deleted" and err.value.status == 409
    # Its name is free again.
    schedule_create(brand=brand, domain=tc.id, spec={"every": "1h"}, name="tasks",
                    target={"service": "t-task", "subject": sbj})


# -- bounds --------------------------------------------------------------------------------------------
def test_start_at_and_end_at_bound_the_fires(brand, target):  # noqa: F811
    tc = clock_at(brand, "2027-01-04T00:00Z")
    sch = schedule_create(brand=brand, domain=tc.id, spec={"every": "1h"}, target={"url": target.url},
                          start_at=at("2027-01-04T03:30Z"), end_at=at("2027-01-04T06:00Z"))
    assert schedule_json(sch)["next_fire_times"] == ["2027-01-04T04:00:00Z", "2027-01-04T05:00:00Z",
                                                     "2027-01-04T06:00:00Z"]
    advance(tc.id, at("2027-01-04T09:00Z"))
    assert [t for t, _ in ticks(sch)] == ["2027-01-04T04:00Z", "2027-01-04T05:00Z", "2027-01-04T06:00Z"]
    read = schedule_json(sch)
    assert read["ended"] == "end_at" and read["next_fire_times"] == []
    assert events(sch, "schedule.ended") == [{"why": "end_at", "last": "2027-01-04T06:00:00Z"}]


def test_remaining_actions_stops_the_schedule_at_zero_and_says_so(brand, target):  # noqa: F811
    tc = clock_at(brand, "2027-01-04T00:30Z")
    sch = schedule_create(brand=brand, domain=tc.id, spec={"every": "1h"}, target={"url": target.url},
                          remaining_actions=2)
    advance(tc.id, at("2027-01-04T06:00Z"))
    sch.refresh_from_db()
    assert [t for t, _ in ticks(sch)] == ["2027-01-04T01:00Z", "2027-01-04T02:00Z"]
    assert sch.remaining_actions == 0
    read = schedule_json(sch)
    assert read["ended"] == "remaining_actions" and read["next_fire_times"] == []
    assert events(sch, "schedule.ended") == [{"why": "remaining_actions", "last": "2027-01-04T02:00:00Z"}]
    # More actions given back: it fires again from now.
    schedule_update(schedule=sch, remaining_actions=1)
    advance(tc.id, at("2027-01-04T09:00Z"))
    assert [t for t, _ in ticks(sch)][-1] == "2027-01-04T07:00Z" and len(ticks(sch)) == 3


# -- skip --------------------------------------------------------------------------------------------------
def test_a_skip_list_leaves_out_its_dates_and_cron_times_recorded_with_why(brand, target):  # noqa: F811
    tc = clock_at(brand, "2027-12-22T15:00Z")
    sch = schedule_create(brand=brand, domain=tc.id, spec={"cron": "0 9 * * *"}, zone="America/New_York",
                          target={"url": target.url}, skip=["2027-12-25", "0 9 * * 0"])
    # Every day at 09:00 New York from the 23rd to the 29th, but Christmas and Sundays (the 26th), from zoneinfo.
    days = [date(2027, 12, d) for d in range(23, 30)]
    want = [datetime.combine(d, time(9), NY).astimezone(UTC) for d in days
            if d != date(2027, 12, 25) and d.weekday() != 6]
    assert schedule_json(sch)["next_fire_times"] == [w.strftime("%Y-%m-%dT%H:%M:%SZ") for w in want[:5]]
    advance(tc.id, at("2027-12-29T23:00Z"))
    assert [t for t, _ in ticks(sch)] == [w.strftime("%Y-%m-%dT%H:%MZ") for w in want]
    assert [(e["at"], e["why"]) for e in events(sch, "schedule.skipped")] == [
        ("2027-12-25T14:00:00Z", "skip 2027-12-25"), ("2027-12-26T14:00:00Z", "skip 0 9 * * 0")]


@pytest.mark.parametrize(("skip", "param"), [(["2027-02-30"], "skip"), (["not cron"], "skip"), ("0 9 * * *", "skip")])
def test_a_bad_skip_is_invalid_skip(brand, clock, target, skip, param):  # noqa: F811
    with pytest.raises(KeepingTimeError) as err:
        schedule_create(brand=brand, domain=clock.id, spec={"every": "1h"}, target={"url": target.url}, skip=skip)
    assert err.value.code == "invalid_skip" and err.value.param == param


# -- backfill --------------------------------------------------------------------------------------------
def test_a_backfill_over_a_half_run_span_starts_only_the_other_half_in_order(brand, target):  # noqa: F811
    tc = clock_at(brand, "2027-01-04T00:30Z")
    sch = schedule_create(brand=brand, domain=tc.id, spec={"every": "1h"}, target={"url": target.url},
                          catchup_window="10s")
    advance(tc.id, at("2027-01-04T02:30Z"))  # 01:00 and 02:00 run
    schedule_pause(schedule=sch)
    advance(tc.id, at("2027-01-04T05:30Z"))  # 03:00, 04:00 and 05:00 pass paused
    sch = schedule_update(schedule=sch, paused=False)  # older than the window: missed
    advance(tc.id, at("2027-01-04T05:30Z"))
    assert [t for t, _ in ticks(sch)] == ["2027-01-04T01:00Z", "2027-01-04T02:00Z"]
    got = schedule_backfill(schedule=sch, start=at("2027-01-04T00:30Z"), end=at("2027-01-04T05:30Z"))
    assert got["already_run"] == ["2027-01-04T01:00:00Z", "2027-01-04T02:00:00Z"]
    assert got["fires"] == ["2027-01-04T03:00:00Z", "2027-01-04T04:00:00Z", "2027-01-04T05:00:00Z"]
    advance(tc.id, at("2027-01-04T05:30Z"))
    assert [t for t, _ in ticks(sch)] == ["2027-01-04T01:00Z", "2027-01-04T02:00Z", "2027-01-04T03:00Z",
                                          "2027-01-04T04:00Z", "2027-01-04T05:00Z"]
    # Started in order: the record's fires, as they were fired.
    assert [e["at"] for e in events(sch, "schedule.fired")][2:] == [
        "2027-01-04T03:00:00Z", "2027-01-04T04:00:00Z", "2027-01-04T05:00:00Z"]
    assert sorted(target.scheduled()) == [f"2027-01-04T0{h}:00:00Z" for h in range(1, 6)]
    again = schedule_backfill(schedule=sch, start=at("2027-01-04T00:30Z"), end=at("2027-01-04T05:30Z"))
    assert again["fires"] == [] and len(again["already_run"]) == 5  # one instant, one Run
    # A span that runs past now ends at now: what is ahead fires on its own.
    ahead = schedule_backfill(schedule=sch, start=at("2027-01-04T05:00Z"), end=at("2027-01-04T07:00Z"))
    assert ahead["end"] == "2027-01-04T05:30:00Z" and ahead["fires"] == []
    # A long span is asked for 1000 instants a call, and says where the next begins.
    tc2 = clock_at(brand, "2027-03-01T00:00Z")
    minutely = schedule_create(brand=brand, domain=tc2.id, spec={"every": "1m"}, target={"url": target.url},
                               paused=True)
    long = schedule_backfill(schedule=minutely, start=at("2027-02-27T00:00Z"), end=at("2027-03-01T00:00Z"))
    assert len(long["fires"]) == 1000 and long["fires"][-1] == "2027-02-27T16:39:00Z"
    assert long["has_more"] and long["next_start"] == "2027-02-27T16:40:00Z"


# -- jitter ------------------------------------------------------------------------------------------------
def test_jitter_delays_each_fire_within_its_bound_and_the_run_keeps_its_instant(brand, target):  # noqa: F811
    import hashlib

    from timers.domains import domain_seed

    tc = clock_at(brand, "2027-01-04T00:00Z")
    sch = schedule_create(brand=brand, domain=tc.id, spec={"every": "10m"}, target={"url": target.url},
                          jitter="5m")
    advance(tc.id, at("2027-01-04T02:00Z"))
    runs = list(ScheduleRun.objects.filter(schedule=sch).order_by("intended_at"))
    # 02:00 starts after 02:00: up to five minutes late, by design.
    assert [r.intended_at for r in runs] == [at("2027-01-04T00:10Z") + timedelta(minutes=10 * n) for n in range(11)]
    seed = domain_seed(tc.id)
    for r in runs:  # the delay, computed here from the documented rule: sha256 of (seed, schedule, instant)
        digest = hashlib.sha256(f"{seed}|{sch.id}|{r.intended_at.astimezone(UTC).isoformat()}".encode()).digest()
        want = timedelta(microseconds=int.from_bytes(digest[:8], "big") % 300_000_000)
        assert r.started_at - r.intended_at == want and timedelta(0) <= want < timedelta(minutes=5)
    assert len({r.started_at - r.intended_at for r in runs}) > 6  # spread, not one delay


# -- the API and the CLI ---------------------------------------------------------------------------------
def test_the_api_updates_deletes_and_backfills(api, clock, target):  # noqa: F811
    sid = api.post("/schedules", {"test_clock": clock.id, "spec": {"every": "1h"}, "target": {"url": target.url},
                                  "skip": ["0 12 * * *"], "remaining_actions": 5}, format="json").json()["id"]
    r = api.post(f"/schedules/{sid}", {"revision": 1, "spec": {"every": "2h"}, "end_at": "2026-12-01T00:00Z"},
                 format="json")
    assert r.status_code == 200, r.json()
    body = r.json()
    assert body["revision"] == 2 and body["end_at"] == "2026-12-01T00:00:00Z" and body["remaining_actions"] == 5
    assert body["skip"] == ["0 12 * * *"]
    assert body["next_fire_times"][:2] == ["2026-11-24T10:00:00Z", "2026-11-24T14:00:00Z"]  # 12:00 skipped
    r = api.post(f"/schedules/{sid}", {"revision": 1, "zone": "Europe/Paris"}, format="json")
    assert r.status_code == 409 and r.json()["error"]["code"] == "schedule_revision_conflict"
    for bad, code, param in (({"jitter": "5y"}, "invalid_request", "jitter"),
                             ({"target": {"service": "t-task", "subject": "sbj_x"}}, "schedule_target_kind", None),
                             ({"skip": ["tomorrow"]}, "invalid_skip", "skip"),
                             ({"remaining_actions": -1}, "invalid_request", "remaining_actions"),
                             ({"every": "1h"}, "parameter_unknown", "every")):
        r = api.post(f"/schedules/{sid}", bad, format="json")
        assert r.status_code == (409 if code == "schedule_target_kind" else 400), (bad, r.json())
        assert r.json()["error"]["code"] == code, (bad, r.json())
        assert r.json()["error"].get("param") == param, (bad, r.json())
    advance(clock.id, at("2026-11-24T10:30Z"))
    r = api.post(f"/schedules/{sid}/backfill", {"start": "2026-11-24T09:00Z", "end": "2026-11-24T10:30Z",
                                                "overlap": "allow"}, format="json")
    assert r.status_code == 200, r.json()
    assert r.json()["fires"] == [] and r.json()["already_run"] == ["2026-11-24T10:00:00Z"]
    r = api.delete(f"/schedules/{sid}")
    assert r.status_code == 200 and r.json()["deleted"] is True
    assert api.get(f"/schedules/{sid}").json()["deleted"] is True
    assert api.get(f"/schedules?test_clock={clock.id}").json()["data"] == []
    assert api.delete(f"/schedules/{sid}").json()["error"]["code"] == "schedule_deleted"


def test_the_cli_updates_deletes_and_backfills(brand, clock, target):  # noqa: F811
    sch = schedule_create(brand=brand, domain=clock.id, spec={"every": "1h"}, target={"url": target.url})

    def run(*args) -> str:
        out = StringIO()
        call_command("schedules", *args, stdout=out)
        return out.getvalue()

    assert "revision 2" in run("update", sch.id, "--spec", '{"every": "30m"}', "--revision", "1")
    with pytest.raises(CommandError, match="schedule_revision_conflict"):
        run("update", sch.id, "--zone", "Europe/Paris", "--revision", "1")
    with pytest.raises(CommandError, match="invalid_skip"):
        run("update", sch.id, "--skip", "nope")
    advance(clock.id, clock.frozen_time + timedelta(hours=1))
    out = run("backfill", sch.id, "--start", "2026-11-24T08:00Z", "--end", "2026-11-24T10:00Z")
    # Made at 09:00 (first fire 10:00), every 30m from 09:00: 08:00, 08:30 and 09:00 fire; 09:30 and 10:00 ran.
    assert "3 to fire, 2 already run" in out
    assert "deleted" in run("delete", sch.id)
    with pytest.raises(CommandError, match="schedule_deleted"):
        run("delete", sch.id)


def test_the_four_ways_agree_on_bounded_skipping_jittered_schedules(brand, target):  # noqa: F811
    from timers.compare import compare

    tc = clock_at(brand, "2027-03-12T12:00Z")
    schedule_create(brand=brand, domain=tc.id, spec={"cron": "30 2 * * *"}, zone="America/New_York",
                    target={"url": target.url}, skip=["0-59 * * * 6"], end_at=at("2027-03-15T12:00Z"))
    schedule_create(brand=brand, domain=tc.id, spec={"every": "6h"}, remaining_actions=5, target={"url": target.url},
                    jitter="2h")
    ways = compare(tc.id, at("2027-03-16T12:00Z"), redeliver=True)
    assert len({w.sha256 for w in ways}) == 1, [(w.label, w.events, w.sha256) for w in ways]



def test_an_update_while_paused_re_arms_a_held_fire_and_keeps_the_period_quota(brand, target):  # noqa: F811
    tc = clock_at(brand, "2027-01-04T00:05Z")
    sch = schedule_create(brand=brand, domain=tc.id, spec={"every": "1h"}, target={"url": target.url})
    schedule_pause(schedule=sch)
    sch = schedule_update(schedule=sch, spec={"every": "2h"})
    held = Timer.objects.get(domain=tc.id, owner=sch.id, status="held")
    assert held.data["at"] == "2027-01-04T02:00:00Z" and held.key.endswith("@2")
    assert not Timer.objects.filter(domain=tc.id, owner=sch.id, status="armed").exists()
    advance(tc.id, at("2027-01-04T03:00Z"))
    assert ticks(sch) == []  # still paused
    with pytest.raises(KeepingTimeError) as err:
        schedule_update(schedule=sch, spec={"every": "30s"})
    assert err.value.code == "quota_exceeded"
    sch.refresh_from_db()
    assert sch.spec == {"every": "2h"} and sch.revision == 2
