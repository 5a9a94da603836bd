"""The closed re-arm list (timers/rearm.py): an armed timer re-arms only for a cause on it, every re-arm
names that cause in ``by``, and clock rungs are never held."""

from __future__ import annotations

from datetime import date, timedelta
from io import StringIO
from types import SimpleNamespace

import pytest
from django.core.management import call_command

from calendars.brand_calendars import calendar_close_day, calendar_postpone
from calendars.models import ClockItem
from services.jobs import job_activity
from services.models import Job, Subscription
from services.subscriptions import subscription_pause, subscription_resume, subscription_update
from tests.conftest import T0
from timers.advance import advance
from timers.armer import DirectArmer
from timers.arming import timer_hold
from timers.engine import Firing, Item
from timers.errors import KeepingTimeError, Refused
from timers.models import Commit, Timer
from timers.rearm import Rearm

CAUSES = {r.value for r in Rearm}
RUNG = "clk_x#US:rung:notice 30d:2027@0"


def _firing() -> Firing:
    item = Item(key="job_x:deadline:late:2027", owner="job_x", kind="deadline", opened_at=T0, version="")
    return Firing(SimpleNamespace(now=T0, domain="live"), item, T0, 1)


def test_the_list_is_the_issues_list():
    assert CAUSES == {"clock.moved", "policy.set", "hold", "resume", "calendar.postpone", "calendar.closed_days",
                      "due.input", "repin", "subscription.update", "clock.reopened", "schedule.update"}


@pytest.mark.parametrize("by", ["something", "subscription.updated", "job.activity", ""])
def test_a_re_arm_off_the_list_is_a_programming_error(by):
    f = _firing()
    with pytest.raises(ValueError, match="closed re-arm list"):
        f.retime("job_x:deadline:late:2027", owed_at=T0, by=by)
    with pytest.raises(ValueError, match="closed re-arm list"):
        f.supersede("job_x:deadline:late:2027", by=by, successor="job_x:deadline:late:2027@1")
    with pytest.raises(ValueError, match="closed re-arm list"):
        f.hold("job_x:deadline:late:2027", by=by)
    assert f.ops == []  # nothing was proposed
    f.retime("job_x:deadline:late:2027", owed_at=T0, by=Rearm.POLICY_SET)
    f.supersede("job_x:deadline:late:2027", by="job.delivered")  # no successor: it only ends the timer
    assert f.ops == [("retime", "job_x:deadline:late:2027", T0, "policy.set"),
                     ("supersede", "job_x:deadline:late:2027", "job.delivered", "")]


def test_the_direct_armer_refuses_a_cause_off_the_list_too(brand, clock, arm):
    t = arm("job_x:deadline:late:2027", T0 + timedelta(days=3))
    armer = DirectArmer(brand=brand, domain=clock.id)
    with pytest.raises(ValueError):
        armer.retime(t.key, owed_at=T0 + timedelta(days=4), by="job.activity")
    with pytest.raises(ValueError):
        armer.supersede(t.key, by="job.activity", successor="job_x:deadline:late:2027@1")
    with pytest.raises(ValueError):
        armer.hold(t.key, by="organizer")
    t.refresh_from_db()
    assert (t.status, t.owed_at, t.by) == ("armed", T0 + timedelta(days=3), "")
    armer.retime(t.key, owed_at=T0 + timedelta(days=4), by=Rearm.POLICY_SET)
    t.refresh_from_db()
    assert (t.owed_at, t.by) == (T0 + timedelta(days=4), "policy.set")  # the retime names its cause


def test_clock_rungs_are_never_held(brand, clock, arm, handler):
    rung = arm(RUNG, T0 + timedelta(days=3))
    due = arm("clk_x#US:due:file:2027@0", T0 + timedelta(days=3))
    for t in (rung, due):
        with pytest.raises(KeepingTimeError) as exc:
            timer_hold(timer=t, by="organizer", now=T0)
        assert (exc.value.code, exc.value.status) == ("rung_not_holdable", 409)
    with pytest.raises(KeepingTimeError) as exc:
        DirectArmer(brand=brand, domain=clock.id).hold(RUNG, by=Rearm.HOLD)
    assert exc.value.code == "rung_not_holdable"
    deadline = arm("job_x:deadline:at_risk:2027", T0 + timedelta(days=3))
    assert timer_hold(timer=deadline, by="organizer", now=T0).status == "held"  # a job's deadline is holdable

    with pytest.raises(Refused) as refused:
        _firing().hold(RUNG, by=Rearm.HOLD)
    assert refused.value.code == "rung_not_holdable"
    # Inside the tick: a handler proposing to hold a rung is refused at the gate, and the rung rings on time.
    handler("t.hold_rung", lambda f: f.hold(RUNG, by=Rearm.HOLD))
    arm("job_x:task:nudge:2027", T0 + timedelta(days=1), handler="t.hold_rung")
    advance(clock.id, T0 + timedelta(days=2))
    commit = Commit.objects.get(domain=clock.id, key="job_x:task:nudge:2027")
    assert (commit.outcome, commit.code) == ("refused", "rung_not_holdable")
    assert Timer.objects.get(pk=rung.pk).status == "armed"
    for t in (rung, due):
        t.refresh_from_db()
        assert (t.status, t.held_by) == ("armed", "")


def _scan(domain: str) -> set[str]:
    """Every re-arm in the domain names a cause on the list: a supersede with a successor, and a timer
    retimed or resumed in place (an armed, fired or held timer whose ``by`` is set). Returns the causes."""
    seen = set()
    for t in Timer.objects.filter(domain=domain):
        rearmed = bool(t.superseded_by) or (t.status != "superseded" and t.by)
        if rearmed:
            assert t.by in CAUSES, (t.key, t.status, t.by)
            seen.add(t.by)
    return seen


def _timers(domain: str) -> set[tuple]:
    return set(Timer.objects.filter(domain=domain).values_list("key", "status", "owed_at", "by"))


def test_nothing_outside_the_list_re_arms(db):
    """Acme through the extension (2028-11-01), with activity, a subscription update, a pause and resume, a
    closed day and a postponement on the way: every re-arm names a cause on the list, and activity none."""
    out = StringIO()
    call_command("loadexample", "apis_tax", "--reset", stdout=out)
    tc = out.getvalue().split("test clock ")[1].split()[0]
    call_command("tick", "--to", "2028-02-02T00:00Z", "--test-clock", tc, stdout=StringIO())
    sub = Subscription.objects.select_related("subject__calendar").get(domain=tc)
    job = Job.objects.get(domain=tc, service="annual-return", period="2027")
    armer = DirectArmer(brand=sub.brand_id, domain=tc)

    before = _timers(tc)
    job_activity(armer=armer, job=job, what="the books arrived")
    assert _timers(tc) == before  # activity is not on the list: no timer moved

    subscription_pause(armer=armer, sub=sub, note="books late")
    subscription_resume(armer=armer, sub=sub)
    subscription_update(armer=armer, sub=sub, input={"year_end": "06-30"})  # the next annual mint moves
    cal = sub.subject.calendar
    assert calendar_close_day(calendar=cal, day=date(2028, 4, 18), why="storm") > 0  # dates roll again
    nj = ClockItem.objects.select_related("clock__subject").get(clock__owner_ref=job.id, clock__name="file",
                                                                item="US-NJ")
    assert calendar_postpone(calendar=cal, items=[nj], to=date(2028, 6, 15), notice="relief") == 1
    call_command("tick", "--to", "2028-11-01T00:00Z", "--test-clock", tc, stdout=StringIO())

    assert _scan(tc) >= {"clock.moved", "subscription.update", "resume", "calendar.closed_days",
                         "calendar.postpone"}
    assert not Timer.objects.filter(domain=tc, by="subscription.updated").exists()
