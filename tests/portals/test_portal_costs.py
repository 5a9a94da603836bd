"""The customer portal says what a miss costs on every row (issue 37): a clock's date, and the dates that are not a
clock's (a link's expiry, a grant's end, a delivery, a step's work, a plan's work starting and its renewal) in the
customer's words; a link whose expiry ends the work is "to do now", never "Nothing needs you right now".

api.forsale (``loadexample api_forsale``) on 4 November 2027, 00:00 UTC: deal A's offer link is open a last time
and expires in 16 hours (the deal then lapses, and what is left of its $1,500 hold comes back); deal B's registrar
grant runs and its transfer is due. Acme (``loadexample apis_tax``) on 11 April 2028: its return's dates, the
plan's mints and its renewal."""

from __future__ import annotations

import html
import re

import pytest
from django.test import Client

from calendars.models import Subject
from calendars.words import runtime_words
from services.portal_sessions import portal_session_create
from tests.conftest import at
from tests.support.cli import run
from timers.advance import advance
from timers.models import TestClock

pytestmark = pytest.mark.django_db


def _page(subject: Subject) -> str:
    client = Client()
    _, path = portal_session_create(brand=subject.brand, subject=subject)
    client.get(path)
    r = client.get("/portal/customer/")
    assert r.status_code == 200
    return r.content.decode()


def _text(fragment: str) -> str:
    return html.unescape(re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", fragment))).strip()


def _rows(page: str) -> dict[str, str]:
    """Each row of the page's tables: what it is → what a miss costs."""
    out = {}
    for row in re.findall(r"<tr[^>]*>\s*<td class=\"date\">(.*?)</tr>", page, re.S):
        what = _text(re.search(r'<td class="what">(.*?)</td>', row, re.S)[1])
        out[what] = _text(re.search(r'<td class="cost"[^>]*>(.*?)</td>', row, re.S)[1])
    return out


def _section(page: str, heading: str, until: str) -> str:
    return _text(page.split(f'id="{heading}"', 1)[1].split(f'id="{until}"', 1)[0])


@pytest.fixture
def deals(db):
    run("loadexample", "api_forsale", "--reset")
    tc = TestClock.objects.get(seed="api_forsale")
    advance(tc.id, at("2027-11-04T00:00Z"))
    return {s.key: s for s in Subject.objects.select_related("brand").filter(domain=tc.id)}


def test_a_last_chance_link_is_to_do_now_with_what_its_expiry_costs(deals):
    page = _page(deals["alpha.example"])
    todo = _section(page, "todo-h", "year-h")
    assert "Nothing needs you right now" not in todo
    assert "To do now (1)" in todo and "link for offer expires (its last chance)" in todo
    rows = _rows(page)
    link = next(v for k, v in rows.items() if "link for offer expires" in k)
    assert link == "the work ends, and you get back what is left of the $1,500.00 held"
    assert rows["deliver the A-1001 deal"] == "you pay $150.00 less if it's late"


def test_every_row_says_what_a_miss_costs_in_the_customers_words(deals):
    beta = _rows(_page(deals["beta.example"]))
    assert beta["the buyer's registrar grant ends · the B-2001 deal"] == (
        "a step that needs it waits until you grant it again")
    assert beta["transfer due · the B-2001 deal"] == "api.forsale's own work: nothing for you to do"
    run("loadexample", "apis_tax", "--reset")
    tc = TestClock.objects.get(seed="apis_tax")
    advance(tc.id, at("2028-04-11T14:00Z"))
    acme = _rows(_page(Subject.objects.select_related("brand").get(domain=tc.id, key="12-3456789")))
    assert acme["Tax Plan renews · $2,400.00"] == "it renews at $2,400.00; cancel before then if you don't want it"
    for rows in (beta, acme):
        empty = [what for what, miss in rows.items() if not miss]
        assert not empty, empty
        assert not [miss for miss in rows.values() if runtime_words(miss)]
