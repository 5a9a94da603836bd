"""The owner console in a real browser (Debian's chromium, Playwright's sync API), desktop and a 390px phone:
the owner signs in on the demo's moment (apis.tax on 2028-04-12, five dates due on the 18th) and the page
puts first what to act on today: the dates still ahead, soonest first (nothing here costs money, said
once), under the 90-day chart; what passed is collapsed below. The dates are Ada Lovelace's, the customer's:
the owner may remind her or assign a date to one of the brand's people, never mark it done for her; once
assigned to the owner, Mark done settles it. Each page is checked with axe-core (tests/support/axe.py): no serious
or critical violation. The phone's dashboard is saved to /tmp/owner_390.png.

Skips (with its reason) when chromium, the playwright package or axe-core (``npm ci --prefix tests/axe``) is
missing, or on SQLite (the live server's thread and the test share PostgreSQL here, as tests/portals/test_browser.py).
"""

from __future__ import annotations

import os

import pytest
from django.db import connection

from calendars.models import ClockItem
from services.models import Notification
from tests.support.axe import assert_accessible
from tests.support.browser import browser, expect, viewport_page  # noqa: F401  (fixtures: browser, page)
from tests.support.demo import demo_moment
from timers.models import Event

NY = "America/New_York"  # the demo's moment (tests.support.demo.NOW): 08:00 there, 2028-04-12
SCREENSHOTS = os.environ.get("OWNER_SCREENSHOTS", "/tmp")
ACTS_SHOTS = os.environ.get("ACTS_SCREENSHOTS", "/tmp")

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def acme(transactional_db):
    if connection.vendor != "postgresql":
        pytest.skip("the browser tests run on PostgreSQL")
    world = demo_moment("correct horse battery")
    return world["tc"], world["brand"]


def sign_in(page, live_server):
    page.goto(f"{live_server.url}/admin/")
    expect(page).to_have_url(f"{live_server.url}/admin/login/?next=/admin/")
    assert_accessible(page, what="the login page")
    page.get_by_label("Username").fill("olive")
    page.get_by_label("Password").fill("correct horse battery")
    page.get_by_role("button", name="Log in").click()
    expect(page).to_have_url(f"{live_server.url}/admin/")


def test_the_owner_sees_what_to_act_on_today_first(live_server, page, acme):
    tc, brand = acme
    sign_in(page, live_server)
    page.screenshot(path=f"{SCREENSHOTS}/owner-{page.viewport_name}.png", full_page=True)
    if page.viewport_name == "phone":
        page.screenshot(path=f"{SCREENSHOTS}/owner_390.png", full_page=False)

    # The brand's console, as of the example's test clock, in the brand's zone, named.
    expect(page.locator("#site-name")).to_have_text("apis.tax · owner console")
    expect(page.get_by_label("As of")).to_have_value(tc)
    expect(page.get_by_test_id("as-of-now")).to_have_text(f"now 2028-04-12 08:00 · {NY}")
    # First: the dates ahead at risk, what they cost said once, the chart above the list.
    first = page.locator("#content-main h2").first
    expect(first).to_contain_text("Act on these: dates ahead at risk")
    expect(page.get_by_test_id("no-money")).to_have_text("No date here costs money if missed; soonest first.")
    chart = page.get_by_role("img", name="Dates in the next 90 days, by week")
    expect(chart).to_be_visible()
    assert chart.bounding_box()["y"] < page.locator("#dates-at-risk tr.risk").first.bounding_box()["y"]
    rows = page.locator("#dates-at-risk tr.risk")
    expect(rows).to_have_count(5)
    top = rows.first
    expect(top).to_contain_text("Tue 18 Apr 2028, 23:59 EDT")
    expect(top).to_contain_text("in 6 days")
    expect(top).to_contain_text("for Acme Robotics")
    expect(top).to_contain_text("Ada Lovelace (the customer)")
    # What passed is below, collapsed, with its count.
    past = page.locator("#already-past details")
    expect(past.locator("summary")).to_contain_text("Already past · 13")
    expect(past.locator("tr.risk").first).to_be_hidden()
    assert_accessible(page, what=f"the dashboard ({page.viewport_name})")

    # Her dates offer no Mark done; the owner reminds her.
    expect(page.locator("#dates-at-risk").get_by_role("button", name="Mark done")).to_have_count(0)
    ref = top.get_attribute("data-ref")
    what = top.locator("td").nth(1).locator("a").inner_text()
    top.get_by_role("button", name=f"Remind Ada Lovelace: {what}, Acme Robotics").click()
    expect(page.locator("ul.messagelist li.success")).to_contain_text(f"a reminder of {what}")
    assert Notification.objects.filter(kind="clock.reminder", recipient="Ada Lovelace", subject=ref).exists()

    # Assigned to the owner, the date is the brand's: Mark done settles it.
    row = page.locator(f'#dates-at-risk tr.risk[data-ref="{ref}"]')
    row.get_by_label(f"Who for {what}").select_option("olive")
    row.get_by_role("button", name=f"Assign: {what}, Acme Robotics").click()
    expect(page.locator("ul.messagelist li.success")).to_contain_text(f"Olive Owner now answers for {what}")
    row.get_by_role("button", name=f"Mark done: {what}, Acme Robotics").click()
    expect(page.locator("ul.messagelist li.success")).to_contain_text("marked done")
    expect(page.locator(f'#dates-at-risk tr.risk[data-ref="{ref}"]')).to_have_count(0)
    clock_id, _, item = ref.partition("#")
    assert ClockItem.objects.get(clock_id=clock_id, item=item).status == "satisfied"
    assert Event.objects.get(domain=tc, type="clock.satisfied", subject=ref).data["by"] == "Olive Owner"
    assert_accessible(page, what=f"the dashboard after settling ({page.viewport_name})")
    # Offered back until the date passes: taken back, the date is at risk again, and the record has both.
    undo = page.locator("form.kt-undo")
    expect(undo).to_contain_text(f"Changed your mind about {what} for Acme Robotics (Tue 18 Apr 2028)?")
    page.screenshot(path=f"{ACTS_SHOTS}/owner-undo-{page.viewport_name}.png")
    undo.get_by_role("button", name="Undo: not done yet").click()
    expect(page.locator("ul.messagelist li.success")).to_contain_text("is open again")
    expect(page.locator(f'#dates-at-risk tr.risk[data-ref="{ref}"]')).to_have_count(1)
    assert ClockItem.objects.get(clock_id=clock_id, item=item).status == "open"
    assert Event.objects.get(domain=tc, type="clock.reopened", subject=ref).data["by"] == "Olive Owner"
    assert_accessible(page, what=f"the dashboard after taking it back ({page.viewport_name})")

    # Opened, what passed says what happens next.
    past.locator("summary").click()
    expect(past.locator("tr.risk").first).to_be_visible()
    expect(past.locator("tr.risk").first).to_contain_text("Wed 15 Dec 2027, 23:59 EST")
    assert_accessible(page, what=f"the dashboard, what passed open ({page.viewport_name})")

    # A date's page: the date in words, in the zone, with its controls.
    page.locator(f'#dates-at-risk tr.risk:not([data-ref="{ref}"])').first.locator("td").nth(1).locator("a").click()
    expect(page.locator("#date-settle")).to_contain_text("EDT")
    expect(page.locator("#date-settle").get_by_role("button", name="Mark done")).to_have_count(0)
    expect(page.locator("body")).not_to_contain_text("UTC")
    assert_accessible(page, what=f"a date's page ({page.viewport_name})")
    assert not page.errors, page.errors
    if page.viewport_name == "phone":  # no sideways scrolling on the dashboard
        page.goto(f"{live_server.url}/admin/")
        width = page.evaluate("() => document.documentElement.scrollWidth")
        assert width <= 390 + 1, width
