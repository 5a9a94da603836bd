"""The customer and delivery portals (issue 10), server side: who may see and act on what, and that each
act goes through the same service function as the API and lands on the record. The browser flows are in
tests/portals/test_browser_portals.py.

Acme (``loadexample apis_tax``) ticked to 2028-04-11 14:00Z: the 2027 return's file dates are a week ahead
(their ``ack daily 7d`` rung asks each day), and the 2026 return's file dates came unsatisfied. api.forsale
(``loadexample api_forsale``) ticked to its deals' opening: each deal's appraisal is an open Task for the
brokers pool (grace, linus).
"""

from __future__ import annotations

import html
import re
from datetime import UTC, datetime, timedelta
from io import StringIO

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.test import Client

from calendars.models import Clock, ClockItem, Subject
from services.models import Subscription, Task
from services.portal_sessions import portal_session_create
from timers.advance import advance
from timers.clock import wall_now
from timers.models import Brand, Event, Membership, Timer
from timers.tenants import brand_get_or_create

ACME_AT = datetime(2028, 4, 11, 14, tzinfo=UTC)


def _load(example: str) -> dict:
    out = StringIO()
    call_command("loadexample", example, stdout=out)
    text = out.getvalue()
    return {"tc": text.split("test clock ")[1].split()[0],
            "subjects": [line.split()[1] for line in text.splitlines() if line.startswith("subject ")],
            "brand": Brand.objects.get(name={"apis_tax": "apis.tax", "api_forsale": "api.forsale"}[example])}


@pytest.fixture
def acme(db):
    ids = _load("apis_tax")
    advance(ids["tc"], ACME_AT)
    ids["subject"] = Subject.objects.get(pk=ids["subjects"][0])
    return ids


def _customer(subject: Subject, *, now=None) -> Client:
    client = Client()
    _, path = portal_session_create(brand=subject.brand, subject=subject, now=now)
    client.get(path)
    return client


def _messages(response) -> list[str]:
    return [html.unescape(re.sub(r"<[^>]+>", "", m)) for m in re.findall(r'<li class="(?:success|error)">(.*?)</li>',
                                                          response.content.decode(), re.S)]


def _text(response) -> str:
    page = response.content.decode().split("<main>", 1)[-1]
    return html.unescape(re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", page)))


# -- the customer portal ----------------------------------------------------------------------------------
def test_a_portal_link_signs_the_customer_in_for_an_hour_and_then_not(acme):
    subject = acme["subject"]
    client = Client()
    _, path = portal_session_create(brand=subject.brand, subject=subject)
    r = client.get(path)
    assert r.status_code == 302 and r.headers["Location"] == "/portal/customer/"
    page = client.get("/portal/customer/")
    assert page.status_code == 200 and "Your dates · Acme Robotics" in _text(page)
    old = Client()
    _, stale = portal_session_create(brand=subject.brand, subject=subject, now=wall_now() - timedelta(hours=1, seconds=1))
    assert old.get(stale).status_code == 403
    assert old.get("/portal/customer/").status_code == 403  # never signed in
    assert Client().get(path.replace(path[-6:], "xxxxxx")).status_code == 403  # a wrong token: the same page
    # A link works once: opened again (a forwarded email, a browser's history), it is the same page.
    again = Client()
    assert again.get(path).status_code == 403 and again.get("/portal/customer/").status_code == 403
    assert client.get("/portal/customer/").status_code == 200  # the first browser stays signed in


def test_the_customer_sees_what_to_do_now_first_then_what_was_missed_then_the_year(acme):
    page = _customer(acme["subject"]).get("/portal/customer/")
    text = _text(page)
    now, rest = text.split("Missed (", 1)
    missed, year = rest.split("The year ahead", 1)
    # To do now: the 2027 return's dates a week ahead, soonest first, with their buttons, said plainly.
    assert now.index("To do now") < now.index("file · the 2027 return · US")
    assert "Tue 18 Apr 2028 23:59 EDT · in 7 days" in now and "you (Ada Lovelace)" in now
    assert "fixed date: can't be extended" in now and "Mark done" in now and "I've seen it" in now
    todo_html = page.content.decode().split('id="todo-h"', 1)[1].split('id="missed-h"', 1)[0]
    assert todo_html.count("Mark done: ") >= 5
    # Missed: the 2026 return's dates, what happens now, the newest first.
    assert "file · the 2026 return · US-CA · missed Mon 15 Nov 2027" in missed
    assert "It is still open: mark it done once it is, or let apis.tax handle it." in missed
    assert missed.index("US-CA") < missed.index("file · the 2026 return · US ·")
    # The year: the month grid, then the list, with the Service's own words said plainly.
    assert "April 2028" in year and "the 2027 return" in year
    assert "carried-forward loss" in year and "carryforward" not in text
    assert "the reply to notice: 0 of 2 used" in text or "notice response: 0 of 2 used" in text
    assert "Get my calendar link" in text


def test_keeping_a_date_with_the_brand_says_which_dates_it_moves_and_can_be_undone(acme):
    subject = acme["subject"]
    client = _customer(subject)
    us = ClockItem.objects.select_related("clock").get(clock__subject=subject, clock__name="file",
                                                       clock__period="2027", item="US")
    open_items = ClockItem.objects.filter(clock=us.clock, status__in=["open", "due"]).count()
    assert open_items > 1
    page = client.get("/portal/customer/").content.decode()
    # The button says the whole clock's dates move, as they do (who answers is the clock's, not one date's).
    assert f"Let apis.tax handle file · the 2027 return ({open_items} dates)" in page
    r = client.post(f"/portal/customer/clocks/{us.clock_id}/US/steward", follow=True)
    # The confirmation names the date acted on, and the clock's other dates that went with it.
    assert _messages(r) == [f"apis.tax handles it now: file · the 2027 return · US, due Tue 18 Apr 2028 and "
                            f"{open_items - 1} more dates of file · the 2027 return."]
    us.clock.refresh_from_db()
    assert us.clock.answers_for == "the brand"
    assert "Undo: take it back" in r.content.decode()
    r = client.post("/portal/customer/undo", follow=True)
    assert _messages(r) == ["Yours again: file · the 2027 return · US, due Tue 18 Apr 2028"]
    us.clock.refresh_from_db()
    assert us.clock.answers_for == "Ada Lovelace"
    assert list(Event.objects.filter(domain=acme["tc"], type="clock.reassigned", subject=us.clock_id)
                .order_by("seq").values_list("data__to", "data__why")) == [
        ("the brand", "the customer handed it to the brand"), ("Ada Lovelace", "the customer took it back")]
    # Nothing left to undo: a second undo changes nothing.
    r = client.post("/portal/customer/undo", follow=True)
    assert _messages(r) == ["There is nothing to undo."]
    assert Event.objects.filter(domain=acme["tc"], type="clock.reassigned", subject=us.clock_id).count() == 2


def test_a_missed_date_handed_to_the_brand_stays_with_it_and_the_page_says_why(acme):
    subject = acme["subject"]
    client = _customer(subject)
    ca = ClockItem.objects.select_related("clock").get(clock__subject=subject, clock__name="file",
                                                       clock__period="2026", item="US-CA")
    r = client.post(f"/portal/customer/clocks/{ca.clock_id}/US-CA/steward", follow=True)
    text = _text(r)
    assert "Undo: take it back" not in r.content.decode()
    assert ("Its date, Mon 15 Nov 2027, has passed, so this can no longer be undone." in text)
    # The undo itself, posted anyway, is refused in words, and the brand keeps the date.
    r = client.post("/portal/customer/undo", follow=True)
    assert _messages(r) == ["That date has passed, so this can no longer be undone."]
    ca.clock.refresh_from_db()
    assert ca.clock.answers_for == "the brand"


def test_the_customer_gets_a_calendar_link_shown_once_that_opens_the_feed(acme):
    subject = acme["subject"]
    client = _customer(subject)
    r = client.post("/portal/customer/calendar-link", follow=True)
    html = r.content.decode()
    webcal = re.search(r'href="(webcal://[^"]+)"', html).group(1)
    https = re.search(r'id="calendar-url" type="text" readonly value="([^"]+)"', html).group(1)
    assert webcal.startswith("webcal://testserver/subjects/") and https == "http://" + webcal[len("webcal://"):]
    feed = Client().get(https.removeprefix("http://testserver").replace("&amp;", "&"))
    assert feed.status_code == 200 and feed["Content-Type"].startswith("text/calendar")
    assert "webcal://" not in client.get("/portal/customer/").content.decode()  # shown once
    # A new link stops the one before.
    client.post("/portal/customer/calendar-link")
    assert Client().get(https.removeprefix("http://testserver").replace("&amp;", "&")).status_code == 404


def test_the_customer_acknowledges_an_ack_rung_and_its_daily_asks_end(acme):
    subject = acme["subject"]
    item = ClockItem.objects.select_related("clock").get(
        clock__subject=subject, clock__name="file", clock__period="2027", item="US")
    armed_before = Timer.objects.filter(domain=acme["tc"], owner=item.owner_key, key__contains=":ack ",
                                        status="armed").count()
    assert armed_before >= 1
    r = _customer(subject).post(f"/portal/customer/clocks/{item.clock_id}/US/acknowledge", follow=True)
    assert _messages(r) == ["Acknowledged: file · the 2027 return · US, due Tue 18 Apr 2028"]
    ev = Event.objects.get(domain=acme["tc"], type="clock.acknowledged", subject=item.owner_key)
    assert ev.data["asks_ended"] == armed_before and ev.data["by"] == "Ada Lovelace"
    assert not Timer.objects.filter(domain=acme["tc"], owner=item.owner_key, key__contains=":ack ",
                                    status="armed").exists()


def _armed(domain: str, owner: str) -> set[tuple[str, datetime]]:
    """An item's armed timers, each as its key without its move (@n, a run's "again n") and when it is owed."""
    return {(re.sub(r"( again \d+|@\d+)$", "", key), owed) for key, owed in Timer.objects.filter(
        domain=domain, owner=owner, status="armed").values_list("key", "owed_at")}


def test_an_acknowledgement_taken_back_asks_again_from_its_next_day(acme):
    subject = acme["subject"]
    item = ClockItem.objects.select_related("clock").get(
        clock__subject=subject, clock__name="file", clock__period="2027", item="US")
    before = _armed(acme["tc"], item.owner_key)
    assert any(":ack " in key for key, _ in before)
    client = _customer(subject)
    r = client.post(f"/portal/customer/clocks/{item.clock_id}/US/acknowledge", follow=True)
    assert "Undo: ask me again" in r.content.decode()
    assert not any(":ack " in key for key, _ in _armed(acme["tc"], item.owner_key))
    r = client.post("/portal/customer/undo", follow=True)
    assert _messages(r) == ["Asking again: file · the 2027 return · US, due Tue 18 Apr 2028"]
    # Its timers are back as they were (the asks from the next day, the reminders and the due ahead), one move
    # on: the acknowledgement stays on the record, and its taking back is a line of its own.
    assert _armed(acme["tc"], item.owner_key) == before
    item.refresh_from_db()
    assert (item.moves, item.reopened, item.moved) == (1, 1, 0)
    assert list(Event.objects.filter(domain=acme["tc"], subject=item.owner_key,
                                     type__in=["clock.acknowledged", "clock.unacknowledged"])
                .order_by("seq").values_list("type", "data__by")) == [
        ("clock.acknowledged", "Ada Lovelace"), ("clock.unacknowledged", "Ada Lovelace")]
    # What the acknowledgement had left armed at the old move is superseded, naming the undo.
    assert not Timer.objects.filter(domain=acme["tc"], owner=item.owner_key, status="armed",
                                    key__endswith="@0").exists()
    # Acknowledged again, it is taken back again; not acknowledged, there is nothing to take back.
    client.post(f"/portal/customer/clocks/{item.clock_id}/US/acknowledge")
    assert not any(":ack " in key for key, _ in _armed(acme["tc"], item.owner_key))
    client.post("/portal/customer/undo")
    assert any(":ack " in key for key, _ in _armed(acme["tc"], item.owner_key))
    from calendars.undo import clock_unacknowledge  # noqa: PLC0415 - the service itself, refused
    from timers.armer import DirectArmer  # noqa: PLC0415 - the service itself, refused
    from timers.errors import KeepingTimeError  # noqa: PLC0415 - the service itself, refused
    with pytest.raises(KeepingTimeError) as refused:
        clock_unacknowledge(armer=DirectArmer(brand=item.clock.brand_id, domain=acme["tc"]), item=item, by="x")
    assert refused.value.code == "not_acknowledged"


def test_a_refusal_shows_on_the_page_and_changes_nothing(acme):
    subject = acme["subject"]
    item = ClockItem.objects.get(clock__subject=subject, clock__name="file", clock__period="2027", item="US")
    events = Event.objects.filter(domain=acme["tc"]).count()
    r = _customer(subject).post(f"/portal/customer/clocks/{item.clock_id}/US/choose", {"option": "extend"},
                                follow=True)
    assert r.status_code == 200 and _messages(r) == [
        "That date hasn't come yet: there is nothing to choose until it does."]
    assert Event.objects.filter(domain=acme["tc"]).count() == events


def test_the_customer_marks_done_cancels_at_the_cycles_end_and_undoes_it(acme):
    subject = acme["subject"]
    client = _customer(subject)
    item = ClockItem.objects.get(clock__subject=subject, clock__name="file", clock__period="2027", item="US-CA")
    before = _armed(acme["tc"], item.owner_key)
    assert before
    r = client.post(f"/portal/customer/clocks/{item.clock_id}/US-CA/done", follow=True)
    assert _messages(r) == ["Marked done: file · the 2027 return · US-CA, due Tue 18 Apr 2028"]
    item.refresh_from_db()
    assert item.status == "satisfied" and not _armed(acme["tc"], item.owner_key)
    # Done, it is listed with its undo until its date passes; undone, it is open with its timers as they were.
    assert "Done (1)" in _text(r) and "Undo: not done yet" in _text(r)
    r = client.post(f"/portal/customer/clocks/{item.clock_id}/US-CA/reopen", follow=True)
    assert _messages(r) == ["Open again: file · the 2027 return · US-CA, due Tue 18 Apr 2028"]
    item.refresh_from_db()
    assert item.status == "open" and item.satisfied_at is None
    assert _armed(acme["tc"], item.owner_key) == before
    assert list(Event.objects.filter(domain=acme["tc"], subject=item.owner_key,
                                     type__in=["clock.satisfied", "clock.reopened"])
                .order_by("seq").values_list("type", flat=True)) == ["clock.satisfied", "clock.reopened"]
    assert "Done (" not in _text(r)
    # Done again; once its date has passed the page says why the undo is gone, and the undo is refused.
    client.post(f"/portal/customer/clocks/{item.clock_id}/US-CA/done")
    advance(acme["tc"], datetime(2028, 4, 20, 14, tzinfo=UTC))
    page = _text(client.get("/portal/customer/"))
    assert "Its date, Tue 18 Apr 2028, has passed, so this can no longer be undone." in page
    assert "Undo: not done yet" not in page
    r = client.post(f"/portal/customer/clocks/{item.clock_id}/US-CA/reopen", follow=True)
    assert _messages(r) == ["That date has passed, so this can no longer be undone."]
    item.refresh_from_db()
    assert item.status == "satisfied"
    sub = Subscription.objects.get(subject=subject)
    client.post(f"/portal/customer/subscriptions/{sub.id}/cancel")
    sub.refresh_from_db()
    assert sub.cancel_at_period_end
    assert "ends at the end of this cycle" in _text(client.get("/portal/customer/"))
    client.post(f"/portal/customer/subscriptions/{sub.id}/undo")
    sub.refresh_from_db()
    assert not sub.cancel_at_period_end
    assert sorted(Event.objects.filter(domain=acme["tc"], subject=sub.id, type__startswith="subscription.cancel")
                  .values_list("type", flat=True)) == ["subscription.cancel_scheduled", "subscription.cancel_undone"]


def test_a_customer_link_opens_nothing_of_another_subject_or_brand(acme):
    subject = acme["subject"]
    other_brand = brand_get_or_create(name="globex")
    other = Subject.objects.create(id="sbj_globex00001", brand=other_brand, domain=acme["tc"], kind="taxpayer",
                                   key_name="ein", key="99-0000000", name="Globex", calendar=subject.calendar,
                                   created_at=ACME_AT)
    client = _customer(other)
    item = ClockItem.objects.get(clock__subject=subject, clock__name="file", clock__period="2027", item="US")
    sub = Subscription.objects.get(subject=subject)
    for url in (f"/portal/customer/clocks/{item.clock_id}/US/done",
                f"/portal/customer/subscriptions/{sub.id}/cancel"):
        assert client.post(url).status_code == 404
    item.refresh_from_db()
    sub.refresh_from_db()
    assert item.status == "open" and not sub.cancel_at_period_end
    assert "Acme" not in _text(client.get("/portal/customer/"))


def test_a_customer_acts_only_on_their_own_clocks(acme):
    subject = acme["subject"]
    clock = Clock.objects.get(subject=subject, name="file", period="2027")
    Clock.objects.filter(pk=clock.pk).update(answers_for="the brand", role="brand", contact=None)
    r = _customer(subject).post(f"/portal/customer/clocks/{clock.id}/US/done")
    assert r.status_code == 404
    assert ClockItem.objects.get(clock=clock, item="US").status == "open"


def test_keeping_a_date_with_the_steward_hands_the_clock_to_the_brand(acme):
    subject = acme["subject"]
    clock = Clock.objects.get(subject=subject, name="file", period="2027")
    _customer(subject).post(f"/portal/customer/clocks/{clock.id}/US/steward")
    clock.refresh_from_db()
    assert clock.answers_for == "the brand"
    ev = Event.objects.get(domain=acme["tc"], type="clock.reassigned", subject=clock.id)
    assert (ev.data["from"], ev.data["to"]) == ("Ada Lovelace", "the brand")


# -- the delivery portal ----------------------------------------------------------------------------------
@pytest.fixture
def forsale(db):
    ids = _load("api_forsale")
    advance(ids["tc"], datetime(2027, 10, 20, 14, 30, tzinfo=UTC))
    for name in ("grace", "linus"):
        user = get_user_model().objects.get(username=name)
        user.set_password("pw")
        user.save()
    return ids


def _member(name: str) -> Client:
    client = Client()
    assert client.login(username=name, password="pw")
    return client


def test_a_member_signs_in_takes_a_task_extends_once_and_is_refused_the_second_time(forsale):
    assert Client().get("/portal/delivery/").status_code == 302  # signed out: to the sign-in page
    grace = _member("grace")
    page = grace.get("/portal/delivery/")
    tasks = re.findall(r'data-task="(\w+)"', page.content.decode())
    assert len(tasks) == 2 and "Open in your pools" in _text(page)
    task = tasks[0]
    # Each confirmation names the work and its date, in the member's zone.
    took = _messages(grace.post(f"/portal/delivery/tasks/{task}/take", follow=True))
    assert len(took) == 1 and re.fullmatch(r"You hold it now: appraise · \S+ \S+ for .+, due \w{3} \d{1,2} \w{3} "
                                           r"\d{4}, \d\d:\d\d P[DS]T", took[0]), took
    assert "a hold extends once per Task" not in _text(grace.get("/portal/delivery/"))
    r = grace.post(f"/portal/delivery/tasks/{task}/extend", follow=True)
    assert _messages(r) == [took[0].replace("You hold it now", "Your hold is extended (once)")]
    # Extend is gone, and the page says why where it was.
    assert "Extend my hold" not in _text(r) and "Extended once: a hold extends once per Task." in _text(r)
    refused = _messages(grace.post(f"/portal/delivery/tasks/{task}/extend", follow=True))
    assert refused == ["You have already extended this hold once; it can be extended only once."]
    t = Task.objects.get(pk=task)
    assert t.hold_until == datetime(2027, 10, 24, 14, 30, tzinfo=UTC) and t.extended
    assert Event.objects.filter(domain=forsale["tc"], type="task.hold_extended").count() == 1


def test_a_member_never_acts_on_another_members_task_or_another_brand(forsale):
    grace, linus = _member("grace"), _member("linus")
    task = re.findall(r'data-task="(\w+)"', grace.get("/portal/delivery/").content.decode())[0]
    grace.post(f"/portal/delivery/tasks/{task}/take")
    for act in ("extend", "release", "done", "take"):
        assert linus.post(f"/portal/delivery/tasks/{task}/{act}").status_code == 404
    assert task not in linus.get("/portal/delivery/").content.decode()
    # A member of another brand sees none of it.
    other = get_user_model().objects.create_user("mallory", password="pw")
    Membership.objects.create(user=other, brand=brand_get_or_create(name="globex"), role="member")
    mallory = _member("mallory")
    assert "data-task" not in mallory.get("/portal/delivery/").content.decode()
    assert mallory.post(f"/portal/delivery/tasks/{task}/done").status_code == 404
    t = Task.objects.get(pk=task)
    assert t.status == "taken" and t.member.username == "grace"


def test_a_member_marks_a_task_done_and_the_job_moves_on(forsale):
    grace = _member("grace")
    task = re.findall(r'data-task="(\w+)"', grace.get("/portal/delivery/").content.decode())[0]
    grace.post(f"/portal/delivery/tasks/{task}/take", follow=True)
    done = _messages(grace.post(f"/portal/delivery/tasks/{task}/done", follow=True))
    assert len(done) == 1 and done[0].startswith("Done: appraise · ") and ", due " in done[0]
    job = Task.objects.get(pk=task).job
    job.refresh_from_db()
    assert job.step == "offer"


def test_a_member_withdraws_from_a_subject_and_its_clocks_go_to_the_successor(acme):
    brand = acme["brand"]
    ada = get_user_model().objects.create_user("ada", password="pw")
    member = Membership.objects.create(user=ada, brand=brand, role="member", name="Ada Lovelace")
    # The owner assigned her the dates the customer's officer answered for.
    Clock.objects.filter(subject=acme["subject"], answers_for="Ada Lovelace").update(
        member=member, contact=None, assigned=True)
    bob = get_user_model().objects.create_user("bob", password="pw")
    Membership.objects.create(user=bob, brand=brand, role="member", name="Bob Noyce")
    client = _member("ada")
    mine = Clock.objects.filter(subject=acme["subject"], answers_for="Ada Lovelace").count()
    assert mine and "Dates you answer for" in _text(client.get("/portal/delivery/"))
    r = client.post(f"/portal/delivery/subjects/{acme['subject'].id}/withdraw", {"successor": "bob"}, follow=True)
    assert _messages(r) == ["Bob Noyce answers for Acme Robotics's dates now."]
    assert Clock.objects.filter(subject=acme["subject"], answers_for="Bob Noyce").count() == mine
    assert Event.objects.filter(type="clock.reassigned", data__to="Bob Noyce").count() == mine


def test_a_members_dates_on_a_test_clock_show_its_badge_and_an_act_names_its_date(acme):
    brand = acme["brand"]
    ada = get_user_model().objects.create_user("ada", password="pw")
    member = Membership.objects.create(user=ada, brand=brand, role="member", name="Ada Lovelace")
    Clock.objects.filter(subject=acme["subject"], answers_for="Ada Lovelace").update(
        member=member, contact=None, assigned=True)
    client = _member("ada")
    page = client.get("/portal/delivery/").content.decode()
    # Her dates are all on the test run (no Task, no window): the page still says it is a test run.
    assert 'class="test-clock">a test run:' in page
    item = ClockItem.objects.get(clock__subject=acme["subject"], clock__name="file", clock__period="2027", item="US")
    r = client.post(f"/portal/delivery/clocks/{item.clock_id}/US/done", follow=True)
    assert _messages(r) == ["Marked done: file · the 2027 return · US for Acme Robotics, due Tue 18 Apr 2028"]
    # The record names her by her membership's name, never her username; so does the date's history.
    assert Event.objects.get(type="clock.satisfied", subject=item.owner_key).data["who"] == "Ada Lovelace"
    said = _text(client.get(f"/portal/delivery/clocks/{item.clock_id}/US/history"))
    assert "Ada Lovelace marked file · the 2027 return · US done." in said, said[-800:]
    # Her undo, until the date passes: the date is open again, on the record as its own line.
    assert "Undo: not done yet: file · the 2027 return · US" in r.content.decode()
    before_ack = _armed(acme["tc"], item.owner_key)
    r = client.post(f"/portal/delivery/clocks/{item.clock_id}/US/reopen", follow=True)
    assert _messages(r) == ["Open again: file · the 2027 return · US for Acme Robotics, due Tue 18 Apr 2028"]
    item.refresh_from_db()
    assert item.status == "open" and Event.objects.filter(type="clock.reopened", subject=item.owner_key).exists()
    assert any(":ack " in key for key, _ in _armed(acme["tc"], item.owner_key)) and not before_ack
    r = client.post(f"/portal/delivery/clocks/{item.clock_id}/US/acknowledge", follow=True)
    assert _messages(r) == ["Acknowledged: file · the 2027 return · US for Acme Robotics, due Tue 18 Apr 2028"]
    assert "Undo: ask me again: file · the 2027 return · US" in r.content.decode()
    r = client.post(f"/portal/delivery/clocks/{item.clock_id}/US/unacknowledge", follow=True)
    assert _messages(r) == ["Asking again: file · the 2027 return · US for Acme Robotics, due Tue 18 Apr 2028"]
    assert any(":ack " in key for key, _ in _armed(acme["tc"], item.owner_key))


def test_a_standby_window_opens_and_closes_from_the_portal(forsale):
    linus = _member("linus")
    r = linus.post("/portal/delivery/window/open", {"hours": "8", "test_clock": forsale["tc"]}, follow=True)
    assert _messages(r) == ["On standby for 8 h."]
    assert "On standby until Wed 20 Oct 2027, 15:30 PDT" in _text(r)  # in the member's zone
    r = linus.post("/portal/delivery/window/open", {"hours": "8", "test_clock": "tc_someoneelses"})
    assert r.status_code == 404


# -- the API's side -----------------------------------------------------------------------------------
def test_portal_sessions_over_http_and_a_json_body_without_its_type_is_415(live_server, transactional_db):
    from tests.support.api import Client as API
    from timers import tenants

    ids = _load("apis_tax")
    _, secret = tenants.api_key_create(brand=ids["brand"])
    api = API(live_server.url, secret)
    r = api.post("/portal_sessions", {"subject": ids["subjects"][0]})
    assert r.status == 200 and r.body["url"].startswith(f"{live_server.url}/portal/customer/session?token=")
    browser = Client()
    assert browser.get(r.body["url"].removeprefix(live_server.url)).status_code == 302
    assert api.post("/portal_sessions", {"subject": "sbj_nope"}).status == 404
    raw = api.call("POST", "/portal_sessions", raw=b'{"subject": "x"}', headers={"Content-Type": "text/plain"})
    assert (raw.status, raw.body["error"]["code"]) == (415, "unsupported_media_type")
    listed = api.get("/subscriptions").body  # a test key without test_clock: the live clock's, which has none
    assert listed["data"] == [] and f"{ids['tc']} (1)" in listed["note"]


def test_the_admins_static_files_are_served(db, settings):
    settings.DEBUG = False
    r = Client().get("/static/admin/css/base.css")
    assert r.status_code == 200 and b"body" in b"".join(r.streaming_content if r.streaming else [r.content])


def test_timers_list_says_which_test_clocks_hold_an_owners_timers(db):
    ids = _load("apis_tax")
    sub = Subscription.objects.get(domain=ids["tc"])
    out = StringIO()
    call_command("timers", "list", "--on", sub.id, stdout=out)
    assert out.getvalue().splitlines()[-1] == (f"none on the live clock; test clocks hold some: {ids['tc']} (5) "
                                               "(--test-clock tc_…)")


def test_a_member_chooses_their_zone_and_the_portal_says_times_in_it(forsale):
    client = _member("grace")
    # The header names the zone, never today's abbreviation (PST in winter while a row's date says PDT).
    header = re.search(r'<p class="meta">(.*?)</p>', client.get("/portal/delivery/").content.decode(), re.S).group(1)
    assert "times in America/Los_Angeles, each with its own date's offset" in header
    assert not re.search(r"\b(PST|PDT)\b", header), header
    r = client.post("/portal/delivery/zone", {"zone": "Europe/Berlin"}, follow=True)
    assert _messages(r) == ["Times show in Europe/Berlin now."]
    text = _text(r)
    assert "times in Europe/Berlin" in text and " CEST " in text and " PDT " not in text
    assert Membership.objects.get(user__username="grace").zone == "Europe/Berlin"
    r = client.post("/portal/delivery/zone", {"zone": "Mars/Olympus"}, follow=True)
    assert _messages(r) == ["Choose a time zone from the list."]
    assert Membership.objects.get(user__username="grace").zone == "Europe/Berlin"  # nothing lost
    client.post("/portal/delivery/zone", {"zone": ""})
    assert "times in America/Los_Angeles" in _text(client.get("/portal/delivery/"))
