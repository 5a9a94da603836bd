"""The customer portal in a real browser: Debian's chromium, driven by Playwright's sync API, against
pytest-django's live server. What is asserted is what a person sees on the page.

Skips (with its reason) when /usr/bin/chromium or the playwright package is missing; scripts/test installs
chromium and the dev extras install playwright, so CI runs it. Never ``playwright install``: Debian's
chromium is the browser.
"""

from __future__ import annotations

import os
import re
import time
from datetime import date, datetime
from pathlib import Path

import pytest

from calendars.feed_tokens import subject_feed_rotate
from tests.conftest import at
from tests.support.acme import acme_subject, open_return
from timers import transports
from timers.test_clocks import test_clock_create

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
]
SCREENSHOT = Path(os.environ.get("PORTAL_SCREENSHOT", "/tmp/portal.png"))
NY = "America/New_York"

if not os.access(CHROMIUM, os.X_OK):
    pytest.skip(f"{CHROMIUM} is missing: apt-get install -y chromium (scripts/test does)",
                allow_module_level=True)
try:
    from playwright.sync_api import expect, sync_playwright
except ImportError:  # pragma: no cover - the dev extras install it
    pytest.skip("the playwright package is not importable: pip install -e '.[dev]'", allow_module_level=True)

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture(scope="module")
def sync_orm_beside_playwright():
    """Playwright's sync API keeps an asyncio loop marked running on this thread, and Django then refuses
    every ORM call made here (SynchronousOnlyOperation) though no Django code ever runs on that loop. Allow
    it for this module only: the pages are served by the live server's own thread."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("DJANGO_ALLOW_ASYNC_UNSAFE", "true")
        yield


@pytest.fixture(scope="module")
def browser(sync_orm_beside_playwright):
    """One chromium for the module. ``launch`` gives it a fresh, temporary user-data dir of its own
    (Playwright refuses --user-data-dir in args) and removes it on close."""
    with sync_playwright() as pw:
        chromium = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, timeout=60_000)
        try:
            yield chromium
        finally:
            chromium.close()


@pytest.fixture
def page(browser):
    context = browser.new_context(viewport={"width": 1280, "height": 900}, locale="en-US",
                                  java_script_enabled=False)  # the page needs none: prove it
    page = context.new_page()
    page.set_default_timeout(15_000)
    errors: list[str] = []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.errors = errors
    yield page
    context.close()


@pytest.fixture
def acme(brand, transactional_db):
    transports.register("notices", transports.RecordingTransport())
    tc = test_clock_create(brand=brand, frozen_time=at("2027-06-01T12:00Z"), name="acme")
    subject = acme_subject(brand, tc.id)
    open_return(brand, tc, subject)
    token = subject_feed_rotate(subject=subject)
    return tc, subject, token


def portal_url(live_server, subject_id: str, token: str) -> str:
    return f"{live_server.url}/portal/subjects/{subject_id}/calendar?token={token}"


def test_a_person_sees_acmes_dates_in_new_york_and_can_subscribe(live_server, page, acme):
    tc, subject, token = acme
    started = time.monotonic()
    response = page.goto(portal_url(live_server, subject.id, token))
    assert response is not None and response.status == 200
    assert response.headers["cache-control"] == "private, no-store"
    SCREENSHOT.parent.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SCREENSHOT), full_page=True)  # first, so a failure below still leaves it

    expect(page).to_have_title("Coming up · Acme Robotics")
    heading = page.get_by_role("heading", level=1)
    expect(heading).to_have_text("Coming up · Acme Robotics")
    header = page.locator("main > p.meta")
    expect(header).to_contain_text("taxpayer ein 12-3456789")
    expect(header).to_contain_text(f"times in {NY} (EDT)")
    expect(header).to_contain_text("today Tue 1 Jun 2027")
    expect(header).to_contain_text("a test run: it is Tue 1 Jun 2027, 08:00 EDT here")
    expect(header).not_to_contain_text(tc.id)

    table = page.locator("table.dates").first
    expect(table).to_be_visible()
    expect(table.locator("thead th").first).to_have_text("When")
    dates = [datetime.strptime(" ".join(d.split()[1:4]) + " +0000", "%d %b %Y %z").date()
             for d in table.locator("td.date").all_inner_texts()]
    assert {date(2028, 4, 18), date(2028, 5, 15)} <= set(dates)
    assert dates == sorted(dates)  # soonest first

    def row(what: str):
        return table.locator("tbody tr").filter(has=page.get_by_role("cell", name=what, exact=True))

    us = row("file the 2027 return · US")
    expect(us).to_have_count(1)
    expect(us.locator("td.date")).to_have_text("Tue 18 Apr 2028 23:59 EDT")
    expect(us).to_contain_text("coming up, rolled from Saturday 2028-04-15: Emancipation Day (observed) on Monday 04-17")
    expect(us).to_contain_text("Ada Lovelace")
    expect(row("file the 2027 return · US-NJ").locator("td.date")).to_have_text("Mon 15 May 2028 23:59 EDT")
    pay = row("pay the 2027 tax · US")
    expect(pay.locator("td.date")).to_contain_text("18 Apr 2028")
    expect(pay.locator(".kind")).to_have_text("fixed date: can't be extended")
    # Reminders are the feed's alarms on their date, not rows of their own.
    expect(row("notice 90d · file the 2027 return · US")).to_have_count(0)

    subscribe = page.get_by_role("link", name="Subscribe", exact=True)
    expect(subscribe).to_be_visible()
    href = subscribe.get_attribute("href")
    assert href.startswith("webcal://")
    assert re.fullmatch(rf"webcal://[^/]+/subjects/{subject.id}/calendar\.ics\?token={re.escape(token)}",
                        href)
    download = page.get_by_role("link", name="or download the .ics")
    assert download.get_attribute("href") == f"/subjects/{subject.id}/calendar.ics?token={token}"
    expect(page.locator("footer")).to_contain_text(f"Dates and times are in {NY}.")
    assert page.errors == []

    # The page fits a 1280px window: nothing runs off the right edge.
    assert page.evaluate("document.documentElement.scrollWidth") <= 1280
    assert SCREENSHOT.stat().st_size > 10_000
    print(f"portal page checked in {time.monotonic() - started:.2f}s; screenshot at {SCREENSHOT}")


def test_the_page_reads_on_a_phone(live_server, browser, acme):
    _, subject, token = acme
    context = browser.new_context(viewport={"width": 390, "height": 844}, is_mobile=True, has_touch=True,
                                  device_scale_factor=2, java_script_enabled=False)
    try:
        page = context.new_page()
        assert page.goto(portal_url(live_server, subject.id, token)).status == 200
        page.screenshot(path=str(SCREENSHOT.with_name(SCREENSHOT.stem + "-phone.png")))  # the first screen
        expect(page.get_by_role("heading", level=1)).to_contain_text("Acme Robotics")
        expect(page.get_by_role("link", name="Subscribe", exact=True)).to_be_visible()
        # The table may scroll inside its box, but the page itself never scrolls sideways.
        assert page.evaluate("document.documentElement.scrollWidth") <= 390
    finally:
        context.close()


def test_a_wrong_token_shows_the_not_found_page(live_server, page, acme):
    _, subject, token = acme
    for url in (portal_url(live_server, subject.id, "nope"),
                portal_url(live_server, subject.id, token + "x"),
                portal_url(live_server, "sbj_nope", token),
                f"{live_server.url}/portal/subjects/{subject.id}/calendar"):
        response = page.goto(url)
        assert response is not None and response.status == 404, url
        expect(page).to_have_title("No such calendar")
        expect(page.get_by_role("heading", level=1)).to_have_text("No such calendar")
        expect(page.locator("main")).to_contain_text("This link does not open a calendar.")
        body = page.locator("body").inner_text()
        assert "Acme" not in body and "12-3456789" not in body
        expect(page.get_by_role("link", name="Subscribe")).to_have_count(0)
