"""`python manage.py mcp`: the agent tools over MCP on stdio, driven by the mcp package's own client spawning the
real command. Each tool is the API's call (the same functions, the same codes), scoped by the key's brand and
mode. One server process per test: the seed's acts and reads in one conversation."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from datetime import UTC, datetime

import anyio
import pytest
from django.core.management import CommandError, call_command
from django.db import connection
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

from calendars.clocks import clock_open
from calendars.models import Calendar, Clock, Contact, Subject
from services.models import Job, PolicyValue
from tests.conftest import T0, at
from tests.support import ROOT
from tests.timers.test_schedules import target as target  # noqa: F401 - a fixture
from tests.timers.test_schedules import ticks
from timers import arming, tenants, test_clocks
from timers.advance import advance
from timers.armer import DirectArmer
from timers.models import Brand, Event, Schedule, ScheduleRun, Timer
from timers.schedules import schedule_create

pytestmark = [
    pytest.mark.processes,
    pytest.mark.postgresql("a real process on the test database: PostgreSQL"),
    pytest.mark.django_db(transaction=True),
]
SCHEDULE_TOOLS = {"list_schedules", "get_schedule", "create_schedule", "update_schedule", "pause_schedule",
                  "resume_schedule", "trigger_schedule", "backfill_schedule", "delete_schedule"}
TOOLS = {"list_timers", "get_timer", "subject_calendar", "subject_timeline", "list_events", "set_policy",
         "advance_test_clock", "acknowledge", "unacknowledge", "list_contacts", "add_contact", *SCHEDULE_TOOLS}


def _env(secret: str | None) -> dict[str, str]:
    s = connection.settings_dict
    env = {k: v for k, v in os.environ.items() if k != "KT_API_KEY"}
    env["DATABASE_URL"] = f"postgres://{s['USER']}@{s['HOST'] or '127.0.0.1'}:{s['PORT'] or 5432}/{s['NAME']}"
    env["DJANGO_SETTINGS_MODULE"] = "keeping_time.settings"
    if secret:
        env["KT_API_KEY"] = secret
    return env


def converse(secret: str, script):
    """Run ``script(call)`` against one `manage.py mcp` process; ``call(tool, **args)`` answers (ok, value): the
    structured result, or the API's error body a refused call carries. Answers the tools listed, by name."""

    async def main():
        params = StdioServerParameters(command=sys.executable, args=["manage.py", "mcp"], env=_env(secret), cwd=ROOT)
        async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            listed = await session.list_tools()
            results = []

            async def call(tool: str, **args):
                result = await session.call_tool(tool, args)
                if result.is_error:
                    return False, json.loads(result.content[0].text)
                return True, result.structured_content

            results = await script(call)
            return {t.name: t for t in listed.tools}, results

    return anyio.run(main)


def _forsale() -> dict:
    from io import StringIO

    from django.core.management import call_command

    out = StringIO()
    call_command("loadexample", "api_forsale", stdout=out)
    tc = out.getvalue().split("test clock ")[1].split()[0]
    brand = Brand.objects.get(name="api.forsale")
    advance(tc, datetime(2027, 11, 4, 12, tzinfo=UTC))  # deal B's account last replied on 3 November
    return {"tc": tc, "brand": brand}


def test_the_seed_agent_moves_stall_days_and_reads_what_it_did():
    world = _forsale()
    tc, brand = world["tc"], world["brand"]
    _, secret = tenants.api_key_create(brand=brand)
    b = Job.objects.get(domain=tc, service="deal", period="B-2001")

    async def script(call):
        return {
            "policy": await call("set_policy", service="deal", name="stall_days", value=7, test_clock=tc),
            "timers": await call("list_timers", on=b.id, test_clock=tc, status="armed", limit=100),
            "events": await call("list_events", type="policy.*", test_clock=tc),
            "calendar": await call("subject_calendar", subject_id=b.subject_id, test_clock=tc,
                                   from_date="2027-11-01"),
            "timeline": await call("subject_timeline", subject_id=b.subject_id, test_clock=tc, limit=100),
            "timeline_zone": await call("subject_timeline", subject_id=b.subject_id, test_clock=tc, zone="Mars/X"),
            "unknown": await call("set_policy", service="deal", name="nope", value=3, test_clock=tc),
            "bad": await call("set_policy", service="deal", name="stall_days", value=0, test_clock=tc),
            "no_clock": await call("set_policy", service="deal", name="stall_days", value=7),
        }

    tools, r = converse(secret, script)
    assert set(tools) == TOOLS
    ok, policy = r["policy"]
    assert ok and policy["rearmed"] == [f"{b.id}:deadline:gone_dark:B-2001@2"]
    # gone_dark on 10 November (the reply on the 3rd + 7 days), not the 17th.
    rearmed = Timer.objects.get(domain=tc, key=policy["rearmed"][0])
    assert rearmed.owed_at == datetime(2027, 11, 10, 10, tzinfo=UTC) and rearmed.by == ""
    assert PolicyValue.objects.get(domain=tc, service="deal", name="stall_days").value == 7
    ok, timers = r["timers"]
    assert ok and rearmed.id in {t["id"] for t in timers["data"]}
    assert all(t["status"] == "armed" for t in timers["data"])
    ok, events = r["events"]
    assert ok and [e["type"] for e in events["data"]] == ["policy.set"]
    assert events["data"][0]["data"] == {"name": "stall_days", "from": 14, "to": 7}
    ok, calendar = r["calendar"]
    assert ok and calendar["subject"] == b.subject_id and calendar["from"] == "2027-11-01"
    ok, timeline = r["timeline"]
    assert ok and timeline["object"] == "list" and timeline["url"] == f"/subjects/{b.subject_id}/timeline"
    assert timeline["data"] and {e["object"] for e in timeline["data"]} == {"timeline_entry"}
    assert any(e["kind"] == "armed" for e in timeline["data"]) or timeline["has_more"]
    assert r["timeline_zone"][1]["error"]["code"] == "invalid_zone"
    # Refusals carry the API's codes, and change nothing.
    assert r["unknown"] == (False, {"error": {"type": "invalid_request_error", "code": "unknown_policy",
                                              "message": "deal has no policy 'nope'; its policy: stall_days"}})
    assert r["bad"][1]["error"]["code"] == "invalid_request" and r["bad"][1]["error"]["param"] == "value"
    assert r["no_clock"][1]["error"]["code"] == "live_mode_only"  # a test key acts on a test clock only
    assert Event.objects.filter(domain=tc, type="policy.set").count() == 1


def _ack_clock(brand) -> Clock:
    """apis.tax's file clock for 2027 on a test clock a week before its date: its ack rung asks daily."""
    tc = test_clocks.test_clock_create(brand=brand, frozen_time=datetime(2028, 4, 11, 14, tzinfo=UTC))
    cal = Calendar.objects.create(brand=brand, name="Acme", zone="America/New_York", holiday_country="US",
                                  holiday_subdiv="DC")
    subject = Subject.objects.create(brand=brand, domain=tc.id, kind="taxpayer", key_name="ein", key="12-3456789",
                                     name="Acme Robotics", calendar=cal, created_at=datetime(2027, 1, 20, tzinfo=UTC))
    # The Tax Plan's dates answer to the customer's officer: she is who acknowledges when no one is named.
    Contact.objects.create(brand=brand, subject=subject, name="Ada Lovelace", email="ada@robotics.example",
                           role="officer", primary=True, created_at=datetime(2027, 1, 20, tzinfo=UTC))
    return clock_open(armer=DirectArmer(brand=brand, domain=tc.id), brand=brand, domain=tc.id, subject=subject,
                      spec_name="annual-return.file", owner_ref="job_x1", period="2027", inputs={"states": ["CA"]})


def test_reads_and_acts_are_the_keys_brand_and_mode_only(brand, clock, arm):
    mine = arm("job_m1:task:call:1", "2026-11-25T09:00Z")
    other = Brand.objects.create(name="apis.other", created_at=T0)
    theirs = arming.timer_arm(brand=other, key="job_o1:task:call:1", owed_at=T0,
                                domain=test_clocks.test_clock_create(brand=other, frozen_time=T0).id, handler="noop")
    ack = _ack_clock(brand)
    asking = Timer.objects.filter(domain=ack.domain, owner=f"{ack.id}#US", key__contains=":ack ", status="armed")
    assert asking.count() == 1
    _, test_key = tenants.api_key_create(brand=brand)
    _, live_key = tenants.api_key_create(brand=brand, live=True)

    async def as_test(call):
        return [await call("get_timer", timer_id=mine.id),
                await call("get_timer", timer_id=theirs.id),
                await call("list_timers", test_clock=clock.id),
                await call("list_timers", status="ringing", test_clock=clock.id),
                await call("advance_test_clock", test_clock=clock.id, to="2026-11-01T00:00:00Z"),
                await call("advance_test_clock", test_clock=clock.id, span="2d"),
                await call("acknowledge", clock_id=ack.id, item="US"),
                await call("acknowledge", clock_id=ack.id, item="US-NY"),
                await call("subject_calendar", subject_id=ack.subject_id, from_date="April 1"),
                await call("unacknowledge", clock_id=ack.id, item="US"),
                await call("unacknowledge", clock_id=ack.id, item="US")]

    _, (mine_r, theirs_r, listed, bad, backward, moved, acked, no_item, bad_date, unacked,
        twice) = converse(test_key, as_test)
    assert mine_r[0] and mine_r[1]["key"] == "job_m1:task:call:1"
    assert theirs_r == (False, {"error": {"type": "invalid_request_error", "code": "resource_missing",
                                          "message": f"no timer {theirs.id!r}"}})  # another brand's: none
    assert [t["id"] for t in listed[1]["data"]] == [mine.id]
    assert (bad[1]["error"]["code"], bad[1]["error"]["param"]) == ("invalid_request", "status")
    assert backward[1]["error"]["code"] == "test_clock_backward"
    assert moved[0] and moved[1]["status"] == "advancing"
    clock.refresh_from_db()
    assert clock.advance_to == datetime(2026, 11, 26, 9, tzinfo=UTC)  # T0 + 2d, as `tick 2d`
    assert acked == (True, {"object": "acknowledgement", "clock": ack.id, "item": "US", "asks_ended": 1})
    event = Event.objects.get(domain=ack.domain, type="clock.acknowledged")
    assert event.data["by"] == "Ada Lovelace" and event.subject == f"{ack.id}#US"
    # Taken back: it asks again (one ask armed, one move on), on the record after the acknowledgement; twice,
    # there is nothing to take back.
    assert unacked == (True, {"object": "acknowledgement", "clock": ack.id, "item": "US", "taken_back": True})
    assert [k for k in asking.values_list("key", flat=True)] and all(k.endswith("@1") for k in asking.values_list(
        "key", flat=True))
    assert Event.objects.get(domain=ack.domain, type="clock.unacknowledged").seq > event.seq
    assert twice[1]["error"]["code"] == "not_acknowledged"
    assert no_item[1]["error"]["code"] == "resource_missing"
    assert (bad_date[1]["error"]["code"], bad_date[1]["error"]["param"]) == ("invalid_request", "from_date")

    async def as_live(call):
        return [await call("get_timer", timer_id=mine.id), await call("list_timers"),
                await call("advance_test_clock", test_clock=clock.id, to="2026-12-01T00:00:00Z"),
                await call("acknowledge", clock_id=ack.id, item="US-CA")]

    _, (hidden, live_list, live_advance, live_ack) = converse(live_key, as_live)
    assert hidden[1]["error"]["code"] == "resource_missing"  # a test clock's timer is not the live key's
    assert live_list == (True, {"object": "list", "data": [], "has_more": False, "url": "/timers"})
    assert live_advance[1]["error"]["code"] == "resource_missing"
    assert live_ack[1]["error"]["code"] == "resource_missing"
    assert Event.objects.filter(type="clock.acknowledged").count() == 1


def test_without_a_good_key_it_says_so_in_one_line_and_exits_non_zero(monkeypatch):
    proc = subprocess.run([sys.executable, "manage.py", "mcp", "--key", "sk_test_nope"], cwd=ROOT, env=_env(None),
                          capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=120)
    assert proc.returncode != 0 and proc.stdout == ""
    assert proc.stderr.strip() == ("CommandError: invalid_api_key: that key opens no brand (unknown or revoked); "
                                   "createapikey makes one")
    monkeypatch.delenv("KT_API_KEY", raising=False)
    with pytest.raises(CommandError, match="^invalid_api_key: no key: pass --key"):
        call_command("mcp")


# -- schedules: each tool is the API's call --------------------------------------------------------------
# Ids differ between twins (each clock mints its own): an answer is compared with each id replaced by its kind
# and the order it first appears in, so that the same shape with the same times and counts is equal.
_ID = re.compile(r"\b(sch|tc|tck|run|dlq|tmr|sub)_[A-Za-z0-9]+")


def shape(value):
    seen: dict[str, str] = {}

    def named(m: re.Match) -> str:
        if m.group(0) not in seen:
            seen[m.group(0)] = f"{m.group(1)}_{sum(1 for v in seen.values() if v.startswith(m.group(1) + '_'))}"
        return seen[m.group(0)]

    value = dict(value) if isinstance(value, dict) else value
    if isinstance(value, dict) and str(value.get("secret", "")).startswith("whsec_"):
        value["secret"] = "whsec_…"  # shown once, and each schedule's own
    return json.loads(_ID.sub(named, json.dumps(value)))


def api_call(api, tool: str, args: dict):
    """The API's request for ``tool(**args)``, answered as ``call`` answers: (ok, body)."""
    args = dict(args)
    sid = args.pop("schedule_id", None)
    for name in args.pop("clear", None) or []:
        args[name] = None  # what the tool's clear says: the API's null
    path = f"/schedules/{sid}"
    if tool == "list_schedules":
        r = api.get("/schedules", args)
    elif tool == "get_schedule":
        r = api.get(path)
    elif tool == "delete_schedule":
        r = api.delete(path)
    else:
        path = {"create_schedule": "/schedules", "update_schedule": path}.get(
            tool, f"{path}/{tool.removesuffix('_schedule')}")
        r = api.post(path, args or None, format="json")
    return r.status_code == 200, r.json()


def twin_steps(steps, ids: dict):
    """``steps`` over MCP with this twin's ids: each step (tool, args) with {sch} and {tc} in its values."""

    async def script(mcp):
        out = []
        for tool, args in steps:
            ok, value = await mcp(tool, **fill(args, ids))
            if tool == "create_schedule" and ok:
                ids["sch"] = value["id"]
            out.append((ok, value))
        return out

    return script


def fill(args: dict, ids: dict) -> dict:
    return json.loads(json.dumps(args).replace("{sch}", ids.get("sch", "")).replace("{tc}", ids["tc"]))


def same_over_mcp_and_api(secret, api, steps, mine: dict, twin: dict) -> list:
    """Each step over MCP on ``mine``, then over the API on ``twin`` (a clock at the same instant, its schedule
    made the same way); every answer, refusals too, the same but for ids. Answers the MCP's."""
    _, got = converse(secret, twin_steps(steps, mine))
    for (tool, args), (ok, value) in zip(steps, got, strict=True):
        want_ok, want = api_call(api, tool, fill(args, twin))
        if tool == "create_schedule" and want_ok:
            twin["sch"] = want["id"]
        got_shape, want_shape = shape(value), shape(want)
        assert (ok, got_shape) == (want_ok, want_shape), (tool, args, ok, want_ok, json.dumps({
            k: (got_shape.get(k), want_shape.get(k)) for k in {*got_shape, *want_shape}
            if got_shape.get(k) != want_shape.get(k)}))
    return got


def test_each_schedule_tool_answers_what_the_api_answers(brand, api, target):  # noqa: F811
    _, secret = tenants.api_key_create(brand=brand)
    mine, twin = ({"tc": test_clocks.test_clock_create(brand=brand, frozen_time=at("2027-01-04T00:30Z"),
                                                        name=name).id} for name in ("mcp", "api"))
    made = {"name": "hourly", "spec": {"every": "1h"}, "target": {"url": target.url}, "catchup_window": "10s"}

    # Made, read, changed: a stale revision and a bad skip refused with the API's code and param.
    first = same_over_mcp_and_api(secret, api, [
        ("create_schedule", {**made, "test_clock": "{tc}"}),
        ("create_schedule", made),  # a test key makes on a test clock only
        ("create_schedule", {**made, "test_clock": "{tc}"}),  # the name is taken
        ("get_schedule", {"schedule_id": "{sch}"}),
        ("list_schedules", {"test_clock": "{tc}"}),
        ("update_schedule", {"schedule_id": "{sch}", "revision": 1, "end_at": "2027-01-05T00:00:00Z",
                             "remaining_actions": 50, "skip": ["0 4 * * *"]}),
        ("update_schedule", {"schedule_id": "{sch}", "revision": 1, "zone": "Europe/Paris"}),
        ("update_schedule", {"schedule_id": "{sch}", "skip": ["tomorrow"]}),
        ("update_schedule", {"schedule_id": "{sch}", "remaining_actions": -1}),
        ("update_schedule", {"schedule_id": "{sch}", "revision": 2, "clear": ["end_at"]}),
        ("backfill_schedule", {"schedule_id": "{sch}", "start": "2027-01-04T00:00Z", "end": "later"}),
    ], mine, twin)
    created, no_clock, taken, _, listed, updated, stale, bad_skip, negative, cleared, bad_end = first
    assert created[0] and created[1]["secret"].startswith("whsec_") and created[1]["revision"] == 1
    assert created[1]["next_fire_times"][:2] == ["2027-01-04T01:00:00Z", "2027-01-04T02:00:00Z"]
    assert (no_clock[1]["error"]["code"], no_clock[1]["error"]["param"]) == ("live_mode_only", "test_clock")
    assert taken[1]["error"]["code"] == "schedule_name_taken"
    assert [s["id"] for s in listed[1]["data"]] == [mine["sch"]]
    assert updated[1]["revision"] == 2 and updated[1]["skip"] == ["0 4 * * *"]
    assert "2027-01-04T04:00:00Z" not in updated[1]["next_fire_times"]  # skipped
    assert stale == (False, {"error": {
        "type": "invalid_request_error", "code": "schedule_revision_conflict",
        "message": f"{mine['sch']} is at revision 2, not 1: read it again and apply the change to what it is now"}})
    assert (bad_skip[1]["error"]["code"], bad_skip[1]["error"]["param"]) == ("invalid_skip", "skip")
    assert (negative[1]["error"]["code"], negative[1]["error"]["param"]) == ("invalid_request", "remaining_actions")
    assert cleared[1]["revision"] == 3 and cleared[1]["end_at"] is None and cleared[1]["remaining_actions"] == 50
    assert (bad_end[1]["error"]["code"], bad_end[1]["error"]["param"]) == ("invalid_time", "end")
    sch = Schedule.objects.get(pk=mine["sch"])
    assert sch.revision == 3 and sch.zone == "UTC"  # the refusals changed nothing

    for clock in (mine, twin):
        advance(clock["tc"], at("2027-01-04T02:30Z"))  # 01:00 and 02:00 run
    paused = same_over_mcp_and_api(secret, api, [
        ("pause_schedule", {"schedule_id": "{sch}", "pause_note": "quarter close"}),
        ("pause_schedule", {"schedule_id": "{sch}"}),
        ("trigger_schedule", {"schedule_id": "{sch}"}),
    ], mine, twin)
    assert paused[0][1]["paused"] is True and paused[0][1]["pause_note"] == "quarter close"
    assert paused[1][1]["error"]["code"] == "schedule_paused"
    assert paused[2][1]["recent_ticks"][0]["scheduled_at"] == "2027-01-04T02:00:00Z"

    for clock in (mine, twin):
        advance(clock["tc"], at("2027-01-04T05:30Z"))  # 03:00 and 05:00 pass paused (04:00 is skipped)
    resumed = same_over_mcp_and_api(secret, api, [("resume_schedule", {"schedule_id": "{sch}"})], mine, twin)
    assert resumed[0][1]["paused"] is False
    for clock in (mine, twin):
        advance(clock["tc"], at("2027-01-04T05:30Z"))  # older than the catch-up window: missed
    # Backfilled over a half-run span: what ran is already_run, the skip rule's instant is skipped, only the rest
    # is asked for.
    resumed = same_over_mcp_and_api(secret, api, [
        ("backfill_schedule", {"schedule_id": "{sch}", "start": "2027-01-04T00:30:00Z",
                               "end": "2027-01-04T05:30:00Z"}),
        ("backfill_schedule", {"schedule_id": "{sch}", "start": "2027-01-04T00:30:00Z",
                               "end": "2027-01-04T05:30:00Z", "overlap": "buffer_one"}),
    ], mine, twin)
    assert resumed[0] == (True, {
        "object": "schedule_backfill", "schedule": mine["sch"], "start": "2027-01-04T00:30:00Z",
        "end": "2027-01-04T05:30:00Z", "overlap": "skip",
        "fires": ["2027-01-04T03:00:00Z", "2027-01-04T05:00:00Z"],
        "already_run": ["2027-01-04T01:00:00Z", "2027-01-04T02:00:00Z"], "skipped": ["2027-01-04T04:00:00Z"],
        "has_more": False, "next_start": None})
    assert resumed[1][1]["error"]["code"] == "schedule_not_buffering"
    for clock in (mine, twin):
        advance(clock["tc"], at("2027-01-04T05:30Z"))  # the backfill's starts are owed now
    sch = Schedule.objects.get(pk=mine["sch"])
    assert [t for t, _ in ticks(sch)] == ["2027-01-04T01:00Z", "2027-01-04T02:00Z", "2027-01-04T02:30Z",
                                          "2027-01-04T03:00Z", "2027-01-04T05:00Z"]

    # Deleted: readable, out of the list, refused a change; and nothing fires after it.
    gone = same_over_mcp_and_api(secret, api, [
        ("backfill_schedule", {"schedule_id": "{sch}", "start": "2027-01-04T00:30:00Z",
                               "end": "2027-01-04T05:30:00Z"}),
        ("trigger_schedule", {"schedule_id": "{sch}"}),
        ("delete_schedule", {"schedule_id": "{sch}"}),
        ("delete_schedule", {"schedule_id": "{sch}"}),
        ("get_schedule", {"schedule_id": "{sch}"}),
        ("list_schedules", {"test_clock": "{tc}"}),
        ("update_schedule", {"schedule_id": "{sch}", "spec": {"every": "2h"}}),
    ], mine, twin)
    assert gone[0][1]["fires"] == [] and len(gone[0][1]["already_run"]) == 4  # one instant, one Run
    assert gone[2][1]["deleted"] is True and gone[2][1]["next_fire_times"] == []
    assert gone[3][1]["error"]["code"] == "schedule_deleted"
    assert gone[4][1]["deleted"] is True and gone[4][1]["ended"] == "deleted"
    assert gone[5][1]["data"] == []
    assert gone[6][1]["error"]["code"] == "schedule_deleted"
    # Its next fire and the trigger at 05:30 are superseded by the delete; an advance starts nothing more.
    assert not Timer.objects.filter(domain=mine["tc"], owner=sch.id, status__in=["armed", "held"]).exists()
    runs = ScheduleRun.objects.filter(schedule=sch).count()
    for clock in (mine, twin):
        advance(clock["tc"], at("2027-01-04T09:30Z"))
    assert ScheduleRun.objects.filter(schedule=sch).count() == runs
    after = same_over_mcp_and_api(secret, api, [("get_schedule", {"schedule_id": "{sch}"})], mine, twin)
    assert after[0][1]["recent_ticks"] == gone[4][1]["recent_ticks"]


def test_schedule_tools_see_the_keys_brand_and_mode_only(brand, api, target):  # noqa: F811
    tc = test_clocks.test_clock_create(brand=brand, frozen_time=T0)
    mine = [schedule_create(brand=brand, domain=tc.id, spec={"every": "1h"}, target={"url": target.url},
                            name=name) for name in ("first", "second")]
    mine.sort(key=lambda s: s.id)  # made at one instant: listed in the order of their ids
    other = Brand.objects.create(name="apis.other", created_at=T0)
    theirs = schedule_create(brand=other, domain=test_clocks.test_clock_create(brand=other, frozen_time=T0).id,
                             spec={"every": "1h"}, target={"url": target.url})
    _, test_key = tenants.api_key_create(brand=brand)
    _, live_key = tenants.api_key_create(brand=brand, live=True)
    reads = [("list_schedules", {"test_clock": tc.id, "limit": 1}),
             ("list_schedules", {"test_clock": tc.id, "starting_after": mine[0].id}),
             ("list_schedules", {}),  # the live clock's: none, and where they are
             ("list_schedules", {"test_clock": tc.id, "limit": 0}),
             ("get_schedule", {"schedule_id": theirs.id}),
             ("update_schedule", {"schedule_id": theirs.id, "paused": True}),
             ("delete_schedule", {"schedule_id": theirs.id})]

    async def as_test(call):
        return [await call(tool, **args) for tool, args in reads] + [
            await call("update_schedule", schedule_id=mine[0].id, clear=["zone"]),
            await call("update_schedule", schedule_id=mine[0].id, end_at="2027-01-01T00:00Z", clear=["end_at"])]

    tools, got = converse(test_key, as_test)
    for (tool, args), answer in zip(reads, got, strict=False):
        assert answer == api_call(api, tool, args), (tool, args)  # the same, ids and all
    page_one, page_two, live, zero, hidden, unpaused, undeleted, clear_zone, clear_given = got
    assert [s["id"] for s in page_one[1]["data"]] == [mine[0].id] and page_one[1]["has_more"] is True
    assert [s["id"] for s in page_two[1]["data"]] == [mine[1].id] and page_two[1]["has_more"] is False
    assert live[1]["data"] == [] and tc.id in live[1]["note"]
    assert (zero[1]["error"]["code"], zero[1]["error"]["param"]) == ("invalid_request", "limit")
    assert hidden == (False, {"error": {"type": "invalid_request_error", "code": "resource_missing",
                                        "message": f"no schedule {theirs.id!r}"}})  # another brand's: none
    assert unpaused[1]["error"]["code"] == undeleted[1]["error"]["code"] == "resource_missing"
    # clear names only what a null clears, and not a field given a value too.
    assert (clear_zone[1]["error"]["code"], clear_zone[1]["error"]["param"]) == ("invalid_request", "clear")
    assert (clear_given[1]["error"]["code"], clear_given[1]["error"]["param"]) == ("invalid_request", "clear")
    theirs.refresh_from_db()
    assert not theirs.paused and theirs.deleted_at is None
    # Reads are read-only; a delete is marked destructive, the other acts not.
    for name in SCHEDULE_TOOLS:
        hints = tools[name].annotations
        assert hints.read_only_hint is (name in {"list_schedules", "get_schedule"}), name
        assert bool(hints.destructive_hint) is (name == "delete_schedule"), name

    async def as_live(call):
        return [await call("get_schedule", schedule_id=mine[0].id), await call("list_schedules"),
                await call("pause_schedule", schedule_id=mine[0].id),
                await call("list_schedules", test_clock=tc.id),
                await call("create_schedule", test_clock=tc.id, spec={"every": "1h"}, target={"url": target.url})]

    _, (hidden, live_list, live_pause, live_clock, live_create) = converse(live_key, as_live)
    assert hidden[1]["error"]["code"] == "resource_missing"  # a test clock's schedule is not the live key's
    assert live_list == (True, {"object": "list", "data": [], "has_more": False, "url": "/schedules"})
    assert live_pause[1]["error"]["code"] == "resource_missing"
    assert (live_clock[1]["error"]["code"], live_clock[1]["error"]["param"]) == ("resource_missing", "test_clock")
    assert (live_create[1]["error"]["code"], live_create[1]["error"]["param"]) == ("resource_missing", "test_clock")
    assert not Schedule.objects.get(pk=mine[0].id).paused
