"""What an error stopped is in the owner console's alarms (issue 36, item 6): what it was for, in words, the
error as a sentence, and a Retry button that runs it again through timers.arming.timer_retry (what
`timers retry` calls); another brand's owner can neither see nor retry it."""

from __future__ import annotations

import html
import re
from datetime import timedelta

import pytest
from django.contrib.auth import get_user_model
from django.test import Client

from calendars.words import ID_PATTERN, runtime_words
from tests.conftest import T0
from tests.timers.test_failures import BROKEN, _arm, flaky_handler  # noqa: F401 - the fixture, used by name
from timers.advance import advance
from timers.models import Membership, Timer
from timers.tenants import brand_get_or_create

pytestmark = pytest.mark.django_db


def _owner(brand, username: str) -> Client:
    user = get_user_model().objects.create_user(username=username, password="pw", is_staff=True)
    Membership.objects.create(user=user, brand=brand, role=Membership.Role.OWNER, name=username.title())
    client = Client()
    client.force_login(user)
    return client


def _alarms(client: Client) -> str:
    page = client.get("/admin/").content.decode()
    return page.split('id="alarms"', 1)[1].split("</section>", 1)[0]


def _said(section: str) -> list[str]:
    items = re.findall(r'<li data-failed="[^"]+">(.*?)<form', section, re.S)
    return [re.sub(r"\s+", " ", html.unescape(re.sub(r"<[^>]+>", " ", i))).strip() for i in items]


def test_the_console_shows_what_an_error_stopped_and_retry_runs_it_again(brand, clock):
    console = _owner(brand, "olive")
    assert "Nothing stopped by an error." in _alarms(console)
    _arm(brand, clock)
    advance(clock.id, T0 + timedelta(days=1))
    timer = Timer.objects.get(domain=clock.id, key="job_1:deadline:late:2027")
    alarms = _alarms(console)
    [said] = _said(alarms)
    assert said.startswith("Stopped by an error : The late point of a piece of work, ")
    assert said.endswith("It stopped with an error: division by zero (ZeroDivisionError).")
    assert not ID_PATTERN.search(said) and runtime_words(said) == []
    assert 'name="act" value="retry"' in alarms and ">Retry</button>" in alarms

    # Another brand's owner sees none of it, and a forged Retry finds nothing.
    other = _owner(brand_get_or_create(name="globex"), "gus")
    assert "Stopped by an error" not in _alarms(other)
    r = other.post("/admin/settle/", {"kind": "timer", "id": timer.id, "act": "retry", "next": "/admin/"},
                   follow=True)
    assert "That was not found." in r.content.decode()
    assert Timer.objects.get(pk=timer.pk).status == "held"

    BROKEN["on"] = False
    r = console.post("/admin/settle/", {"kind": "timer", "id": timer.id, "act": "retry", "next": "/admin/"},
                     follow=True)
    assert "It runs again now; if it stops again, it is back here." in r.content.decode()
    timer.refresh_from_db()
    assert (timer.status, timer.by) == ("armed", "resume")
    assert "Nothing stopped by an error." in _alarms(console)
    advance(clock.id, T0 + timedelta(days=2))
    assert Timer.objects.get(pk=timer.pk).status == "fired"
    # Retry again: it is not stopped any more, said as a sentence, nothing changed.
    r = console.post("/admin/settle/", {"kind": "timer", "id": timer.id, "act": "retry", "next": "/admin/"},
                     follow=True)
    assert "Not done. It is not stopped by an error any more. Nothing was changed." in r.content.decode()
