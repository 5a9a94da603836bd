"""A business's own people in a real browser (issue 37), desktop and a 390px phone, each page checked with axe-core:
the owner adds a customer with two contacts and subscribes them; the second contact, their officer, opens their own
link and reads "you (their name)" with times in their zone; the owner's Remind puts one email in the backend,
addressed to the person who answers, with the date in their zone, and the banner names them.

Skips (with its reason) where the browser tests cannot run (tests/support/browser.py), and on SQLite.
"""

from __future__ import annotations

import os
import re
from datetime import UTC, datetime

import pytest
from django.contrib.auth import get_user_model
from django.core import mail
from django.db import connection

from calendars.brand_calendars import calendar_create
from calendars.models import Contact, Subject
from services.portal_sessions import portal_session_create
from tests.support.axe import assert_accessible
from tests.support.browser import browser, expect, sign_in_to_console, viewport_page  # noqa: F401  (fixtures: browser, page)
from timers import transports
from timers.advance import advance
from timers.models import Event, Membership
from timers.tenants import brand_get_or_create
from timers.test_clocks import test_clock_create

T0 = datetime(2027, 1, 20, 14, 0, tzinfo=UTC)
CLOSE = datetime(2027, 4, 10, 14, 0, tzinfo=UTC)  # the 2026 return's federal date (Thu 15 Apr) is five days off
SCREENSHOTS = os.environ.get("OWNER_SCREENSHOTS", "/tmp")

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def shop(transactional_db, settings):
    if connection.vendor != "postgresql":
        pytest.skip("the browser tests run on PostgreSQL")
    settings.EMAIL_BACKEND = "django.core.mail.backends.locmem.EmailBackend"
    transports.register("notices", transports.RecordingTransport())
    brand = brand_get_or_create(name="apis.tax")
    calendar_create(brand=brand, name="New York office", zone="America/New_York", holiday_country="US",
                    holiday_subdivision="DC", now=T0)
    clock = test_clock_create(brand=brand, frozen_time=T0, name="people")
    user = get_user_model().objects.create_user(username="olive", password="correct horse battery", is_staff=True,
                                                email="olive@apis.tax.example")
    Membership.objects.create(user=user, brand=brand, role=Membership.Role.OWNER, name="Olive Owner")
    return brand, clock


def label(text: str) -> re.Pattern:
    """A field's label exactly (Django's forms may add a colon)."""
    return re.compile(rf"^{re.escape(text)}:?$")


def shot(page, name: str) -> None:
    page.screenshot(path=f"{SCREENSHOTS}/people-{name}-{page.viewport_name}.png", full_page=True)


def test_a_customers_people_hear_their_own_dates_in_their_own_zone(live_server, page, shop):
    brand, clock = shop
    sign_in_to_console(page, live_server.url, "olive")

    # Add a customer with two people: their bookkeeper first (primary), then their officer, in Los Angeles.
    page.goto(f"{live_server.url}/admin/calendars/subject/add/")
    page.get_by_label(label("Name")).fill("Acme Robotics")
    page.get_by_label("Key").fill("12-3456789")
    page.get_by_label("Clock").select_option(clock.id)
    page.get_by_label(label("First contact")).fill("Bo Bookkeeper")
    page.get_by_label("First contact's email").fill("bo@acme.example")
    page.get_by_label("First contact's role").fill("bookkeeper")
    page.get_by_label(label("Second contact")).fill("Ada Lovelace")
    page.get_by_label("Second contact's email").fill("not an address")  # said on the field, nothing added
    page.get_by_label("Second contact's role").fill("officer")
    page.get_by_label("Second contact's zone").fill("America/Los_Angeles")
    page.get_by_role("button", name="Add the customer").click()
    expect(page.locator(".errorlist")).to_contain_text("an email address")
    assert not Subject.objects.exists() and not Contact.objects.exists()
    assert_accessible(page, what="the add-a-customer page, refused")
    shot(page, "add-customer")
    page.get_by_label("Second contact's email").fill("ada@acme.example")
    page.get_by_role("button", name="Add the customer").click()
    expect(page.locator(".messagelist")).to_contain_text("Acme Robotics is a customer now")
    subject = Subject.objects.get()
    assert [(c.name, c.role, c.primary) for c in subject.contacts.order_by("seq")] == [
        ("Bo Bookkeeper", "bookkeeper", True), ("Ada Lovelace", "officer", False)]
    their_people = page.locator(".field-people")
    expect(their_people).to_contain_text("Ada Lovelace")
    expect(their_people).to_contain_text("Bo Bookkeeper")
    assert_accessible(page, what="the customer's page")
    shot(page, "customer")

    page.get_by_role("link", name="Subscribe to a plan").click()
    page.get_by_label("Entity").select_option("C corp")
    page.get_by_label("States").fill("CA")
    page.get_by_role("button", name="Subscribe").click()
    expect(page.locator(".messagelist")).to_contain_text("subscribed to the Tax plan")

    # The 2026 return is minted; its federal date is five days off.
    advance(clock.id, CLOSE)
    mail.outbox.clear()

    # The officer opens their own link: "you" is Ada, and times are said in her zone.
    ada = subject.contacts.get(role="officer")
    _, path = portal_session_create(brand=brand, subject=subject, contact=ada)
    page.goto(f"{live_server.url}{path}")
    main = page.locator("main")
    expect(main).to_contain_text("for Ada Lovelace")
    expect(main).to_contain_text("times in America/Los_Angeles (PDT)")
    expect(main).to_contain_text("you (Ada Lovelace)")
    assert "PDT" in main.inner_text() and "EDT" not in main.inner_text()
    assert_accessible(page, what="the officer's portal")
    shot(page, "portal-officer")

    # The owner reminds her from the dashboard: one email, to her, the date in her zone; the banner names her.
    page.goto(f"{live_server.url}/admin/")
    page.get_by_role("button", name="Remind Ada Lovelace").first.click()
    expect(page.locator(".messagelist")).to_contain_text("Emailed Ada Lovelace (ada@acme.example) a reminder of")
    assert_accessible(page, what="the dashboard after a reminder")
    shot(page, "reminded")
    reminders = [m for m in mail.outbox if "A reminder" in m.subject]
    assert [m.to for m in reminders] == [["ada@acme.example"]]
    body = reminders[0].body
    assert re.search(r"is due \w{3} \d{1,2} Apr 2027, 20:59 PDT \(America/Los_Angeles\)", body), body
    assert "/portal/customer/session?token=" in body and "If it is missed:" in body
    assert Event.objects.filter(domain=clock.id, type="clock.reminded", data__to="Ada Lovelace",
                                data__by="Olive Owner").count() == 1
    assert not page.errors, page.errors
