"""The console's Schedules in a real browser (issue 40), desktop and a 390px phone, each page checked with axe-core:
the owner opens a schedule, changes when it runs (a wrong cron first, said on its field), backfills the morning it
missed, and once the test clock moves sees those runs done, their times in the brand's zone; then pauses it with a
note and deletes it, and its page stays, readable, without buttons.

Skips (with its reason) where the browser tests cannot run (tests/support/browser.py), and on SQLite.
"""

from __future__ import annotations

import os
from datetime import UTC, datetime

import pytest
from django.contrib.auth import get_user_model
from django.db import connection
from django.urls import reverse

from calendars.brand_calendars import calendar_create
from tests.conftest import admin_url
from tests.support.axe import assert_accessible
from tests.support.browser import browser, expect, sign_in_to_console, viewport_page  # noqa: F401  (fixtures: browser, page)
from tests.timers.test_schedules import target  # noqa: F401  (a fixture: a local HTTP endpoint)
from timers.advance import advance
from timers.models import Event, Membership, Schedule, ScheduleRun
from timers.schedules import schedule_create
from timers.tenants import brand_get_or_create
from timers.test_clocks import test_clock_create

T0 = datetime(2027, 1, 20, 14, 0, tzinfo=UTC)  # Wednesday, 09:00 in New York
SCREENSHOTS = os.environ.get("OWNER_SCREENSHOTS", "/tmp")

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def shop(transactional_db, target):  # noqa: F811
    if connection.vendor != "postgresql":
        pytest.skip("the browser tests run on PostgreSQL")
    brand = brand_get_or_create(name="apis.tax")
    calendar_create(brand=brand, name="New York office", zone="America/New_York", now=T0)
    clock = test_clock_create(brand=brand, frozen_time=T0, name="trial")
    sch = schedule_create(brand=brand, domain=clock.id, spec={"cron": "0 9 * * *"}, zone="America/New_York",
                          name="nightly-report", target={"url": target.url, "retries": 0})
    user = get_user_model().objects.create_user(username="ada", password="correct horse battery", is_staff=True)
    Membership.objects.create(user=user, brand=brand, role=Membership.Role.OWNER, name="Ada Lovelace")
    return clock, sch


def shot(page, name: str) -> None:
    page.screenshot(path=f"{SCREENSHOTS}/schedules-{name}-{page.viewport_name}.png", full_page=True)


def test_the_owner_changes_a_schedule_and_backfills_it(live_server, page, shop, target):  # noqa: F811
    clock, sch = shop
    sign_in_to_console(page, live_server.url, "ada")

    # The list says when each runs in words, in its zone.
    page.goto(f"{live_server.url}{reverse('admin:timers_schedule_changelist')}")
    expect(page.locator("#result_list")).to_contain_text("at 09:00 every day · America/New_York")
    assert_accessible(page, what="the schedules list")
    shot(page, "list-first")

    page.goto(f"{live_server.url}{admin_url(sch)}")
    expect(page.locator("#content-main")).to_contain_text("Thu 21 Jan 2027, 09:00 EST")  # the next run
    assert_accessible(page, what="a schedule's page")
    shot(page, "page")

    # Change when it runs: a wrong cron first, said on its field, nothing kept.
    page.get_by_role("link", name="Change", exact=True).click()
    expect(page.get_by_role("heading", name="Change nightly-report")).to_be_visible()
    assert_accessible(page, what="the change page")
    page.get_by_label("Cron").fill("0 25 * * *")
    page.get_by_role("button", name="Save the change").click()
    expect(page.locator(".errorlist")).to_contain_text("invalid_spec")
    assert Schedule.objects.get(pk=sch.pk).revision == 1
    assert_accessible(page, what="the change page with its error")
    shot(page, "change-refused")
    page.get_by_label("Cron").fill("0 * * * *")
    page.get_by_role("button", name="Save the change").click()
    expect(page.locator(".messagelist")).to_contain_text("Nightly-report changed (when it runs)")
    expect(page.locator(".messagelist")).to_contain_text("Next run: Wed 20 Jan 2027, 10:00 EST")
    assert Schedule.objects.get(pk=sch.pk).spec == {"cron": "0 * * * *"}

    # Backfill the morning: 06:00 to 09:00 New York, four hours.
    page.get_by_role("link", name="Backfill").click()
    expect(page.get_by_role("heading", name="Backfill nightly-report")).to_be_visible()
    page.get_by_label("From").fill("2027-01-20T06:00")
    page.get_by_label("To").fill("2027-01-20T09:00")
    assert_accessible(page, what="the backfill page")
    shot(page, "backfill")
    page.get_by_role("button", name="Backfill").click()
    expect(page.locator(".messagelist")).to_contain_text(
        "from Wed 20 Jan 2027, 06:00 EST to Wed 20 Jan 2027, 09:00 EST: 4 runs start when the test clock next moves, "
        "0 already ran, 0 skipped")
    assert Event.objects.get(subject=sch.id, type="schedule.backfilled").data["fires"] == 4

    # The clock moves: the four runs start and are done, each at its own time in the brand's zone.
    advance(clock.id, T0)
    page.reload()
    runs = page.locator("table", has_text="result")
    expect(runs).to_contain_text("Wed 20 Jan 2027, 06:00 EST")
    expect(runs.locator("td", has_text="done")).to_have_count(4)
    assert sorted(target.scheduled()) == [f"2027-01-20T{h}:00:00Z" for h in (11, 12, 13, 14)]
    assert ScheduleRun.objects.filter(schedule=sch).count() == 4
    assert_accessible(page, what="a schedule's page with its runs")
    shot(page, "runs")

    # Pause it with a note; then delete it, behind its confirm page: the page stays, with no buttons.
    page.get_by_role("link", name="Pause").click()
    page.get_by_label("Note").fill("endpoint moving")
    assert_accessible(page, what="the pause page")
    shot(page, "pause")
    page.get_by_role("button", name="Pause").click()
    expect(page.locator(".messagelist")).to_contain_text("Nightly-report is paused")
    expect(page.get_by_role("button", name="Resume")).to_be_visible()
    page.get_by_role("link", name="Delete").click()
    expect(page.get_by_role("heading", name="Delete nightly-report?")).to_be_visible()
    assert_accessible(page, what="the delete page")
    shot(page, "delete")
    page.get_by_role("button", name="Delete the schedule").click()
    expect(page.locator(".messagelist")).to_contain_text("Nightly-report is deleted: nothing runs after it.")
    expect(page.locator("#content-main")).to_contain_text("Deleted Wed 20 Jan 2027, 09:00 EST")
    expect(page.get_by_role("link", name="Change", exact=True)).to_have_count(0)
    assert Schedule.objects.get(pk=sch.pk).deleted_at is not None
    assert_accessible(page, what="a deleted schedule's page")
    shot(page, "deleted")

    page.get_by_role("link", name="Schedules").first.click()
    page.get_by_role("link", name="deleted", exact=True).click()
    expect(page.locator("#result_list")).to_contain_text("nightly-report")
    expect(page.locator("#result_list")).to_contain_text("deleted Wed 20 Jan 2027, 09:00 EST")
    assert_accessible(page, what="the schedules list")
    shot(page, "list")
    assert not page.errors, page.errors
