"""Resend from the History in a real browser (chromium, Playwright), at 1280 and 390 px, axe clean: an email the
outbox gave up on shows a Resend button on the date's History; the owner presses it, reads what was resent in
words, and the resend is its own line with no second button. Screenshots go to RESEND_SHOTS (/tmp/resend_shots).
PostgreSQL only, as tests/portals/test_browser_history.py."""

from __future__ import annotations

import os

import pytest
from django.contrib.admin.utils import quote
from django.db import connection
from django.urls import reverse

from calendars.models import ClockItem, Subject
from tests.portals.test_browser_history import sign_in
from tests.support.axe import assert_accessible
from tests.support.browser import browser, expect, viewport_page  # noqa: F401  (fixtures: browser, page)
from tests.support.demo import demo_moment
from timers.models import Outbox

SHOTS = os.environ.get("RESEND_SHOTS", "/tmp/resend_shots")

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def acme(transactional_db):
    if connection.vendor != "postgresql":
        pytest.skip("the browser tests run on PostgreSQL")
    os.makedirs(SHOTS, exist_ok=True)
    world = demo_moment("correct horse battery")
    subject = Subject.objects.get(brand=world["brand"], name="Acme Robotics")
    item = (ClockItem.objects.filter(clock__subject=subject, status="open", item="US").order_by("due_at").first())
    sent = Outbox.objects.filter(transport="email", key__startswith=f"{item.owner_key}:").order_by("-created_at")[0]
    # The outbox gave this one up (tests/portals/test_resend.py gets there through a refusing far end).
    Outbox.objects.filter(pk=sent.pk).update(status="failed", tries=5, receipt=None, sent_at=None,
                                             error="SMTPServerDisconnected: Connection unexpectedly closed")
    world["item"] = item
    return world


def test_the_owner_resends_a_given_up_email_from_the_dates_history(live_server, page, acme):
    sign_in(page, live_server)
    page.goto(live_server.url + reverse("admin:calendars_clockitem_history", args=[quote(acme["item"].pk)]))
    past = page.get_by_test_id("history-past")
    failed = past.locator("li.kt-sent", has_text="given up after 5 tries")
    expect(failed).to_have_count(1)
    expect(failed.get_by_role("button", name="Resend")).to_be_visible()
    expect(past.get_by_role("button", name="Resend")).to_have_count(1)  # the sent ones offer none
    page.screenshot(path=f"{SHOTS}/date-history-resend-{page.viewport_name}.png", full_page=True)
    assert_accessible(page, what=f"a date's History with a Resend ({page.viewport_name})")
    if page.viewport_name == "phone":
        assert page.evaluate("() => document.documentElement.scrollWidth") <= 390 + 1
    failed.get_by_role("button", name="Resend").click()
    expect(page.locator("ul.messagelist li.success")).to_have_text(
        "Resent the email to ada@acme-robotics.example: it is sent again, once.")
    expect(page.locator("h1")).to_contain_text("History: ")
    expect(past.locator("li.kt-sent", has_text="Emailed ada@acme-robotics.example (try 2): waiting to leave.")
           ).to_have_count(1)
    expect(past.locator("li.kt-sent", has_text="given up after 5 tries")).to_have_count(1)  # the old try stands
    expect(past.get_by_role("button", name="Resend")).to_have_count(0)
    page.screenshot(path=f"{SHOTS}/date-history-resent-{page.viewport_name}.png", full_page=True)
    assert_accessible(page, what=f"a date's History after a Resend ({page.viewport_name})")
    assert not page.errors, page.errors
