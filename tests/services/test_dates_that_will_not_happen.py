"""A date that will not happen is never shown (issue 37): a plan's schedule whose ``when`` is false for the
subscription's input (the Tax Plan's quarterly estimates, for an entity that is not a C corp) lists nothing in the
subject calendar, its feed, ``subjects calendar``, the customer portal or the owner's dashboard, while the record
says ``schedule.skipped`` at each; the input changed to one it reads true for, the estimates are listed again, and
the feed's stamp says the feed changed."""

from __future__ import annotations

import html
import re
from datetime import UTC, datetime

import pytest
from django.contrib.auth import get_user_model
from django.test import Client

from calendars import feed
from calendars.brand_calendars import calendar_create
from calendars.entries import subject_calendar
from calendars.feed_stamp import feed_stamp
from services.orders import subscription_start
from services.portal_sessions import portal_session_create
from services.subjects import subject_create
from services.subscriptions import subscription_update
from tests.conftest import at
from tests.support.cli import run
from timers.advance import advance
from timers.armer import DirectArmer
from timers.models import Event, Membership
from timers.tenants import brand_get_or_create
from timers.test_clocks import test_clock_create

pytestmark = pytest.mark.django_db

T0 = datetime(2027, 1, 20, 14, 0, tzinfo=UTC)
QUARTER = re.compile(r"Q[1-4] estimate")


def text(response) -> str:
    page = response.content.decode().split("<main>", 1)[-1]
    return html.unescape(re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", page)))


def shown(subject, tc) -> dict[str, str]:
    """What each face says about the subject, as text."""
    customer = Client()
    _, path = portal_session_create(brand=subject.brand, subject=subject)
    customer.get(path)
    owner = Client()
    owner.force_login(get_user_model().objects.get(username="ada"))
    sc = subject_calendar(subject, everything=True)
    return {
        "calendar": " | ".join(f"{e.what} {e.plain}" for e in sc.entries),
        "feed": feed.build_ics(sc).decode(),
        "cli": run("subjects", "calendar", subject.id, "--test-clock", tc.id),
        "portal": text(customer.get("/portal/customer/")),
        "dashboard": text(owner.get("/admin/")),
    }


def test_a_schedule_whose_when_is_false_lists_no_date_anywhere(db):
    brand = brand_get_or_create(name="apis.tax")
    user = get_user_model().objects.create_user(username="ada", password="pw", is_staff=True)
    Membership.objects.create(user=user, brand=brand, role=Membership.Role.OWNER, name="Ada")
    cal = calendar_create(brand=brand, name="New York office", zone="America/New_York", holiday_country="US",
                          holiday_subdivision="DC", now=T0)
    tc = test_clock_create(brand=brand, frozen_time=T0, name="trial")
    subject = subject_create(brand=brand, domain=tc.id, kind="taxpayer", key="12-3456789", name="Acme Robotics",
                             calendar=cal, now=T0)
    sub = subscription_start(brand=brand, subject=subject, plan="tax-plan",
                             input={"entity": "S corp", "states": ["CA"]})
    for face, says in shown(subject, tc).items():
        assert not QUARTER.search(says), (face, says)  # (the plan's allowance of 4 estimates is no date)
        assert "2026 return" in says, (face, says)  # the annual schedule's mint is listed, as before
    before = feed_stamp(subject)
    advance(tc.id, at("2027-03-10T00:00Z"))  # the first quarter's mint (2027-04-05) is within the dashboard's month
    for face, says in shown(subject, tc).items():
        assert not QUARTER.search(says), (face, says)
    advance(tc.id, at("2027-04-20T00:00Z"))  # past the first quarter's mint (2027-04-05): skipped
    skipped = Event.objects.filter(domain=tc.id, type="schedule.skipped").values_list("data", flat=True)
    assert {"schedule": "estimate", "period": "2027-Q1", "reason": "when"} in list(skipped)
    for face, says in shown(subject, tc).items():
        assert not QUARTER.search(says), (face, says)
    # An S corp that becomes a C corp pays estimates: the next quarter's is listed, and the feed knows it.
    stamp = feed_stamp(subject)
    subscription_update(armer=DirectArmer(brand=brand, domain=tc.id), sub=sub, input={"entity": "C corp"})
    assert feed_stamp(subject) != stamp != before
    assert "2027-Q2 estimate" in shown(subject, tc)["calendar"]
