"""The words check: no page a customer or member reads, and nothing in a customer's calendar feed, shows an
id or a word of the runtime's (calendars/words.py holds the list). Run over the demo's moment: Acme
six days before its 2027 return, with its late 2026 returns handed to Hedy (``demousers``), and api.forsale's
deals on their second day.
"""

from __future__ import annotations

import html
import re
from datetime import UTC, datetime
from io import StringIO

import pytest
from django.core.management import call_command
from django.test import Client
from icalendar import Calendar

from calendars.feed_tokens import subject_feed_rotate
from calendars.models import Subject
from calendars.words import runtime_words
from services.portal_sessions import portal_session_create
from timers.advance import advance

ACME_AT = datetime(2028, 4, 12, 14, tzinfo=UTC)
DEALS_AT = datetime(2027, 10, 21, tzinfo=UTC)
FEED_TEXT = ("SUMMARY", "DESCRIPTION", "X-WR-CALNAME", "NAME", "X-WR-CALDESC", "LOCATION", "CATEGORIES", "COMMENT")


def _load(example: str) -> dict:
    out = StringIO()
    call_command("loadexample", example, stdout=out)
    text = out.getvalue()
    return {"tc": text.split("test clock ")[1].split()[0],
            "subjects": [line.split()[1] for line in text.splitlines() if line.startswith("subject ")]}


@pytest.fixture
def demo(db):
    acme, deals = _load("apis_tax"), _load("api_forsale")
    advance(acme["tc"], ACME_AT)
    advance(deals["tc"], DEALS_AT)
    out = StringIO()
    call_command("demousers", stdout=out)
    passwords = {line.split()[2]: line.split()[4] for line in out.getvalue().splitlines()}
    return {"acme": Subject.objects.get(pk=acme["subjects"][0]),
            "deals": [Subject.objects.get(pk=s) for s in deals["subjects"]], "passwords": passwords}


def _visible(response) -> str:
    """What a reader sees: the body's text and every attribute a reader hears (labels, titles, values)."""
    page = response.content.decode()
    page = re.sub(r"<(script|style)\b.*?</\1>", " ", page, flags=re.S)
    heard = " ".join(re.findall(r'(?:aria-label|title|alt|placeholder)="([^"]*)"', page))
    return html.unescape(re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", page)) + " " + heard)


def _clean(where: str, text: str) -> None:
    found = runtime_words(text)
    assert not found, f"{where} shows {sorted(set(found))}"


def test_no_customer_page_shows_an_id_or_a_runtime_word(demo):
    subject = demo["acme"]
    client = Client()
    _, path = portal_session_create(brand=subject.brand, subject=subject)
    client.get(path)
    home = client.get("/portal/customer/")
    assert home.status_code == 200 and "To do now" in home.content.decode()
    _clean("the customer portal", _visible(home))
    linked = client.post("/portal/customer/calendar-link", follow=True)
    _clean("the customer portal with its calendar link", _visible(linked).replace(subject.id, ""))
    token = subject_feed_rotate(subject=subject)
    page = Client().get(f"/portal/subjects/{subject.id}/calendar", {"token": token})
    assert page.status_code == 200
    # The page's own address (its subscribe links) holds the subject's id: that is a URL, not words.
    _clean("the subject's calendar page", _visible(page).replace(subject.id, ""))
    _clean("an expired link", _visible(Client().get("/portal/customer/")))
    for deal in demo["deals"]:
        c = Client()
        _, path = portal_session_create(brand=deal.brand, subject=deal)
        c.get(path)
        _clean(f"{deal.name}'s portal", _visible(c.get("/portal/customer/")))


def test_no_delivery_page_shows_an_id_or_a_runtime_word(demo):
    _clean("the sign-in page", _visible(Client().get("/portal/delivery/login")))
    for username in ("grace", "linus", "hedy", "katherine"):
        client = Client()
        assert client.login(username=username, password=demo["passwords"][username])
        page = client.get("/portal/delivery/")
        assert page.status_code == 200
        _clean(f"{username}'s delivery portal", _visible(page))
    hedy = Client()
    hedy.login(username="hedy", password=demo["passwords"]["hedy"])
    assert "Hand over Acme Robotics" in _visible(hedy.get("/portal/delivery/"))  # she has dates to hand over
    r = hedy.post(f"/portal/delivery/subjects/{demo['acme'].id}/withdraw", {"successor": "katherine"}, follow=True)
    _clean("the hand-over's answer", _visible(r))
    assert "Katherine Johnson answers for Acme Robotics" in _visible(r)


def test_the_feed_shows_no_id_or_runtime_word(demo):
    for subject in (demo["acme"], *demo["deals"]):
        token = subject_feed_rotate(subject=subject)
        body = Client().get(f"/subjects/{subject.id}/calendar.ics", {"token": token})
        assert body.status_code == 200
        cal = Calendar.from_ical(body.content)
        texts = []
        for component in cal.walk():
            for name in FEED_TEXT:
                value = component.get(name)
                if value is None:
                    continue
                values = value if isinstance(value, list) else [value]
                texts += [v.to_ical().decode() if hasattr(v, "to_ical") else str(v) for v in values]
        assert texts, "the feed says nothing"
        _clean(f"{subject.name}'s feed", "\n".join(texts))


def test_the_words_check_finds_what_it_looks_for():
    """The check itself: an id and each runtime word are found; plain words are not."""
    assert runtime_words("the brand minted job_nxTaOOOCNZ") == ["job_nxTaOOOCNZ", "minted"]
    assert runtime_words("Clk_gmUM6gsr#US marked done") == ["Clk_gmUM6gsr"]
    assert runtime_words("came unsatisfied; the gate refused; rungs; a timer superseded; the steward") == [
        "unsatisfied", "gate", "rungs", "timer", "superseded", "steward"]
    assert runtime_words("File the 2027 return by Tue 18 Apr 2028, 23:59 EDT: missed, let apis.tax handle it") == []


# Beside calendars.words' list, a timeline's sentence never says the tick's own words.
TIMELINE_WORDS = ("fired", "armed", "outbox", "tick", "firing")


def test_no_timeline_sentence_shows_an_id_or_a_runtime_word(demo):
    """Every sentence of every customer's, date's and job's timeline (what the API's ``sentence`` fields and the
    pages say), over the demo's record: Acme's two years, its reminders and sends, and api.forsale's deals."""
    from calendars.models import ClockItem
    from services.models import Job
    from services.timeline import item_timeline, job_timeline, subject_timeline

    said: list[tuple[str, str]] = []
    for subject in [demo["acme"], *demo["deals"]]:
        subject = Subject.objects.select_related("calendar").get(pk=subject.pk)
        said += [(subject.name, e.sentence) for e in subject_timeline(subject=subject, domain=subject.domain).entries]
        for job in Job.objects.filter(subject=subject).select_related("subject__calendar"):
            said += [(str(job), e.sentence) for e in job_timeline(job=job).entries]
        for item in ClockItem.objects.filter(clock__subject=subject).select_related("clock__subject__calendar"):
            said += [(item.owner_key, e.sentence) for e in item_timeline(item=item).entries]
    assert len(said) > 500
    for where, sentence in said:
        _clean(f"the timeline of {where}", sentence)
        found = [w for w in TIMELINE_WORDS if re.search(rf"\b{w}\b", sentence, re.IGNORECASE)]
        assert not found, f"the timeline of {where} says {found}: {sentence!r}"


def test_no_history_page_shows_an_id_or_a_runtime_word(demo):
    """The pages' histories (docs/timeline-pages.md): each of the customer's dates' history in the portal, and the
    owner console's History of the customer and of each date, over the demo's record."""
    from django.contrib.admin.utils import quote
    from django.contrib.auth import get_user_model
    from django.urls import reverse

    from calendars.models import ClockItem
    from timers.models import Membership

    subject = demo["acme"]
    items = list(ClockItem.objects.filter(clock__subject=subject))
    assert items
    client = Client()
    _, path = portal_session_create(brand=subject.brand, subject=subject)
    client.get(path)
    for item in items:
        page = client.get(reverse("customer:date-history", args=[item.clock_id, item.item or "-"]))
        assert page.status_code == 200
        text = _visible(page)
        assert "What happened to this date" in text
        _clean(f"the history of {item.owner_key} in the portal", text)
        found = [w for w in TIMELINE_WORDS if re.search(rf"\b{w}\b", text, re.IGNORECASE)]
        assert not found, f"the history of {item.owner_key} says {found}"
    owner = get_user_model().objects.create_user(username="olive-words", password="pw", is_staff=True)
    Membership.objects.create(user=owner, brand=subject.brand, role=Membership.Role.OWNER, name="Olive Owner")
    console = Client()
    console.force_login(owner)
    pages = [(subject.name, reverse("admin:calendars_subject_history", args=[quote(subject.pk)]))]
    pages += [(i.owner_key, reverse("admin:calendars_clockitem_history", args=[quote(i.pk)])) for i in items]
    for where, url in pages:
        page = console.get(url)
        assert page.status_code == 200
        html = page.content.decode()
        # The record's History (the console's own chrome and Django's log beneath are the console's).
        section = html.split('data-testid="history"', 1)[1].split('class="kt-console-log"', 1)[0]
        text = _visible(type("R", (), {"content": section.encode()})())
        assert "What happened" in text
        _clean(f"the console's History of {where}", text)
        found = [w for w in TIMELINE_WORDS if re.search(rf"\b{w}\b", text, re.IGNORECASE)]
        assert not found, f"the console's History of {where} says {found}"


def test_no_members_history_page_shows_an_id_or_a_runtime_word(demo):
    """Each History a member's page links (their Tasks', their pools' and the dates they answer for)."""
    opened = 0
    for username in ("grace", "linus", "hedy", "katherine"):
        client = Client()
        assert client.login(username=username, password=demo["passwords"][username])
        home = client.get("/portal/delivery/").content.decode()
        for url in re.findall(r'class="history-link" href="([^"]+)"', home):
            page = client.get(html.unescape(url))
            assert page.status_code == 200
            text = _visible(page)
            assert "What happened to it" in text
            _clean(f"{username}'s history at {url}", text)
            found = [w for w in TIMELINE_WORDS if re.search(rf"\b{w}\b", text, re.IGNORECASE)]
            assert not found, f"{username}'s history at {url} says {found}"
            opened += 1
    assert opened >= 3, opened
