"""`python manage.py mcp`: the agent tools over MCP on stdio, driven by the mcp package's own client spawning the
real command. Each tool is the API's call (the same functions, the same codes), scoped by the key's brand and
mode. One server process per test: the seed's acts and reads in one conversation."""

from __future__ import annotations

import json
import os
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
from tests.conftest import T0
from tests.support import ROOT
from timers import arming, tenants, test_clocks
from timers.advance import advance
from timers.armer import DirectArmer
from timers.models import Brand, Event, Timer

pytestmark = [
    pytest.mark.processes,
    pytest.mark.postgresql("a real process on the test database: PostgreSQL"),
    pytest.mark.django_db(transaction=True),
]
TOOLS = {"list_timers", "get_timer", "subject_calendar", "subject_timeline", "list_events", "set_policy",
         "advance_test_clock", "acknowledge", "unacknowledge", "list_contacts", "add_contact"}


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
    structured result, or the API's error body a refused call carries."""

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
            return {t.name for t in listed.tools}, results

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
    assert tools == TOOLS
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
