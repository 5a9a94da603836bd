"""The CLI as a user types it, and the owner console's read-only lists."""

from __future__ import annotations

import contextvars
from datetime import timedelta
from io import StringIO

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from tests.conftest import T0
from tests.support.cli import run
from timers.models import Timer, live_domain


def test_tick_trace_prints_the_seed_header_and_rows(arm, clock):
    arm("job_7Hq7:ask:glossary:1", "2026-11-24T14:02:11Z")
    arm("sbn_7Hq2:cycle:renew:#2", "2026-11-25T14:02:11Z", handler="repeat",
        data={"every": {"days": 30}, "count": 3, "n": 2})
    out = run("tick", "--to", "2026-12-01T09:00Z", "--test-clock", clock.id, "--trace")
    lines = out.splitlines()
    assert lines[0] == (f"{clock.id} · 2026-11-24 09:00:00Z → 2026-12-01 09:00:00Z · UTC · 2 fired · 0 held · "
                        "each instant in place order · 1 armed · 1 pass")
    assert lines[1].split() == ["pass", "owed", "fired", "place", "kind", "on", "what"]
    assert lines[2].split()[:7] == ["1", "2026-11-24", "14:02:11Z", "2026-11-24", "14:02:11Z", "3", "ask"]
    assert "sbn_7Hq2" in lines[3] and lines[4].startswith("  armed 1") and "2026-12-25 14:02:11Z" in lines[4]


def test_tick_on_filters_the_trace(arm, clock):
    arm("job_1:ask:a:1", "2026-11-24T14:00Z")
    arm("job_2:ask:a:1", "2026-11-24T15:00Z")
    out = run("tick", "1d", "--test-clock", clock.id, "--trace", "--on", "job_2")
    assert "job_2" in out and "job_1" not in out.split("\n", 2)[2]


def test_tick_span_and_compare(arm, clock):
    arm("job_1:ask:a:1", "2026-12-24T14:00Z", handler="repeat", data={"every": {"days": 7}, "count": 10})
    out = run("tick", "1y", "--compare", "--redeliver", "--test-clock", clock.id)
    lines = out.splitlines()
    assert len(lines) == 6 and lines[-1].startswith("all 4 agree · sha256:")
    assert "10 events" in lines[1] and "10 replayed: true · 0 submissions sent twice" in lines[4]
    assert Timer.objects.filter(domain=clock.id, status="fired").count() == 0  # compare leaves the clock as it was
    run("tick", "1y", "--test-clock", clock.id)
    assert Timer.objects.filter(domain=clock.id, status="fired").count() == 10


@pytest.mark.parametrize(
    ("args", "code"),
    [
        (["tick", "1y"], "test_clock_required"),
        (["tick", "1x", "--test-clock", "{clock}"], "invalid_span"),
        (["tick", "--to", "yesterday", "--test-clock", "{clock}"], "invalid_time"),
        (["tick", "--to", "2026-12-01T09:00", "--test-clock", "{clock}"], "invalid_time"),
        (["tick", "--to", "2020-01-01T00:00Z", "--test-clock", "{clock}"], "test_clock_backward"),
        (["tick", "1d", "--test-clock", "tc_nope"], "resource_missing"),
        (["timers", "arm", "job_1:nope:a:1", "--owed", "2026-12-01T00:00Z", "--test-clock", "{clock}"], "invalid_key"),
        (["timers", "arm", "job_1:ask:a:1", "--owed", "2026-12-01T00:00Z", "--handler", "x", "--test-clock",
          "{clock}"], "unknown_handler"),
        (["timers", "show", "tmr_nope"], "resource_missing"),
    ],
)
def test_bad_input_is_one_line_with_a_code(clock, args, code):
    with pytest.raises(CommandError) as err:
        run(*[a.format(clock=clock.id) for a in args])
    assert str(err.value).startswith(f"{code}: ") and "\n" not in str(err.value)


def test_timers_list_and_show(arm, clock):
    t = arm("job_4Tx9:deadline:at_risk:2027", "2026-11-25T14:00Z")
    for i in range(8):
        arm(f"job_4Tx9:rung:notice {i}d:2027@0", f"2026-12-0{i + 1}T14:00Z")
    run("tick", "--to", "2026-11-26T00:00Z", "--test-clock", clock.id)
    out = run("timers", "list", "--on", "job_4Tx9", "--test-clock", clock.id)
    lines = out.splitlines()
    assert lines[0] == "job_4Tx9 · at 2026-11-26 00:00Z · UTC · 1 fired · 0 held · 8 armed, the next 6 below"
    assert lines[2].split()[:2] == [t.id, "fired"] and len(lines) == 2 + 1 + 6
    out = run("timers", "list", "--on", "job_4Tx9", "--status", "armed", "--next", "20", "--test-clock", clock.id)
    assert len(out.splitlines()) == 2 + 8
    shown = run("timers", "show", t.id)
    assert '"object": "timer"' in shown and '"replayed"' not in shown and '"commit": {' in shown


def test_owner_console_lists_timers_clocks_and_events_read_only(admin_client, arm, clock):
    arm("job_1:ask:a:1", "2026-11-24T14:00Z")
    run("tick", "1d", "--test-clock", clock.id)
    for url in ["/admin/timers/timer/", "/admin/timers/timer/?status__exact=fired&kind__exact=ask",
                "/admin/timers/testclock/", "/admin/timers/event/", "/admin/timers/event/?type=timer.fired"]:
        resp = admin_client.get(url)
        assert resp.status_code == 200, url
    page = admin_client.get("/admin/timers/timer/").content.decode()
    assert "job_1:ask:a:1" in page and "By status" in page and "By kind" in page
    assert admin_client.get("/admin/timers/timer/add/").status_code == 403


def test_owner_console_lists_timers_that_fired_late(admin_client, brand):
    from datetime import timedelta

    from tests.conftest import at
    from timers.arming import timer_arm
    from timers.clock import VirtualWallClock
    from timers.live import live_step

    for key, owed in (("job_L:deadline:late:1", "2026-11-20T09:00Z"), ("job_L:deadline:ontime:1", "2026-11-20T09:58Z")):
        timer_arm(brand=brand, key=key, owed_at=at(owed), handler="noop")
    Timer.objects.filter(domain=live_domain(brand.id)).update(armed_at=at("2026-11-19T00:00Z"))
    live_step(VirtualWallClock(at("2026-11-20T10:00Z")))
    assert Timer.objects.get(key="job_L:deadline:late:1").late_by == timedelta(hours=1)
    page = admin_client.get("/admin/timers/timer/?late=yes").content.decode()
    assert "job_L:deadline:late:1" in page and "job_L:deadline:ontime:1" not in page
    assert "1h" in page


def test_a_bar_hears_the_flushes_of_its_own_context_only(clock, arm):
    from timers.advance import advance
    from timers.progress import on_flushes

    arm("job_1:ask:a:1", T0 + timedelta(days=1))
    arm("job_2:ask:b:1", T0 + timedelta(days=3))
    heard: list = []
    with on_flushes(lambda domain, at: heard.append((domain, at))):
        # Another thread's (or task's) run: a fresh context, as a worker thread beside the CLI would have.
        contextvars.Context().run(advance, clock.id, T0 + timedelta(days=2))
        assert heard == []
        advance(clock.id, T0 + timedelta(days=4))
    assert heard and {d for d, _ in heard} == {clock.id} and heard[-1][1] == T0 + timedelta(days=4)
    advance(clock.id, T0 + timedelta(days=5))  # the bar is gone
    assert heard[-1][1] == T0 + timedelta(days=4)


def test_timers_list_after_each_kind_of_act_outside_the_tick(brand):
    """An act outside the tick (the API's satisfy, a wait and a resume, a postpone) supersedes and holds timers
    as the tick does; the list of a job's timers then prints every one, history and held alike (it crashed on a
    superseded timer with no owed time)."""
    from datetime import date

    from calendars.brand_calendars import calendar_create, calendar_postpone
    from calendars.clocks import clock_satisfy
    from calendars.models import ClockItem
    from services.jobs import job_resume_work, job_wait
    from services.orders import job_order
    from services.subjects import subject_create
    from timers.armer import DirectArmer
    from timers.test_clocks import test_clock_create

    start = T0.replace(year=2027, month=1, day=20)
    tc = test_clock_create(brand=brand, frozen_time=start, name="acts")
    cal = calendar_create(brand=brand, name="NY", zone="America/New_York", now=start)
    subject = subject_create(brand=brand, domain=tc.id, kind="taxpayer", key="12-3456789", name="Acme",
                             calendar=cal, now=start)
    job = job_order(brand=brand, subject=subject, service="annual-return", period="2026")
    armer = DirectArmer(brand=brand, domain=tc.id)
    items = list(ClockItem.objects.filter(clock__owner_ref=job.id).select_related("clock__subject__calendar"))
    clock_satisfy(armer=armer, item=next(i for i in items if i.clock.name == "pay"), by="Ada")
    if not job.waiting_on:  # the return opens waiting on the organizer's books
        job_wait(armer=armer, job=job, on="the organizer")
    job.refresh_from_db()
    job_resume_work(armer=armer, job=job)
    calendar_postpone(calendar=cal, items=[next(i for i in items if i.clock.name == "file")],
                      to=date(2027, 5, 17), notice="IR-2027-01")
    # A portal's acknowledge (its ack asks end) and a hand-over to the brand, outside the tick too.
    from calendars.acts import STEWARD, clock_acknowledge, clock_reassign

    file_item = next(i for i in items if i.clock.name == "file")
    file_item.refresh_from_db()
    clock_acknowledge(armer=armer, item=file_item, by="Ada")
    clock_reassign(armer=armer, clock=file_item.clock, to=STEWARD, by="Ada", why="handed to the brand")
    out = StringIO()
    call_command("timers", "list", "--on", job.id, "--test-clock", tc.id, stdout=out)
    text = out.getvalue()
    assert "superseded" in text and job.id in text.splitlines()[0]
    assert Timer.objects.filter(domain=tc.id, status="superseded", owed_at__isnull=False).exists()
    for clock_id in {i.clock_id for i in items}:
        call_command("timers", "list", "--on", clock_id, "--test-clock", tc.id, stdout=StringIO())
