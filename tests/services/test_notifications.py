"""Lapses are never silent (issue 9): each lapse is a Notification row per recipient, and one email each,
sent through the outbox exactly once: not twice on a redelivered wake, never from a rolled-back compare way.

Each goes to a person record at its address: Acme's officer Ada (its primary contact) and the brand's owner.
Acme's 2026 tax `pay` clock is hard and due 2027-04-15 (so is 2027's first estimate); the example never
pays them, so both pass unsatisfied at the close of that day (2027-04-16 04:00Z). The 2026 return's `file`
clock (soft) comes unsatisfied on 2027-10-15 (US, NY).
"""

from __future__ import annotations

import re
from datetime import UTC, datetime
from io import StringIO

import pytest
from django.contrib.auth import get_user_model
from django.core import mail
from django.core.management import call_command
from django.db import IntegrityError, connection, transaction

from calendars.answers import Person
from services.models import Notification
from services.notifications import notify
from tests.conftest import T0, at
from timers import outbox, transports
from timers.advance import advance
from timers.engine import TIMER_FIELDS, Item, Run
from timers.errors import Refused
from timers.models import Event, Membership, Outbox, Timer
from timers.store import get_store
from timers.tenants import brand_get_or_create

ADA = "ada@acme-robotics.example"  # Acme's officer, its primary contact (loadexample apis_tax)
OWNER = "owner@apis.tax"  # the brand's owner, a member with an account
PEOPLE = {"Ada Lovelace": ADA, "Olive Owner": OWNER}
LAPSES = ("clock.passed", "clock.due")
PASSED = datetime(2027, 4, 17, tzinfo=UTC)  # after 2027-Q1's pay date passed unsatisfied (2026's was kept)
CAME_DUE = datetime(2027, 10, 17, tzinfo=UTC)  # after the 2026 return's federal and NY file dates came


@pytest.fixture
def people(settings, brand):
    """Emails go through the outbox's Django transport; the owner of apis.tax is Olive, at her address."""
    settings.KEEPING_TIME = {**settings.KEEPING_TIME,
                             "TRANSPORTS": {**settings.KEEPING_TIME["TRANSPORTS"], "email": "django-email"}}
    transports.registry.pop("email", None)
    for name in ("apis.tax", brand.name):
        owner = get_user_model().objects.get_or_create(username=f"olive-{name}", defaults={"email": OWNER})[0]
        Membership.objects.get_or_create(user=owner, brand=brand_get_or_create(name=name),
                                         defaults={"role": "owner", "name": "Olive Owner"})
    yield PEOPLE
    transports.registry.pop("email", None)


def load_acme() -> str:
    out = StringIO()
    call_command("loadexample", "apis_tax", stdout=out)
    return out.getvalue().split("test clock ")[1].split()[0]


def _heard(tc: str, kinds=LAPSES) -> list[tuple[str, str, str]]:
    return sorted(Notification.objects.filter(domain=tc, kind__in=kinds).values_list("kind", "subject", "recipient"))


def _mails(kinds=("A date was missed", "A fixed date was missed")) -> list:
    return [m for m in mail.outbox if any(k in m.subject for k in kinds)]


def _emails() -> list[tuple[str, str]]:
    return sorted((m.to[0], m.extra_headers["Message-ID"]) for m in _mails())


def test_a_hard_date_passed_notifies_who_answers_and_the_owner_with_one_email_each(db, people):
    tc = load_acme()
    advance(tc, PASSED)
    passed = list(Event.objects.filter(domain=tc, type="clock.passed").order_by("seq"))
    assert len(passed) == 1  # the 2027 first estimate, due 2027-04-15 (the 2026 tax was kept with the extension)
    assert all(e.data["hears"] == ["Ada Lovelace", "owner"] for e in passed)  # who hears it, on the record
    heard = _heard(tc)
    assert heard == sorted(("clock.passed", e.subject, who) for e in passed for who in ("Ada Lovelace", "Olive Owner"))
    n = Notification.objects.filter(domain=tc, kind="clock.passed", recipient="Ada Lovelace").get()
    assert ":due:" in n.key  # the due timer that raised it
    assert n.created_at == at("2027-04-16T04:00Z") and n.read_at is None and n.user is None
    assert n.contact.name == "Ada Lovelace" and n.email == ADA  # a person record, at that record's address
    owner = Notification.objects.get(domain=tc, kind="clock.passed", recipient="Olive Owner")
    assert owner.user.email == OWNER and owner.contact is None
    # One email per notification, each with its own Message-ID, and nothing owed.
    lapsed = _mails()
    assert len(lapsed) == len(heard) == 2
    assert sorted(m.to[0] for m in lapsed) == sorted([ADA, OWNER])
    assert len({m.extra_headers["Message-ID"] for m in lapsed}) == 2
    assert all("passed without being done" in m.body and "[apis.tax]" in m.subject for m in lapsed)
    # A notice says its date as people do, never the runtime's words.
    assert all("Apr 2027" in m.body for m in lapsed)
    assert all("gate" not in m.body and "unsatisfied" not in m.body for m in mail.outbox)
    assert all("clock." not in m.subject for m in mail.outbox)
    assert outbox.owed(tc) == {"pending": 0, "sending": 0, "in_doubt": 0}
    # Every email that left, the notices' too, is one Notification row's: none sent without one.
    assert len(mail.outbox) == Notification.objects.filter(domain=tc).exclude(email="").count()

    # Later, a soft date that comes unsatisfied (clock.due) is heard by the same two.
    advance(tc, CAME_DUE)
    due = list(Event.objects.filter(domain=tc, type="clock.due"))
    assert len(due) == 2
    assert [h for h in _heard(tc) if h[0] == "clock.due"] == sorted(
        ("clock.due", e.subject, who) for e in due for who in ("Ada Lovelace", "Olive Owner"))
    lapses = Event.objects.filter(domain=tc, type__in=list(LAPSES)).count()  # Q2, Q3 pay passed too
    assert len(_mails()) == Notification.objects.filter(domain=tc, kind__in=LAPSES).count() == 2 * lapses == 10


def test_the_notices_before_a_date_email_who_answers_and_the_owner(db, people):
    tc = load_acme()
    advance(tc, PASSED)
    notices = list(Event.objects.filter(domain=tc, type__in=["clock.notice", "clock.escalate"]).order_by("seq"))
    assert notices
    heard = _heard(tc, kinds=("clock.notice", "clock.escalate"))
    assert heard == sorted((e.type, e.subject, who) for e in notices for who in ("Ada Lovelace", "Olive Owner"))
    soon = _mails(("A date is coming up", "A date is close"))
    assert sorted(m.to[0] for m in soon) == sorted([ADA, OWNER] * len(notices))
    assert all(re.search(r"is due (Mon|Tue|Wed|Thu|Fri) \d{1,2} [A-Z][a-z]{2} \d{4}, (in \d+ days|today|tomorrow)",
                         m.body) for m in soon), [m.body for m in soon]


def test_a_batch_writes_its_notifications_once_however_often_it_asks_who_heard(db, people, monkeypatch):
    """The batch asks who has heard a lapse once for what it holds and again for what it armed since; those
    reads do not send its kept notifications first, so they go in one INSERT a batch, not one a read."""
    import psycopg
    from django.test.utils import CaptureQueriesContext

    raw: list[str] = []  # the set writes on PostgreSQL leave on psycopg cursors of their own, past Django's log
    real_execute = psycopg.Cursor.execute

    def execute(self, query, *args, **kwargs):
        raw.append(str(query))
        return real_execute(self, query, *args, **kwargs)

    tc = load_acme()
    monkeypatch.setattr(psycopg.Cursor, "execute", execute)
    with CaptureQueriesContext(connection) as seen:
        stats = advance(tc, CAME_DUE)
    sql = [q["sql"] for q in seen.captured_queries] + raw
    asks = [q for q in sql if q.lstrip().upper().startswith("SELECT") and "services_notification" in q]
    inserts = [q for q in sql if re.match(r'\s*INSERT\s+INTO\s+"?services_notification"?', q, re.I)]
    assert len(asks) >= 2  # the batch asked more than once (else this test could not tell)
    assert Notification.objects.filter(domain=tc).count() > len(inserts)
    assert 1 <= len(inserts) <= stats.batches, (len(asks), len(inserts), stats.batches)


def test_a_person_without_an_address_is_notified_without_an_email(db, people):
    Membership.objects.filter(name="Olive Owner").update(user=get_user_model().objects.create(username="noemail"))
    tc = load_acme()
    advance(tc, PASSED)
    assert Notification.objects.filter(domain=tc, kind="clock.passed", recipient="Olive Owner", email="").count() == 1
    assert sorted(m.to[0] for m in _mails()) == [ADA]


def test_a_brand_with_no_owner_of_record_still_has_the_row_for_the_console(db):
    tc = load_acme()
    advance(tc, PASSED)
    rows = Notification.objects.filter(domain=tc, kind="clock.passed")
    assert sorted(rows.values_list("recipient", "email")) == [("Ada Lovelace", ADA), ("owner", "")]


def test_every_wake_delivered_twice_still_one_notification_and_one_email_each(db, people):
    tc = load_acme()
    stats = advance(tc, PASSED, redeliver=True)
    assert stats.replayed == stats.fired + stats.refused > 0
    assert len(_heard(tc)) == 2
    assert len(_mails()) == 2 and len(set(_emails())) == 2
    # The notices too: one email per row, however many times each wake came.
    assert len(mail.outbox) == Notification.objects.filter(domain=tc).exclude(email="").count()
    assert len({m.extra_headers["Message-ID"] for m in mail.outbox}) == len(mail.outbox)


def test_compare_ways_roll_back_their_notifications_and_send_no_email(db, people):
    tc = load_acme()
    out = StringIO()
    call_command("tick", "--to", "2027-04-17T00:00Z", "--compare", "--redeliver", "--test-clock", tc, stdout=out)
    assert "all 4 agree" in out.getvalue()
    assert mail.outbox == []  # each way's sends went to a far end of its own
    assert not Notification.objects.filter(domain=tc).exists()  # and its rows rolled back with it
    advance(tc, PASSED)
    assert len(_heard(tc)) == 2 and len(_mails()) == 2


def test_the_unique_constraint_holds_at_the_database(db, brand):
    # A raw insert, past the ORM: the database itself refuses a second (domain, key, recipient, kind).
    sql = ('INSERT INTO services_notification (id, brand_id, domain, recipient, kind, subject, "key", message, '
           "email, created_at) VALUES (%s, %s, 'tc_x', 'owner', 'clock.passed', 'clk_1#US', 'clk_1#US:due:pay:2026', "
           "'m', '', %s)")
    with connection.cursor() as cur:
        cur.execute(sql, ["ntf_1", brand.id, T0])
        cur.execute(sql.replace("'owner'", "'Ada Lovelace'"), ["ntf_2", brand.id, T0])  # another recipient: fine
        with pytest.raises(IntegrityError), transaction.atomic():
            cur.execute(sql, ["ntf_3", brand.id, T0])


# -- notify(), as a future job.lapsed (a link expired twice) will call it from its handler ------------------
ADA_PERSON = Person("Ada Lovelace", ADA)


def _lapse(f):
    notify(f, kind="job.lapsed", subject="job_1", recipients=[ADA_PERSON, "owner"],
           message="job_1 lapsed: the link expired twice")


def test_notify_from_a_firing_is_part_of_its_proposal(arm, clock, handler, people):
    handler("test.lapse", _lapse, atomic=True)
    timer = arm("job_1:deadline:late:2027", "2026-11-25T14:00Z", handler="test.lapse")
    advance(clock.id, at("2026-11-26T00:00Z"))
    assert _heard(clock.id, kinds=("job.lapsed",)) == [("job.lapsed", "job_1", "Ada Lovelace"),
                                                       ("job.lapsed", "job_1", "Olive Owner")]
    assert {n.key for n in Notification.objects.filter(domain=clock.id)} == {timer.key}
    assert sorted(m.to[0] for m in mail.outbox) == sorted(PEOPLE.values())
    assert Outbox.objects.filter(domain=clock.id, transport="email").count() == 1  # one submission per firing

    # The gate lets the same wake through again (as if its commit's constraint were gone): the handler
    # runs again, and the notifications' constraint still notifies no one twice.
    row = Timer.objects.filter(pk=timer.id).values_list(*TIMER_FIELDS).get()
    item = Item(**dict(zip(TIMER_FIELDS, row, strict=True)))
    with transaction.atomic():
        Run(domain=clock.id, floor=item.fired_at, to=item.fired_at, store=get_store()).refire([item])
    outbox.deliver(clock.id)
    assert Notification.objects.filter(domain=clock.id).count() == 2
    assert len(mail.outbox) == 2


def test_a_refused_firing_notifies_no_one(arm, clock, handler, people):
    def lapse_then_refused(f):
        _lapse(f)
        raise Refused("date_passed", "refused after proposing")

    handler("test.lapse", lapse_then_refused, atomic=True)
    arm("job_1:deadline:late:2027", "2026-11-25T14:00Z", handler="test.lapse")
    advance(clock.id, at("2026-11-26T00:00Z"))
    assert Event.objects.filter(domain=clock.id, type="gate.refused").count() == 1
    assert not Notification.objects.filter(domain=clock.id).exists()
    assert mail.outbox == []


# -- the email transport: a claim's emails in one mail session, their receipts read as one set -----------------
def test_a_claims_emails_share_one_mail_session_and_one_read_of_their_receipts(db, brand, people, monkeypatch):
    from django.core.mail.backends import locmem
    from django.test.utils import CaptureQueriesContext

    for i in range(6):
        Outbox.objects.create(id=f"sub_many{i}", domain="tc_many", brand=brand, key=f"job_{i}:deadline:late:2027",
                              attempt=1, transport="email", created_at=T0, payload={"messages": [
                                  {"to": [f"p{i}@example.com"], "subject": "s", "body": "b", "ref": f"ntf_{i}"}]})
    opened: list[object] = []  # each mail connection made (an SMTP session, for the SMTP backend)
    real_init = locmem.EmailBackend.__init__

    def counting_init(self, *args, **kwargs):
        opened.append(self)
        real_init(self, *args, **kwargs)

    monkeypatch.setattr(locmem.EmailBackend, "__init__", counting_init)
    with CaptureQueriesContext(connection) as seen:
        stats = outbox.deliver("tc_many")
    assert stats.sent == 6 and len(mail.outbox) == 6
    assert len(opened) == 1  # one session for the claim's six emails, not one an email
    receipt_reads = [q["sql"] for q in seen.captured_queries
                     if q["sql"].lstrip().upper().startswith("SELECT") and "receipt" in q["sql"]]
    assert len(receipt_reads) == 1, receipt_reads  # the claim's receipts in one read, not one a send
    notes = [q["sql"] for q in seen.captured_queries if re.search(r'^\s*UPDATE\s+"?timers_outbox"?\s+SET\s+"?receipt"?\s*=',
                                                                  q["sql"], re.I)]
    assert len(notes) == 6  # and each email's receipt written on its own, before the next leaves
    assert {r.receipt["messages"][0] for r in Outbox.objects.filter(domain="tc_many")} == {f"ntf_{i}" for i in range(6)}


# -- the email transport: in doubt -----------------------------------------------------------------------
def test_an_email_submission_cut_short_resends_only_what_did_not_leave(db, brand, people, monkeypatch):
    from django.core.mail import EmailMessage

    Outbox.objects.create(id="sub_mail1", domain="tc_mail", brand=brand, key="job_1:deadline:late:2027",
                          attempt=1, transport="email", created_at=T0, payload={"messages": [
                              {"to": ["a@example.com"], "subject": "one", "body": "1", "ref": "ntf_a"},
                              {"to": ["b@example.com"], "subject": "two", "body": "2", "ref": "ntf_b"}]})
    real, calls = EmailMessage.send, []

    def flaky(self, *args, **kwargs):
        calls.append(self.to[0])
        if len(calls) == 2:
            raise OSError("connection reset by the SMTP server")
        return real(self, *args, **kwargs)

    monkeypatch.setattr(EmailMessage, "send", flaky)
    stats = outbox.deliver("tc_mail")
    assert stats.in_doubt == 1 and [m.to[0] for m in mail.outbox] == ["a@example.com"]
    row = Outbox.objects.get(pk="sub_mail1")
    assert row.receipt == {"messages": ["ntf_a"]}  # what left is on the row before the next message is tried

    Outbox.objects.filter(pk="sub_mail1").update(next_try_at=None)  # past its backoff
    stats = outbox.deliver("tc_mail")
    assert stats.sent == 1
    assert [m.to[0] for m in mail.outbox] == ["a@example.com", "b@example.com"]  # a not sent twice
    assert [m.extra_headers["Message-ID"] for m in mail.outbox] == ["<sub_mail1.0@localhost>",
                                                                    "<sub_mail1.1@localhost>"]

    # A sender killed after the last message left but before the row said sent: in doubt, and settled by
    # its receipt without sending again.
    Outbox.objects.filter(pk="sub_mail1").update(status="sending", claimed_by="os:gone:1", lease_until=None)
    stats = outbox.deliver("tc_mail")
    assert stats.confirmed == 1 and len(mail.outbox) == 2
