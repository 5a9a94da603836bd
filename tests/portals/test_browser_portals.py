"""The customer and the member, each in a real browser (Debian's chromium via Playwright), at a desktop width
and at 390px: what they see and what their clicks do, checked with axe-core on every page (no serious or
critical violation). The customer opens the brand's portal link, acknowledges a rung, sees an allowance
drop, and cancels at the cycle's end; the member signs in, takes a Task, extends its hold once and is
refused the second time, with the reason on the page."""

from __future__ import annotations

import os
import re
from datetime import UTC, datetime
from io import StringIO

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command

from calendars.models import Subject
from services.models import Subscription, Task
from services.portal_sessions import portal_session_create
from services.subject_events import subject_event
from tests.support.axe import assert_accessible
from tests.support.browser import browser, expect, viewport_page  # noqa: F401  (fixtures: browser, page)
from timers.advance import advance
from timers.armer import DirectArmer

SHOTS = os.environ.get("ACTS_SCREENSHOTS", "/tmp")
pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def _load(example: str) -> str:
    out = StringIO()
    call_command("loadexample", example, stdout=out)
    return out.getvalue().split("test clock ")[1].split()[0]


def no_wider_than_the_screen(page) -> None:
    width = page.evaluate("() => document.documentElement.scrollWidth")
    assert width <= page.viewport_size["width"] + 1, f"the page scrolls sideways: {width}px"


def test_the_customer_acknowledges_sees_an_allowance_drop_and_cancels(live_server, page):
    tc = _load("apis_tax")
    advance(tc, datetime(2028, 4, 11, 14, tzinfo=UTC))
    subject = Subject.objects.get(domain=tc, key="12-3456789")
    _, path = portal_session_create(brand=subject.brand, subject=subject)
    page.goto(live_server.url + path)
    expect(page.get_by_role("heading", level=1)).to_have_text("Your dates · Acme Robotics")
    # What the customer can do now comes first: the 2027 return's dates a week ahead, with their buttons.
    first = page.locator("main section").first
    expect(first.get_by_role("heading")).to_have_text(re.compile(r"To do now \(\d+\)"))
    expect(first).to_contain_text("file · the 2027 return · US")
    expect(first).to_contain_text("in 7 days")
    expect(first.get_by_role("button", name="Mark done: file · the 2027 return · US", exact=True)).to_be_visible()
    expect(page.get_by_role("heading", name="Missed (8)")).to_be_visible()
    expect(page.get_by_role("link", name="Get my calendar link")).to_have_count(0)
    expect(page.get_by_role("button", name="Get my calendar link")).to_be_visible()
    assert_accessible(page)
    no_wider_than_the_screen(page)

    page.get_by_role("button", name="I've seen it: file · the 2027 return · US", exact=True).click()
    expect(page.get_by_role("status")).to_have_text("Acknowledged: file · the 2027 return · US, due Tue 18 Apr 2028")
    expect(page.get_by_role("button", name="I've seen it: file · the 2027 return · US", exact=True)).to_have_count(0)

    # Mark done: the confirmation names the date; the date leaves what to do and is listed done, with its undo.
    page.get_by_role("button", name="Mark done: file · the 2027 return · US-CA", exact=True).click()
    expect(page.get_by_role("status")).to_have_text(
        "Marked done: file · the 2027 return · US-CA, due Tue 18 Apr 2028")
    expect(first.get_by_role("button", name="Mark done: file · the 2027 return · US-CA", exact=True)).to_have_count(0)
    expect(page.locator("ul.done li")).to_contain_text("file · the 2027 return · US-CA · due Tue 18 Apr 2028 · done")
    page.screenshot(path=f"{SHOTS}/customer-done-{page.viewport_name}.png")
    page.locator("section.done").screenshot(path=f"{SHOTS}/customer-done-list-{page.viewport_name}.png")
    assert_accessible(page)
    no_wider_than_the_screen(page)
    # Undone: the date is back where it was, to do, with its button.
    page.locator("form.undo").get_by_role("button", name="Undo: not done yet").click()
    expect(page.get_by_role("status")).to_have_text("Open again: file · the 2027 return · US-CA, due Tue 18 Apr 2028")
    expect(first.get_by_role("button", name="Mark done: file · the 2027 return · US-CA", exact=True)).to_be_visible()
    expect(page.locator("ul.done")).to_have_count(0)
    page.screenshot(path=f"{SHOTS}/customer-undone-{page.viewport_name}.png")
    assert_accessible(page)
    no_wider_than_the_screen(page)

    allowance = page.locator(".allowances li").filter(has_text="of 2 used")
    expect(allowance).to_have_text(re.compile(r"^[a-z][a-z ]+: 0 of 2 used$"))
    # The brand records a notice on Acme: the plan's allowance covers its reply.
    subject_event(armer=DirectArmer(brand=subject.brand_id, domain=tc), subject=subject, type="notice.received",
                  key="CP2000-1", data={"reply_by": "2028-05-20"})
    page.reload()
    expect(allowance).to_have_text(re.compile(r"^[a-z][a-z ]+: 1 of 2 used$"))
    expect(page.get_by_text("the reply to notice CP2000-1", exact=False).first).to_be_visible()

    page.get_by_role("button", name="Cancel at the cycle's end").click()
    expect(page.get_by_role("status")).to_contain_text("It ends at the end of this cycle")
    expect(page.get_by_text("ends at the end of this cycle", exact=True)).to_be_visible()
    assert Subscription.objects.get(subject=subject).cancel_at_period_end
    assert_accessible(page)


def test_an_unknown_or_expired_link_says_so(live_server, page):
    page.goto(f"{live_server.url}/portal/customer/session?token=not-a-real-token")
    expect(page.get_by_role("heading", level=1)).to_have_text("This link has expired")
    assert_accessible(page)


def test_the_member_takes_a_task_extends_once_and_is_refused_the_second_time(live_server, page):
    tc = _load("api_forsale")
    advance(tc, datetime(2027, 10, 20, 14, 30, tzinfo=UTC))
    grace = get_user_model().objects.get(username="grace")
    grace.set_password("correct horse")
    grace.save()
    page.goto(f"{live_server.url}/portal/delivery/")
    expect(page.get_by_role("heading", level=1)).to_have_text("Sign in")
    assert_accessible(page)
    page.get_by_label("Username").fill("grace")
    page.get_by_label("Password").fill("correct horse")
    page.get_by_role("button", name="Sign in").click()
    expect(page.get_by_role("heading", level=1)).to_have_text("Your dates")
    expect(page.get_by_role("heading", name="Open in your pools")).to_be_visible()
    assert_accessible(page)
    no_wider_than_the_screen(page)

    page.get_by_role("button", name="Take appraise").first.click()
    expect(page.get_by_role("status")).to_have_text(re.compile(
        r"^You hold it now: appraise · .+, due \w{3} \d{1,2} \w{3} \d{4}, \d\d:\d\d P[DS]T$"))
    held = page.locator("section[aria-labelledby='tasks-h'] tbody tr")
    expect(held).to_have_count(1)
    # What the member holds comes first on the page, its times labelled (on a phone too).
    expect(page.locator("main section").first).to_have_attribute("aria-labelledby", "tasks-h")
    expect(held.locator("td[data-label='Your hold ends']")).to_be_visible()
    # In the member's zone (api.forsale's calendar: Los Angeles), with how long is left.
    expect(held).to_contain_text("Fri 22 Oct 2027, 07:30 PDT (2 days left)")

    page.get_by_role("button", name="Extend my hold").click()
    expect(page.get_by_role("status")).to_have_text(re.compile(r"^Your hold is extended \(once\): appraise · .+, due "))
    page.screenshot(path=f"{SHOTS}/member-extended-{page.viewport_name}.png")
    expect(held).to_contain_text("Sun 24 Oct 2027, 07:30 PDT (extended)")

    # Extended once: the button is gone (the service refuses a second one, hold_extended, as tests/services/test_people.py
    # shows), and the hold stays where the extension put it.
    expect(page.get_by_role("button", name="Extend my hold")).to_have_count(0)
    expect(held).to_contain_text("Sun 24 Oct 2027, 07:30 PDT (extended)")
    task = Task.objects.get(member=grace)
    assert task.hold_until == datetime(2027, 10, 24, 14, 30, tzinfo=UTC)
    assert_accessible(page)


def test_a_member_marks_their_date_done_reads_which_and_takes_it_back(live_server, page):
    from calendars.models import Clock, ClockItem  # noqa: PLC0415 - this flow's own set-up
    from timers.models import Membership  # noqa: PLC0415 - this flow's own set-up

    tc = _load("apis_tax")
    advance(tc, datetime(2028, 4, 11, 14, tzinfo=UTC))
    subject = Subject.objects.get(domain=tc, key="12-3456789")
    ada = get_user_model().objects.create_user("ada", password="correct horse")
    member = Membership.objects.create(user=ada, brand=subject.brand, role="member", name="Ada Lovelace")
    Clock.objects.filter(subject=subject, answers_for="Ada Lovelace").update(member=member, contact=None,
                                                                            assigned=True)
    page.goto(f"{live_server.url}/portal/delivery/")
    page.get_by_label("Username").fill("ada")
    page.get_by_label("Password").fill("correct horse")
    page.get_by_role("button", name="Sign in").click()
    expect(page.locator("p.meta .test-clock")).to_have_count(1)  # her dates are all on the test run: it says so
    row = page.locator("section[aria-labelledby='clocks-h'] tbody tr").filter(has_text="file · the 2027 return · US-CA")
    row.get_by_role("button", name="Mark done").click()
    expect(page.get_by_role("status")).to_have_text(
        "Marked done: file · the 2027 return · US-CA for Acme Robotics, due Tue 18 Apr 2028")
    page.screenshot(path=f"{SHOTS}/member-done-{page.viewport_name}.png")
    row = page.locator("section[aria-labelledby='clocks-h'] tbody tr").filter(has_text="file · the 2027 return · US-CA")
    row.screenshot(path=f"{SHOTS}/member-done-row-{page.viewport_name}.png")
    assert_accessible(page)
    no_wider_than_the_screen(page)
    row.get_by_role("button", name="Undo: not done yet: file · the 2027 return · US-CA").click()
    expect(page.get_by_role("status")).to_have_text(
        "Open again: file · the 2027 return · US-CA for Acme Robotics, due Tue 18 Apr 2028")
    row = page.locator("section[aria-labelledby='clocks-h'] tbody tr").filter(has_text="file · the 2027 return · US-CA")
    expect(row.get_by_role("button", name="Mark done")).to_be_visible()
    assert ClockItem.objects.get(clock__subject=subject, clock__name="file", clock__period="2027",
                                 item="US-CA").status == "open"
    assert_accessible(page)
