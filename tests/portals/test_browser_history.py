"""The record's history in a real browser (chromium, Playwright), at 1280 and 390 px, axe clean: the owner reminds
Ada Lovelace of the top date at risk and assigns it, then opens the date's History and sees both there, with
names and times in New York's zone, under the strip with today marked; the customer's page has its History too.
Screenshots go to PAGES_SHOTS (/tmp/pages_shots). Skips as tests/portals/test_browser_owner.py does (PostgreSQL
only: the live server's thread and the test share the database)."""

from __future__ import annotations

import os
import re
from datetime import UTC, datetime

import pytest
from django.contrib.admin.utils import quote
from django.db import connection
from django.urls import reverse

from calendars.models import Subject
from tests.support.axe import assert_accessible
from tests.support.browser import browser, expect, viewport_page  # noqa: F401  (fixtures: browser, page)
from tests.support.demo import demo_moment

SHOTS = os.environ.get("PAGES_SHOTS", "/tmp/pages_shots")

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def acme(transactional_db):
    if connection.vendor != "postgresql":
        pytest.skip("the browser tests run on PostgreSQL")
    os.makedirs(SHOTS, exist_ok=True)
    return demo_moment("correct horse battery")


def sign_in(page, live_server):
    page.goto(f"{live_server.url}/admin/login/?next=/admin/")
    page.get_by_label("Username").fill("olive")
    page.get_by_label("Password").fill("correct horse battery")
    page.get_by_role("button", name="Log in").click()
    expect(page).to_have_url(f"{live_server.url}/admin/")


def test_the_owner_reminds_and_assigns_and_sees_both_on_the_dates_history(live_server, page, acme):
    sign_in(page, live_server)
    top = page.locator("#dates-at-risk tr.risk").first
    ref = top.get_attribute("data-ref")
    what = top.locator("td").nth(1).locator("a").inner_text()
    top.get_by_role("button", name=f"Remind Ada Lovelace: {what}, Acme Robotics").click()
    expect(page.locator("ul.messagelist li.success")).to_contain_text(f"a reminder of {what}")
    row = page.locator(f'#dates-at-risk tr.risk[data-ref="{ref}"]')
    row.get_by_label(f"Who for {what}").select_option("olive")
    row.get_by_role("button", name=f"Assign: {what}, Acme Robotics").click()
    expect(page.locator("ul.messagelist li.success")).to_contain_text(f"Olive Owner now answers for {what}")

    # The date's page, then its History: the record, in the owner's words and New York's zone.
    page.locator(f'#dates-at-risk tr.risk[data-ref="{ref}"] td').nth(1).locator("a").click()
    page.get_by_role("link", name="History").click()
    history = page.get_by_test_id("history")
    expect(page.locator("h1")).to_contain_text("History: ")
    expect(history.get_by_role("heading", name="History")).to_be_visible()
    expect(history).to_contain_text("Times in America/New_York; today is Wed 12 Apr 2028, 08:00 EDT.")
    past = page.get_by_test_id("history-past")
    reminded = past.locator("li", has_text="Olive Owner reminded Ada Lovelace of")
    expect(reminded).to_have_count(1)
    expect(reminded).to_contain_text("Wed 12 Apr 2028, 08:00 EDT")
    expect(past.locator("li.kt-sent", has_text="Emailed ada@acme-robotics.example")).not_to_have_count(0)
    expect(past.locator("li", has_text="Olive Owner")).to_have_count(2)  # the reminder and the assignment
    expect(page.get_by_test_id("history-ahead")).to_contain_text("is due.")
    # The strip is above the list, an image named in words with today marked.
    strip = page.get_by_role("img", name="what happened and what is ahead")
    expect(strip).to_be_visible()
    assert strip.bounding_box()["y"] < past.bounding_box()["y"]
    expect(strip.locator("line.kt-today")).to_have_count(1)
    # Django's log is beneath, under its own name.
    log = page.get_by_role("heading", name="Changes in the console")
    assert log.bounding_box()["y"] > past.bounding_box()["y"]
    expect(history).not_to_contain_text("UTC")
    page.screenshot(path=f"{SHOTS}/owner-date-history-{page.viewport_name}.png", full_page=True)
    assert_accessible(page, what=f"a date's History ({page.viewport_name})")
    if page.viewport_name == "phone":
        assert page.evaluate("() => document.documentElement.scrollWidth") <= 390 + 1

    # The customer's page has its History too: every date of theirs, the roll's reason said.
    acme_pk = Subject.objects.get(brand=acme["brand"], name="Acme Robotics").pk
    page.goto(live_server.url + reverse("admin:calendars_subject_change", args=[quote(acme_pk)]))
    page.get_by_role("link", name="History").click()
    expect(page.get_by_test_id("history-past")).to_contain_text(
        "rolled from Sat 15 Apr 2028 to Tue 18 Apr 2028: Emancipation Day (observed)")
    expect(page.get_by_test_id("history")).not_to_contain_text("UTC")
    page.screenshot(path=f"{SHOTS}/owner-customer-history-{page.viewport_name}.png")
    assert_accessible(page, what=f"a customer's History ({page.viewport_name})")
    assert not page.errors, page.errors


def test_the_customer_opens_a_dates_history(live_server, page, acme):
    from services.portal_sessions import portal_session_create

    subject = Subject.objects.get(brand=acme["brand"], name="Acme Robotics")
    _, path = portal_session_create(brand=subject.brand, subject=subject)
    page.goto(live_server.url + path)
    expect(page.locator("h1")).to_contain_text("Your dates · Acme Robotics")
    page.screenshot(path=f"{SHOTS}/customer-home-{page.viewport_name}.png")
    page.get_by_role("link", name="History of file · the 2027 return · US", exact=True).click()
    expect(page.locator("h1")).to_have_text("file · the 2027 return · US")
    history = page.get_by_test_id("history")
    expect(history.get_by_role("heading", name="What happened to this date")).to_be_visible()
    expect(history).to_contain_text("Times in America/New_York; today is Wed 12 Apr 2028, 08:00 EDT.")
    past = page.get_by_test_id("history-past")
    expect(past).to_contain_text("File · the 2027 return · US rolled from Sat 15 Apr 2028 to Tue 18 Apr 2028: "
                                 "Emancipation Day (observed)")
    expect(past.locator("li.kt-sent", has_text="We emailed you on Tue 1 Feb 2028: sent.")).not_to_have_count(0)
    expect(past).to_contain_text("A notice for you (Ada Lovelace) was sent: received.")
    expect(page.get_by_test_id("history-ahead")).to_contain_text("File · the 2027 return · US is due.")
    strip = page.get_by_role("img", name="what happened and what is ahead")
    expect(strip).to_be_visible()
    assert strip.bounding_box()["y"] < past.bounding_box()["y"]
    expect(history).not_to_contain_text("UTC")
    page.screenshot(path=f"{SHOTS}/customer-date-history-{page.viewport_name}.png", full_page=True)
    assert_accessible(page, what=f"a date's history in the portal ({page.viewport_name})")
    if page.viewport_name == "phone":
        assert page.evaluate("() => document.documentElement.scrollWidth") <= 390 + 1
    page.get_by_role("link", name="Back to your dates").click()
    expect(page.locator("h1")).to_contain_text("Your dates · Acme Robotics")
    assert_accessible(page, what=f"the portal with its History links ({page.viewport_name})")
    assert not page.errors, page.errors


def test_a_member_reads_why_extend_is_gone_on_the_tasks_history(live_server, page, acme):
    from io import StringIO

    from django.contrib.auth import get_user_model
    from django.core.management import call_command

    from timers.advance import advance
    out = StringIO()
    call_command("loadexample", "api_forsale", stdout=out)
    advance(out.getvalue().split("test clock ")[1].split()[0], datetime(2027, 10, 20, 14, 30, tzinfo=UTC))
    grace = get_user_model().objects.get(username="grace")
    grace.set_password("correct horse")
    grace.save()
    page.goto(f"{live_server.url}/portal/delivery/login")
    page.get_by_label("Username").fill("grace")
    page.get_by_label("Password").fill("correct horse")
    page.get_by_role("button", name="Sign in").click()
    page.get_by_role("button", name="Take appraise").first.click()
    page.get_by_role("button", name="Extend my hold").click()
    expect(page.get_by_role("button", name="Extend my hold")).to_have_count(0)
    held = page.locator("section[aria-labelledby='tasks-h'] tbody tr")
    page.screenshot(path=f"{SHOTS}/member-home-{page.viewport_name}.png")
    held.get_by_role("link", name=re.compile(r"^History of appraise")).click()
    history = page.get_by_test_id("history")
    expect(history.get_by_role("heading", name="What happened to it")).to_be_visible()
    expect(history).to_contain_text("Times in America/Los_Angeles; today is Wed 20 Oct 2027, 07:30 PDT.")
    extended = page.get_by_test_id("history-past").locator("li", has_text="extended their hold on")
    expect(extended).to_have_count(1)
    expect(extended).to_contain_text("Wed 20 Oct 2027, 07:30 PDT")
    expect(extended).to_contain_text("(a hold extends once per Task)")
    expect(history).not_to_contain_text("UTC")
    page.screenshot(path=f"{SHOTS}/member-task-history-{page.viewport_name}.png", full_page=True)
    assert_accessible(page, what=f"a Task's history ({page.viewport_name})")
    if page.viewport_name == "phone":
        assert page.evaluate("() => document.documentElement.scrollWidth") <= 390 + 1
    assert not page.errors, page.errors
