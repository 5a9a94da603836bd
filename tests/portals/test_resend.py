"""Resend from the History (issue 38): an owner resends a failed, given-up or in-doubt send from a date's or a
customer's History, through the outbox's rules (services.resend): a send that may have arrived asks the far end
first, never a silent second send; each resend is its own attempt, its own line, never an edit of the old.
The far end is a real HTTP receiver that counts what arrives (tests/support/far_end.py), as the emails'
transport (as tests/timers/test_faults.py sets KT_EMAIL_TRANSPORT)."""

from __future__ import annotations

import re

import pytest
from django.contrib.admin.utils import quote
from django.test import Client
from django.urls import reverse

from calendars.models import ClockItem, Subject
from calendars.words import runtime_words
from services.resend import ConfirmResend, NotResendable, resend_send
from tests.support.demo import demo_moment
from timers import outbox, transports
from timers.models import Outbox

pytestmark = pytest.mark.django_db


@pytest.fixture
def demo(db, far_end):
    transports.register("email", transports.HttpTransport(far_end.url, timeout=5))  # far_end puts it back
    world = demo_moment("pw")
    client = Client()
    assert client.login(username="olive", password="pw")
    world["client"] = client
    world["far"] = far_end
    world["acme"] = Subject.objects.get(brand=world["brand"], name="Acme Robotics")
    world["item"] = (ClockItem.objects.filter(clock__subject=world["acme"], status="open", item="US")
                     .order_by("due_at").first())
    return world


def _remind(demo) -> Outbox:
    """The owner reminds Ada of the date: one email, its own outbox row."""
    item, client = demo["item"], demo["client"]
    before = set(Outbox.objects.filter(transport="email").values_list("id", flat=True))
    client.post(reverse("admin:owner-settle"), {"kind": "item", "id": str(item.pk), "act": "remind"})
    rows = list(Outbox.objects.filter(transport="email").exclude(id__in=before))
    assert len(rows) == 1, rows
    return rows[0]


def _give_up(row: Outbox, far) -> None:
    """The far end refuses every try until the outbox gives the email up (its tries run out): dead-lettered."""
    far.fail_next = 100
    for _ in range(outbox.MAX_TRIES):
        Outbox.objects.filter(pk=row.pk).update(next_try_at=None)  # its backoff, waited out
        outbox.deliver(row.domain)
    far.fail_next = 0
    row.refresh_from_db()
    assert row.status == "failed" and row.tries == outbox.MAX_TRIES, (row.status, row.tries)
    assert far.received[row.id] == 0


def _tries(row: Outbox) -> list[Outbox]:
    return list(Outbox.objects.filter(domain=row.domain, key=row.key, seq=row.seq).order_by("attempt"))


def _history(demo) -> str:
    return demo["client"].get(reverse("admin:calendars_clockitem_history", args=[quote(demo["item"].pk)])
                              ).content.decode()


def _section(html: str) -> str:
    section = html.split('data-testid="history"', 1)[1].split('class="kt-console-log"', 1)[0]
    section = re.sub(r"<(script|style)\b.*?</\1>", " ", section, flags=re.S)
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", section))


def _resend_forms(html: str) -> list[str]:
    return re.findall(r'<form method="post" action="/[^"]*resend/"[^>]*>.*?</form>', html, flags=re.S)


def test_a_given_up_email_resent_from_the_dates_history_arrives_once(demo):
    far, client = demo["far"], demo["client"]
    row = _remind(demo)
    _give_up(row, far)
    html = _history(demo)
    forms = _resend_forms(html)
    assert len(forms) == 1 and f'value="{row.id}"' in forms[0] and "csrfmiddlewaretoken" in forms[0], forms
    assert "Emailed ada@acme-robotics.example: given up after 5 tries" in _section(html)

    page = client.post(reverse("admin:owner-resend"), {"send": row.id, "next": reverse(
        "admin:calendars_clockitem_history", args=[quote(demo["item"].pk)])}, follow=True)
    said = page.content.decode()
    assert "Resent the email to ada@acme-robotics.example: it is sent again, once." in said, _section(said)
    outbox.deliver(row.domain)
    outbox.deliver(row.domain)
    old, new = _tries(row)
    # Its own attempt, its own submission id: arrived once; the given-up try stands as it was.
    assert (old.id, old.status, old.tries) == (row.id, "failed", outbox.MAX_TRIES)
    assert (new.attempt, new.status, new.payload) == (2, "sent", row.payload)
    assert far.received[new.id] == 1 and far.received[row.id] == 0
    # Its own line on the record; neither try offers a Resend now.
    html = _history(demo)
    section = _section(html)
    assert "Emailed ada@acme-robotics.example: given up after 5 tries" in section
    assert "Emailed ada@acme-robotics.example (try 2): received." in section, section
    assert _resend_forms(html) == []
    assert not runtime_words(section), runtime_words(section)
    # The old try, resent again: refused, nothing leaves.
    with pytest.raises(NotResendable):
        resend_send(send_id=row.id, brands=frozenset({demo["brand"].id}))
    outbox.deliver(row.domain)
    assert sum(far.received[t.id] for t in _tries(row)) == 1


def test_a_sent_email_offers_no_resend(demo):
    far, client = demo["far"], demo["client"]
    row = _remind(demo)
    outbox.deliver(row.domain)
    assert far.received[row.id] == 1
    assert _resend_forms(_history(demo)) == []
    page = client.post(reverse("admin:owner-resend"), {"send": row.id}, follow=True)
    assert "Not resent: the email to ada@acme-robotics.example was sent: there is nothing to resend." in \
        page.content.decode()
    outbox.deliver(row.domain)
    assert [t.id for t in _tries(row)] == [row.id] and far.received[row.id] == 1


def test_an_in_doubt_email_asks_the_far_end_before_it_sends_again(demo):
    """A try that raised after the far end had it (its answer lost): in doubt. The Resend tries it now, and the
    outbox asks the far end first: it had it, so it is recorded, never sent a second time."""
    far, client = demo["far"], demo["client"]
    row = _remind(demo)
    transports.transport("email").send(row.id, row.payload)  # it arrived …
    Outbox.objects.filter(pk=row.pk).update(status="sending", claimed_by="a sender now gone", tries=1,
                                            error="TimeoutError: timed out", lease_until=None,
                                            next_try_at=row.created_at.replace(year=2999))  # … its answer lost
    html = _history(demo)
    assert "in doubt: the far end is asked before it is sent again" in _section(html)
    assert len(_resend_forms(html)) == 1
    page = client.post(reverse("admin:owner-resend"), {"send": row.id}, follow=True)
    outbox.deliver(row.domain)
    outbox.deliver(row.domain)
    assert sum(far.received[t.id] for t in _tries(row)) == 1  # arrived once, whatever the resend did
    row.refresh_from_db()
    assert row.status == "sent" and [t.id for t in _tries(row)] == [row.id]
    assert ("The email to ada@acme-robotics.example is tried again now; it was in doubt, so the far end is asked "
            "first and it is sent only if it never arrived.") in page.content.decode()


def test_a_given_up_email_that_had_arrived_is_not_sent_again(demo):
    far = demo["far"]
    row = _remind(demo)
    _give_up(row, far)
    transports.transport("email").send(row.id, row.payload)  # the far end had it after all
    done = resend_send(send_id=row.id, brands=frozenset({demo["brand"].id}))
    assert done.said == ("The email to ada@acme-robotics.example had arrived after all: the far end has it, so "
                         "nothing was sent again.")
    outbox.deliver(row.domain)
    old, new = _tries(row)
    assert (old.status, new.status, new.receipt["found"]) == ("failed", "sent", row.id)
    assert far.received[row.id] == 1 and far.received[new.id] == 0


class _Mute(transports.HttpTransport):
    """A far end that takes sends but cannot be asked whether one arrived."""

    def lookup(self, submission_id):
        raise ConnectionError("no lookup here")


def test_a_given_up_email_the_far_end_cannot_be_asked_about_is_resent_only_once_confirmed(demo):
    far, client = demo["far"], demo["client"]
    row = _remind(demo)
    _give_up(row, far)
    transports.register("email", _Mute(far.url, timeout=5))
    url = reverse("admin:calendars_clockitem_history", args=[quote(demo["item"].pk)])
    page = client.post(reverse("admin:owner-resend"), {"send": row.id, "next": url}, follow=True)
    html = page.content.decode()
    assert ("Not resent yet: the email to ada@acme-robotics.example may have arrived and the far end cannot be "
            "asked: confirm to send it again.") in html
    assert [t.id for t in _tries(row)] == [row.id]
    forms = _resend_forms(html)
    assert len(forms) == 1 and 'name="confirm" value="1"' in forms[0] and "Send it again anyway" in forms[0]
    with pytest.raises(ConfirmResend):
        resend_send(send_id=row.id, brands=frozenset({demo["brand"].id}))
    page = client.post(reverse("admin:owner-resend"), {"send": row.id, "confirm": "1", "next": url}, follow=True)
    assert "Resent the email to ada@acme-robotics.example: it is sent again, once." in page.content.decode()
    outbox.deliver(row.domain)
    assert sum(far.received[t.id] for t in _tries(row)) == 1


def test_another_brands_owner_cannot_resend(demo):
    row = _remind(demo)
    _give_up(row, demo["far"])
    with pytest.raises(Exception, match="no such send"):
        resend_send(send_id=row.id, brands=frozenset({"br_someone_else"}))
    assert demo["client"].get(reverse("admin:owner-resend")).status_code == 405


def test_the_customers_history_offers_the_same_resend(demo):
    row = _remind(demo)
    _give_up(row, demo["far"])
    url = reverse("admin:calendars_subject_history", args=[quote(demo["acme"].pk)])
    html = demo["client"].get(url).content.decode()
    forms = _resend_forms(html)
    assert len(forms) == 1 and f'value="{row.id}"' in forms[0] and f'value="{url}"' in forms[0], forms
    page = demo["client"].post(reverse("admin:owner-resend"), {"send": row.id, "next": url}, follow=True)
    assert page.redirect_chain[-1][0] == url
    assert "Resent the email to ada@acme-robotics.example: it is sent again, once." in page.content.decode()
    outbox.deliver(row.domain)
    assert sum(demo["far"].received[t.id] for t in _tries(row)) == 1
