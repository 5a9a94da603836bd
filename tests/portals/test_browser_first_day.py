"""A brand's first day in a real browser (issue 23), desktop and a 390px phone, each page checked with axe-core:
the owner invites a member, adds a customer, subscribes them to the Tax Plan and, once the test clock has moved
on, sees their dates on the dashboard; the customer's portal and calendar feed show the same dates.

Skips (with its reason) where the browser tests cannot run (tests/support/browser.py), and on SQLite.
"""

from __future__ import annotations

import os
import re
import urllib.request
from datetime import UTC, datetime

import pytest
from django.contrib.auth import get_user_model
from django.core import mail
from django.db import connection

from calendars.brand_calendars import calendar_create
from calendars.feed_tokens import subject_feed_rotate
from calendars.models import Subject
from services.models import Subscription
from services.portal_sessions import portal_session_create
from tests.support.axe import assert_accessible
from tests.support.browser import browser, expect, sign_in_to_console, viewport_page  # noqa: F401  (fixtures: browser, page)
from timers import transports
from timers.advance import advance
from timers.models import Membership
from timers.tenants import brand_get_or_create
from timers.test_clocks import test_clock_create

T0 = datetime(2027, 1, 20, 14, 0, tzinfo=UTC)
LATER = datetime(2027, 3, 25, 14, 0, tzinfo=UTC)  # the 2026 return is minted, its dates within 30 days
SCREENSHOTS = os.environ.get("OWNER_SCREENSHOTS", "/tmp")

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def shop(transactional_db):
    if connection.vendor != "postgresql":
        pytest.skip("the browser tests run on PostgreSQL")
    transports.register("notices", transports.RecordingTransport())
    brand = brand_get_or_create(name="apis.tax")
    calendar_create(brand=brand, name="New York office", zone="America/New_York", holiday_country="US",
                    holiday_subdivision="DC", now=T0)
    clock = test_clock_create(brand=brand, frozen_time=T0, name="first day")
    user = get_user_model().objects.create_user(username="ada", password="correct horse battery", is_staff=True)
    Membership.objects.create(user=user, brand=brand, role=Membership.Role.OWNER, name="Ada Lovelace")
    return brand, clock


def shot(page, name: str) -> None:
    page.screenshot(path=f"{SCREENSHOTS}/first-day-{name}-{page.viewport_name}.png", full_page=True)


def test_the_owner_runs_a_first_day_and_the_customer_sees_their_dates(live_server, page, shop):
    brand, clock = shop
    sign_in_to_console(page, live_server.url, "ada")

    # Invite a member: one email with a link to choose a password.
    page.goto(f"{live_server.url}/admin/timers/membership/add/")
    assert_accessible(page, what="the invite page")
    page.get_by_label("Email").fill("grace@example.com")
    page.get_by_label("Name").fill("Grace Hopper")
    page.get_by_role("button", name="Send the invite").click()
    expect(page.locator(".messagelist")).to_contain_text("Invite sent to grace@example.com")
    assert [m.to for m in mail.outbox] == [["grace@example.com"]]

    # Add a customer on the test clock.
    page.goto(f"{live_server.url}/admin/calendars/subject/add/")
    expect(page.get_by_role("heading", name="Add a customer")).to_be_visible()
    assert_accessible(page, what="the add-a-customer page")
    shot(page, "add-customer")
    page.get_by_label("Name").fill("Acme Robotics")
    page.get_by_label("Key").fill("12-345")  # a wrong EIN first: said on the field, nothing added
    page.get_by_label("Clock").select_option(clock.id)
    page.get_by_role("button", name="Add the customer").click()
    expect(page.locator(".errorlist")).to_contain_text("12-3456789")
    assert not Subject.objects.exists()
    page.get_by_label("Key").fill("12-3456789")
    page.get_by_role("button", name="Add the customer").click()
    expect(page.locator(".messagelist")).to_contain_text("Acme Robotics is a customer now")
    expect(page.locator(".breadcrumbs")).to_contain_text("Customers")
    subject = Subject.objects.get()
    assert subject.domain == clock.id

    # Subscribe them to the Tax Plan: its declared input is the form.
    page.get_by_role("link", name="Subscribe to a plan").click()
    expect(page.get_by_role("heading", name="Subscribe Acme Robotics")).to_be_visible()
    assert_accessible(page, what="the subscribe page")
    shot(page, "subscribe")
    page.get_by_label("Entity").select_option("C corp")
    page.get_by_label("States").fill("CA, NY")
    page.get_by_role("button", name="Subscribe").click()
    expect(page.locator(".messagelist")).to_contain_text("subscribed to the Tax plan")
    assert Subscription.objects.get().input == {"entity": "C corp", "states": ["CA", "NY"]}

    # Time passes on the test clock: the 2026 return is minted and its dates come within 30 days.
    advance(clock.id, LATER)
    page.goto(f"{live_server.url}/admin/")
    ahead = page.locator("section", has=page.get_by_role("heading", name=re.compile("The next 30 days")))
    expect(ahead).to_contain_text("Acme Robotics")
    expect(ahead).to_contain_text("2026 return")
    assert_accessible(page, what="the dashboard")
    shot(page, "dashboard")

    # The customer's portal and their calendar feed show the same dates.
    _, path = portal_session_create(brand=brand, subject=subject)
    page.goto(f"{live_server.url}{path}")
    expect(page.get_by_role("heading", level=1)).to_have_text("Your dates · Acme Robotics")
    expect(page.locator("main")).to_contain_text("2026 return")
    assert_accessible(page, what="the customer portal")
    shot(page, "portal")
    token = subject_feed_rotate(subject=subject)
    with urllib.request.urlopen(f"{live_server.url}/subjects/{subject.id}/calendar.ics?token={token}") as r:
        ics = r.read().decode()
    assert "BEGIN:VCALENDAR" in ics and "2026 return" in ics
    assert not page.errors, page.errors
