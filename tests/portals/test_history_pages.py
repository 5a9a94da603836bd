"""The pages' history (issue 38, "The timeline"): the owner console's History of a date and of a customer is the
record (services.timeline) in the owner's words and the brand's zone, with the server-side strip above it (the
test clock's now marked as today), and Django's admin log beneath under its own name. Over apis.tax's demo
moment (tests.support.demo: 2028-04-12 08:00 in New York)."""

from __future__ import annotations

import re
from datetime import UTC, datetime

import pytest
from django.contrib.admin.utils import quote
from django.test import Client
from django.urls import reverse

from calendars.models import ClockItem, Subject
from calendars.words import runtime_words
from portals.history import strip
from services.timeline import ARMED, Entry, Timeline
from tests.support.demo import demo_moment

pytestmark = pytest.mark.django_db


@pytest.fixture
def demo(db):
    world = demo_moment("pw")
    client = Client()
    assert client.login(username="olive", password="pw")
    world["client"] = client
    world["acme"] = Subject.objects.get(brand=world["brand"], name="Acme Robotics")
    world["item"] = (ClockItem.objects.filter(clock__subject=world["acme"], status="open", item="US")
                     .order_by("due_at").first())
    return world


def _visible(html: str) -> str:
    html = re.sub(r"<(script|style)\b.*?</\1>", " ", html, flags=re.S)
    heard = " ".join(re.findall(r'(?:aria-label|title|alt)="([^"]*)"', html))
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", html)) + " " + heard


def _section(html: str) -> str:
    """The record's History section of a page (what the timeline puts there), without the console's chrome."""
    return html.split('data-testid="history"', 1)[1].split('class="kt-console-log"', 1)[0]


def test_a_dates_history_is_the_record_in_the_owners_zone_above_the_consoles_log(demo):
    item, client = demo["item"], demo["client"]
    url = reverse("admin:calendars_clockitem_history", args=[quote(item.pk)])
    r = client.post(reverse("admin:owner-settle"), {"kind": "item", "id": str(item.pk), "act": "remind"}, follow=True)
    assert "Reminded" in r.content.decode() or "reminder" in r.content.decode()
    page = client.get(url)
    assert page.status_code == 200
    html = page.content.decode()
    section = _visible(_section(html))
    # The record, not Django's log: the owner's Remind, to whom, and its email, in New York's time, named.
    assert "Olive Owner reminded Ada Lovelace of" in section, section
    assert re.search(r"Emailed \S+@\S+: ", section), section
    assert "Wed 12 Apr 2028, 08:00 EDT" in section
    assert "Times in America/New_York; today is Wed 12 Apr 2028, 08:00 EDT." in section
    assert "What happens next" in section and "is due." in section
    # Above the console's own log, which keeps its own name.
    assert html.index('data-testid="history"') < html.index("Changes in the console") < html.index('id="change-history"')
    # The strip: an image with a title and a description in words, today marked at the test clock's now.
    assert 'role="img"' in html and "kt-strip-title" in html and "today is Wed 12 Apr 2028, 08:00 EDT" in html
    assert "UTC" not in section
    assert not runtime_words(section), runtime_words(section)


def test_a_customers_history_covers_their_dates_and_jobs(demo):
    acme, client = demo["acme"], demo["client"]
    page = client.get(reverse("admin:calendars_subject_history", args=[quote(acme.pk)]))
    assert page.status_code == 200
    html = page.content.decode()
    section = _visible(_section(html))
    assert "History: Acme Robotics" in _visible(html)
    assert "rolled from Sat 15 Apr 2028 to Tue 18 Apr 2028: Emancipation Day" in section, section
    assert "UTC" not in section
    assert not runtime_words(section), runtime_words(section)
    # No id in the page's words (the addresses in its links are not words).
    assert acme.pk not in _visible(html)


def test_the_strip_marks_today_at_the_clocks_now_between_past_and_ahead():
    zone = __import__("zoneinfo").ZoneInfo("America/New_York")
    def at(day: int) -> datetime:
        return datetime(2028, 4, day, 12, tzinfo=UTC)
    timeline = Timeline(title="File · the 2027 return · US", zone=zone, entries=[
        Entry(id="evt_a", kind="reminded", type="x", at=at(1), sentence="A reminder went out.", zone=zone),
        Entry(id="tmr_b", kind=ARMED, type="x", at=at(21), sentence="It is due.", zone=zone)])
    svg = strip(timeline, now=at(11))
    assert re.search(r'<line x1="50.0%" x2="50.0%"[^>]*class="kt-today"', svg), svg  # 10 of 20 days: the middle
    assert '<circle cx="4.0%"' in svg and 'class="kt-past"' in svg
    assert '<circle cx="96.0%"' in svg and 'class="kt-ahead"' in svg
    assert "1 thing happened from Sat 1 Apr 2028, 08:00 EDT; 1 thing ahead, the next on Fri 21 Apr 2028, 08:00 EDT; " \
           "today is Tue 11 Apr 2028, 08:00 EDT (America/New_York)." in svg
