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


def _portal(subject: Subject) -> Client:
    from services.portal_sessions import portal_session_create
    client = Client()
    _, path = portal_session_create(brand=subject.brand, subject=subject)
    client.get(path)
    return client


def test_the_customer_opens_a_dates_history_in_their_zone(demo):
    acme = demo["acme"]
    item = ClockItem.objects.get(clock__subject=acme, item="US", clock__period="2027", clock__name__startswith="file")
    client = _portal(acme)
    home = client.get("/portal/customer/").content.decode()
    url = reverse("customer:date-history", args=[item.clock_id, "US"])
    assert f'href="{url}"' in home  # each date opens its own history
    page = client.get(url)
    assert page.status_code == 200
    text = _visible(page.content.decode())
    assert "What happened to this date" in text
    assert "rolled from Sat 15 Apr 2028 to Tue 18 Apr 2028: Emancipation Day (observed)" in text, text
    # The brand's emails to the reader, as the brand says them to them: "we", "you", and the day.
    assert "Tue 1 Feb 2028, 09:00 EST We emailed you on Tue 1 Feb 2028: sent." in text, text
    assert "ada@acme-robotics.example" not in text
    assert "A notice for you (Ada Lovelace) was sent: received." in text  # the link was for Ada: she is "you"
    assert "Times in America/New_York; today is Wed 12 Apr 2028, 08:00 EDT." in text
    assert "is due." in text.split("What happens next", 1)[1]
    assert "UTC" not in text and not runtime_words(text), runtime_words(text)
    # Marked done from the portal, the history says so, when, and that nothing is ahead for it any more.
    client.post(reverse("customer:clock-act", args=[item.clock_id, "US", "done"]))
    text = _visible(client.get(url).content.decode())
    assert "Wed 12 Apr 2028, 08:00 EDT You (Ada Lovelace) marked file · the 2027 return · US done." in text, text[-600:]
    assert "Nothing is planned." in text.split("What happens next", 1)[1]


def test_a_date_of_another_customer_has_no_history_here(demo):
    other = ClockItem.objects.exclude(clock__subject=demo["acme"]).first()
    client = _portal(demo["acme"])
    mine = ClockItem.objects.filter(clock__subject=demo["acme"]).first()
    assert client.get(reverse("customer:date-history", args=[mine.clock_id, mine.item or "-"])).status_code == 200
    if other is not None:
        assert client.get(reverse("customer:date-history", args=[other.clock_id, other.item or "-"])).status_code == 404
    assert client.get(reverse("customer:date-history", args=["clk_nothing", "US"])).status_code == 404
    assert Client().get(reverse("customer:date-history", args=[mine.clock_id, "-"])).status_code == 403


def test_the_customer_reads_no_call_to_the_brands_own_systems():
    from zoneinfo import ZoneInfo

    from portals.history import for_customer
    zone = ZoneInfo("America/New_York")
    at = datetime(2028, 4, 1, 12, tzinfo=UTC)
    said = [("fired", "clock.notice", "A reminder went out."), ("sent", "email", "Emailed ada@acme.example: sent."),
            ("sent", "webhook", "The brand's webhook endpoint was sent the reminder event: failed."),
            ("sent", "http", "The brand's address was called: failed.")]
    timeline = Timeline(title="t", zone=zone, entries=[Entry(id=f"x{n}", kind=k, type=t, at=at, sentence=s, zone=zone)
                                                       for n, (k, t, s) in enumerate(said)])
    assert [e.type for e in for_customer(timeline).entries] == ["clock.notice", "email"]


def test_the_customer_is_you_on_their_dates_history():
    from zoneinfo import ZoneInfo

    from portals.history import for_customer
    zone = ZoneInfo("America/New_York")
    at = datetime(2028, 4, 1, 12, tzinfo=UTC)
    said = ["Olive Owner reminded Ada Lovelace of file · the 2027 return · US, by email.",
            "A notice for Ada Lovelace was sent: received.", "Emailed ada@acme.example: sent.",
            "File · the 2027 return is now Ada Lovelace's to answer for (opened).",
            "Ada Lovelace acknowledged file · the 2027 return · US.",
            "Ada Lovelace marked file · the 2027 return · US done.",
            "Emailed grace@acme.example, ada@acme.example (try 2): given up after 5 tries."]
    sends = {"Emailed": ("sent", "email")}  # the brand's emails: a send of the email transport
    timeline = Timeline(title="t", zone=zone, entries=[
        Entry(id=f"x{n}", kind=sends.get(t.split()[0], ("acted", "x"))[0], type=sends.get(t.split()[0], ("acted", "x"))[1],
              at=at, sentence=t, zone=zone) for n, t in enumerate(said)])
    assert [e.sentence for e in for_customer(timeline, you="Ada Lovelace", address="Ada@acme.example").entries] == [
        "Olive Owner reminded you (Ada Lovelace) of file · the 2027 return · US, by email.",
        "A notice for you (Ada Lovelace) was sent: received.", "We emailed you on Sat 1 Apr 2028: sent.",
        "File · the 2027 return is now yours to answer for (opened).",
        "You (Ada Lovelace) acknowledged file · the 2027 return · US.",
        "You (Ada Lovelace) marked file · the 2027 return · US done.",
        "We emailed grace@acme.example, you on Sat 1 Apr 2028 (try 2): given up after 5 tries."]
    # No contact named: as the record says, but for the brand's emails, which the brand says as "we".
    assert [e.sentence for e in for_customer(timeline).entries] == [
        *said[:2], "We emailed ada@acme.example on Sat 1 Apr 2028: sent.", *said[3:6],
        "We emailed grace@acme.example, ada@acme.example on Sat 1 Apr 2028 (try 2): given up after 5 tries."]


@pytest.fixture
def forsale(db):
    from io import StringIO

    from django.contrib.auth import get_user_model
    from django.core.management import call_command

    from timers.advance import advance
    out = StringIO()
    call_command("loadexample", "api_forsale", stdout=out)
    tc = out.getvalue().split("test clock ")[1].split()[0]
    advance(tc, datetime(2027, 10, 20, 14, 30, tzinfo=UTC))
    grace = get_user_model().objects.get(username="grace")
    grace.set_password("pw")
    grace.save()
    client = Client()
    assert client.login(username="grace", password="pw")
    return client


def test_a_member_reads_why_extend_is_gone_on_the_tasks_history(forsale):
    from services.models import Task
    client = forsale
    task = Task.objects.filter(status="open", step="appraise").order_by("due_at", "id").first()
    client.post(reverse("delivery:task-act", args=[task.id, "take"]))
    client.post(reverse("delivery:task-act", args=[task.id, "extend"]))
    home = client.get("/portal/delivery/").content.decode()
    url = reverse("delivery:task-history", args=[task.id])
    assert f'href="{url}"' in home
    text = _visible(client.get(url).content.decode())
    assert "What happened to it" in text
    assert re.search(r"Wed 20 Oct 2027, 07:30 PDT \S+( \S+)? took the appraise work on ", text), text[-1500:]
    assert re.search(r"Wed 20 Oct 2027, 07:30 PDT \S+( \S+)? extended their hold on .{0,80}"
                     r"\(a hold extends once per Task\)\.", text), text[-1500:]
    assert "Times in America/Los_Angeles; today is Wed 20 Oct 2027, 07:30 PDT." in text
    # What is ahead: the warning at three quarters of the hold, then its end, each said once as what it is.
    assert "Thu 21 Oct 2027, 19:30 PDT: A warning goes out that the hold on the work on " in text, text[-1500:]
    assert "Thu 21 Oct 2027, 19:30 PDT: A hold on the work" not in text, text[-1500:]
    assert "UTC" not in text and not runtime_words(text), runtime_words(text)
    # Another member's, or nothing: the same not-found page.
    assert client.get(reverse("delivery:task-history", args=["tsk_nothing"])).status_code == 404
    assert client.get(reverse("delivery:date-history", args=["clk_nothing", "-"])).status_code == 404
    assert Client().get(url).status_code == 302  # signed out: to the sign-in page
