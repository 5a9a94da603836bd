"""A timer an error pushed out ("failed, held for the owner console") is seen (issue 36, item 6): the brand's
owners get one email through the outbox's email transport, /metrics counts it (kt_timer_fires_total, outcome
failed), a one-shot `tick --to` / `tick 1y` that pushed one out exits 3 with one line naming it and its error,
and `timers retry` (the function the console's Retry calls) runs it again.

The console's alarms and their Retry button are in tests/portals/test_owner_failures.py.
"""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.contrib.auth import get_user_model
from django.core import mail
from django.core.management.base import CommandError

from tests.conftest import T0
from tests.support.cli import one_line, run
from timers import arming, handlers
from timers.advance import advance
from timers.models import Event, Membership, Timer

pytestmark = pytest.mark.django_db

BROKEN = {"on": True}


def _flaky(f) -> None:
    if BROKEN["on"]:
        raise ZeroDivisionError("division by zero")


@pytest.fixture(autouse=True)
def flaky_handler():
    BROKEN["on"] = True
    handlers.register("tests.flaky", _flaky, replace=True)
    yield
    handlers.unregister("tests.flaky")


@pytest.fixture
def owner(brand):
    user = get_user_model().objects.create_user(username="olive", email="olive@example.com", password="pw",
                                                is_staff=True)
    Membership.objects.create(user=user, brand=brand, role=Membership.Role.OWNER, name="Olive Owner")
    return user


def _arm(brand, clock, key: str = "job_1:deadline:late:2027", hours: int = 2) -> Timer:
    return arming.timer_arm(brand=brand, key=key, owed_at=T0 + timedelta(hours=hours), domain=clock.id,
                            handler="tests.flaky")


def test_a_failure_emails_the_brands_owners_once_through_the_outbox(brand, clock, owner, settings):
    settings.KEEPING_TIME = {**settings.KEEPING_TIME, "PEOPLE": {"owner": "desk@example.com"}}
    _arm(brand, clock)
    advance(clock.id, T0 + timedelta(days=1))
    timer = Timer.objects.get(domain=clock.id, key="job_1:deadline:late:2027")
    assert (timer.status, timer.held_by) == ("held", "error")
    [email] = mail.outbox
    assert sorted(email.to) == ["desk@example.com", "olive@example.com"]
    assert "A timer failed: ZeroDivisionError: division by zero" in email.subject
    assert "job_1:deadline:late:2027" in email.body and f"timers retry {timer.id}" in email.body
    advance(clock.id, T0 + timedelta(days=2))  # nothing more: one email per failure
    assert len(mail.outbox) == 1


def test_a_one_shot_tick_that_pushed_a_timer_out_exits_3_naming_it_and_its_error(brand, clock):
    _arm(brand, clock)
    with pytest.raises(CommandError) as err:
        run("tick", "--to", (T0 + timedelta(days=1)).strftime("%Y-%m-%dT%H:%MZ"), "--test-clock", clock.id)
    timer = Timer.objects.get(domain=clock.id, key="job_1:deadline:late:2027")
    text = str(err.value)
    assert err.value.returncode == 3 and "\n" not in text
    assert text.startswith(f"timer_failed: {timer.id} job_1:deadline:late:2027 failed: ZeroDivisionError: "
                           "division by zero; held for the owner console")
    # A span the same way; a run that pushes nothing out exits 0.
    _arm(brand, clock, key="job_2:deadline:late:2027", hours=30)
    _arm(brand, clock, key="job_3:deadline:late:2027", hours=31)
    with pytest.raises(CommandError) as err:
        run("tick", "1y", "--test-clock", clock.id)
    assert err.value.returncode == 3 and "job_2:deadline:late:2027" in str(err.value)
    assert str(err.value).endswith("(and 1 more); held for the owner console (timers retry "
                                   f"{Timer.objects.get(domain=clock.id, key='job_2:deadline:late:2027').id})")
    assert "0 failed" not in run("tick", "1d", "--test-clock", clock.id)


def test_timers_retry_runs_it_again_and_metrics_count_the_failure(brand, clock, settings):
    from tests.timers.test_metrics import TOKEN, scrape, value

    settings.METRICS_TOKEN = TOKEN
    _arm(brand, clock)
    advance(clock.id, T0 + timedelta(days=1))
    timer = Timer.objects.get(domain=clock.id, key="job_1:deadline:late:2027")
    m = scrape()
    fires = ("kt_timer_fires", "kt_timer_fires_total")
    assert value(m, *fires, clock="test", kind="deadline", outcome="failed") == 1
    assert value(m, *fires, clock="test", kind="deadline", outcome="committed") == 0
    assert value(m, "kt_timers_held", domain=clock.id, reason="error") == 1

    one_line(["timers", "retry", "tmr_nope"], "resource_missing")
    BROKEN["on"] = False  # the cause is fixed
    out = run("timers", "retry", timer.id)
    assert out.startswith(f"retried {timer.id} · job_1:deadline:late:2027 · armed for ")
    timer.refresh_from_db()
    assert (timer.status, timer.held_by, timer.by) == ("armed", "", "resume")
    one_line(["timers", "retry", timer.id], "timer_not_failed")  # armed now: nothing to retry
    advance(clock.id, T0 + timedelta(days=2))
    timer.refresh_from_db()
    assert timer.status == "fired"
    assert Event.objects.filter(domain=clock.id, type="timer.failed").count() == 1
    m = scrape()
    assert value(m, *fires, clock="test", kind="deadline", outcome="committed") == 1
    assert value(m, *fires, clock="test", kind="deadline", outcome="failed") == 1  # a counter: it stays
    assert value(m, "kt_timers_held", domain=clock.id, reason="error") is None
