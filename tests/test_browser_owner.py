"""The owner console in a real browser (Debian's chromium, Playwright's sync API), desktop and a 390px phone:
the owner signs in, sees the dates at risk costliest first, and settles the top one with its button. Each
page is checked with axe-core (tests/axe.py): no serious or critical violation.

Skips (with its reason) when chromium, the playwright package or axe-core (``npm ci --prefix tests/axe``) is
missing, or on SQLite (the live server's thread and the test share PostgreSQL here, as tests/test_browser.py).
"""

from __future__ import annotations

import os
from datetime import UTC, datetime
from io import StringIO

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.db import connection

from calendars.models import ClockItem
from tests.axe import assert_accessible
from tests.browser import VIEWPORTS, browser, expect  # noqa: F401  (browser is a fixture)
from timers import outbox
from timers.models import Brand, Event, Membership
from timers.worker import advance

CAME_DUE = datetime(2027, 10, 17, tzinfo=UTC)
NY = "America/New_York"
SCREENSHOTS = os.environ.get("OWNER_SCREENSHOTS", "/tmp")

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]



@pytest.fixture(params=list(VIEWPORTS))
def page(request, browser):  # noqa: F811  (the fixture tests.browser provides)
    context = browser.new_context(viewport=VIEWPORTS[request.param], locale="en-US")
    page = context.new_page()
    page.set_default_timeout(15_000)
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.errors = errors
    page.viewport_name = request.param
    yield page
    context.close()


@pytest.fixture
def acme(transactional_db):
    if connection.vendor != "postgresql":
        pytest.skip("the browser tests run on PostgreSQL")
    outbox.register("notices", outbox.RecordingTransport())
    out = StringIO()
    call_command("loadexample", "apis_tax", stdout=out)
    tc = out.getvalue().split("test clock ")[1].split()[0]
    advance(tc, CAME_DUE)
    brand = Brand.objects.get(name="apis.tax")
    user = get_user_model().objects.create_user(username="ada", password="correct horse battery", is_staff=True)
    Membership.objects.create(user=user, brand=brand, role=Membership.Role.OWNER, name="Ada Lovelace")
    return tc, brand


def sign_in(page, live_server):
    page.goto(f"{live_server.url}/admin/")
    expect(page).to_have_url(f"{live_server.url}/admin/login/?next=/admin/")
    assert_accessible(page, what="the login page")
    page.get_by_label("Username").fill("ada")
    page.get_by_label("Password").fill("correct horse battery")
    page.get_by_role("button", name="Log in").click()
    expect(page).to_have_url(f"{live_server.url}/admin/")


def test_the_owner_settles_the_top_date_at_risk(live_server, page, acme):
    tc, brand = acme
    sign_in(page, live_server)
    shot = f"{SCREENSHOTS}/owner-{page.viewport_name}.png"
    page.screenshot(path=shot, full_page=True)

    # The brand's console, as of the example's test clock, in the brand's zone, named.
    expect(page.locator("#site-name")).to_have_text("apis.tax · owner console")
    expect(page.get_by_label("As of")).to_have_value(tc)
    expect(page.get_by_test_id("as-of-now")).to_have_text(f"now 2027-10-16 20:00 · {NY}")
    expect(page.get_by_role("heading", name="Dates at risk", exact=False).first).to_be_visible()
    assert_accessible(page, what=f"the dashboard ({page.viewport_name})")

    rows = page.locator("#dates-at-risk tr.risk")
    assert rows.count() == 9  # 2 file dates came unsatisfied, 3 pay dates passed, 4 jobs late
    top = rows.first
    ref = top.get_attribute("data-ref")
    # Acme's plan includes its jobs: no miss takes money off a charge, so the earliest date the world sets leads.
    expect(top.locator("td.cost")).to_contain_text("a hard date")
    expect(top).to_contain_text("passed unsatisfied on 2027-04-15")
    what = top.locator("td").nth(2).locator("a").inner_text()
    button = top.get_by_role("button", name=f"Mark done: {what}")
    expect(button).to_be_visible()
    button.click()

    # Settled: the message says so, the row is gone, the record has it.
    expect(page.locator("ul.messagelist li.success")).to_contain_text("marked done")
    expect(page.locator(f'#dates-at-risk tr.risk[data-ref="{ref}"]')).to_have_count(0)
    clock_id, _, item = ref.partition("#")
    assert ClockItem.objects.get(clock_id=clock_id, item=item).status == "satisfied"
    kept = Event.objects.get(domain=tc, type="clock.satisfied", subject=ref)
    assert kept.data["by"] == "Ada Lovelace"
    assert_accessible(page, what=f"the dashboard after settling ({page.viewport_name})")

    # The job list, filtered late, and a job's page with its clocks and timers.
    page.goto(f"{live_server.url}/admin/services/job/?late__exact=1")
    expect(page.locator("#result_list tbody tr")).to_have_count(4)
    assert_accessible(page, what=f"the late jobs ({page.viewport_name})")
    page.locator("#result_list tbody tr th a").first.click()
    expect(page.locator("body")).to_contain_text(":deadline:")
    assert_accessible(page, what=f"a job's page ({page.viewport_name})")
    assert not page.errors, page.errors
    if page.viewport_name == "phone":  # no sideways scrolling on the dashboard
        page.goto(f"{live_server.url}/admin/")
        width = page.evaluate("() => document.documentElement.scrollWidth")
        assert width <= 390 + 1, width
