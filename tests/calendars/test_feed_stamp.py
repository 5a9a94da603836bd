"""The feed's change stamp (calendars/feed_stamp.py): a conditional request is answered without building
the feed, a 200 at an unchanged stamp comes from the cache, and whatever the feed shows changes its ETag.

The guarantee is checked against a body built afresh each time (never the served one, which may come from
the cache): whenever the fresh body differs from the last, the ETag differs too, and the served body is the
fresh body."""

from __future__ import annotations

from datetime import timedelta
from email.utils import format_datetime, parsedate_to_datetime
from io import BytesIO, StringIO
from urllib.parse import urlencode

import pytest
from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.handlers.wsgi import WSGIHandler
from django.core.management import call_command
from django.core.signals import request_finished, request_started
from django.db import close_old_connections, connection
from django.test.utils import CaptureQueriesContext, override_settings

from calendars import entries, feed
from calendars import feed_stamp as stamps
from calendars.clocks import clock_move, clock_satisfy
from calendars.entries import subject_calendar
from calendars.feed_tokens import subject_feed_rotate
from calendars.models import Calendar, Clock, ClockItem, ClosedDay, FeedStamp, Subject
from keeping_time import wsgi as kt_wsgi
from services.models import Ask, Grant, Job, Subscription, Task
from services.subscriptions import subscription_create
from tests.conftest import at
from tests.support.acme import acme_subject, open_return
from timers import transports
from timers.advance import advance
from timers.armer import DirectArmer
from timers.clock import wall_now
from timers.models import Brand, Event, TestClock, Timer
from timers.test_clocks import test_clock_create

pytestmark = pytest.mark.django_db


@pytest.fixture
def acme(brand):
    """Acme on a test clock with the 2027 return's clocks and a Tax Plan: both providers list dates."""
    transports.register("notices", transports.RecordingTransport())
    tc = test_clock_create(brand=brand, frozen_time=at("2027-06-01T12:00Z"), name="acme")
    subject = acme_subject(brand, tc.id)
    file, pay = open_return(brand, tc, subject)
    sub = subscription_create(brand=brand, domain=tc.id, subject=subject, service="tax-plan",
                              input={"entity": "C corp", "states": ["CA", "NY", "NJ"]}, now=tc.frozen_time)
    return tc, subject, file, pay, sub, subject_feed_rotate(subject=subject)


def get(client, subject, token, **headers):
    return client.get(f"/subjects/{subject.id}/calendar.ics", {"token": token}, **headers)


def fresh(subject_id: str) -> bytes:
    """The body as the feed would build it now, from the database, past every cache."""
    subject = Subject.objects.select_related("calendar").get(pk=subject_id)
    return feed.build_ics(subject_calendar(subject, everything=True))


class Watch:
    """Each step: the served body is the fresh one, and a changed body has a changed ETag."""

    def __init__(self, client, subject, token):
        self.client, self.subject, self.token = client, subject, token
        self.tag, self.body = self.look()

    def look(self) -> tuple[str, bytes]:
        r = get(self.client, self.subject, self.token)
        assert r.status_code == 200, r.content
        body = fresh(self.subject.id)
        assert r.content == body, "the feed served a body other than the one its data builds"
        return r["ETag"], body

    def step(self, what: str, *, shows: bool = True) -> None:
        before_tag, before_body = self.tag, self.body
        self.tag, self.body = self.look()
        if shows:  # the step changes what the feed shows (else the test would prove nothing about it)
            assert self.body != before_body, f"{what}: the feed does not show it"
        if self.body != before_body:
            assert self.tag != before_tag, f"{what}: the feed changed and its ETag did not"
            # A calendar app holding the old ETag gets the new body.
            r = get(self.client, self.subject, self.token, HTTP_IF_NONE_MATCH=before_tag)
            assert r.status_code == 200 and r.content == self.body, what
        r = get(self.client, self.subject, self.token, HTTP_IF_NONE_MATCH=self.tag)
        assert r.status_code == 304 and r["ETag"] == self.tag, what


def raw(sql: str, params: list) -> None:
    """A write as the engine makes it (timers/store.py): a raw statement, no save(), no signal."""
    with connection.cursor() as cursor:
        cursor.execute(sql, params)


def item(clock: Clock, name: str) -> ClockItem:
    return ClockItem.objects.select_related("clock", "clock__subject").get(clock=clock, item=name)


def test_whatever_the_feed_shows_changes_its_etag(client, brand, acme):
    tc, subject, file, pay, sub, token = acme
    w = Watch(client, subject, token)
    armer = DirectArmer(brand=brand, domain=tc.id)

    clock_satisfy(armer=armer, item=item(file, "US-NY"), by="test")
    w.step("a date kept")
    clock_move(armer=armer, item=item(file, "US-CA"), civil=at("2028-10-16T00:00Z").date(), by="test")
    w.step("a date moved (its rungs re-armed, its sequence counted)")
    Clock.objects.filter(pk=file.pk).update(title="file the {period} return (amended)")
    w.step("a clock's title")
    Clock.objects.filter(pk=pay.pk).update(answers_for="Grace Hopper")
    w.step("who answers for a clock")
    nj = item(file, "US-NJ")
    ClockItem.objects.filter(pk=nj.pk).update(
        due_date=nj.civil + timedelta(days=1),
        rolled_why=f"{nj.civil.isoformat()}: Acme closed (a closed day)")
    w.step("a date rolled past a closed day, and why")
    ClosedDay.objects.create(calendar=subject.calendar, date=at("2028-07-03T00:00Z").date(), why="the office")
    w.step("a closed day on the calendar", shows=False)
    Calendar.objects.filter(pk=subject.calendar_id).update(zone="America/Chicago")
    w.subject = Subject.objects.get(pk=subject.pk)
    w.step("the calendar's zone")
    Subject.objects.filter(pk=subject.pk).update(name="Acme Robotics, Inc.")
    w.step("the subject's name")

    # The engine's raw statements on timers: a rung superseded, an alarm retimed, an ack's day.
    us = item(file, "US").owner_key
    notice = Timer.objects.get(domain=tc.id, key=f"{us}:rung:notice 30d:2027@0")
    raw("UPDATE timers_timer SET status = 'superseded', owed_at = NULL WHERE id = %s", [notice.id])
    w.step("a rung superseded by a raw statement")
    notice = Timer.objects.get(domain=tc.id, key=f"{us}:rung:notice 90d:2027@0")
    raw("UPDATE timers_timer SET owed_at = owed_at + interval '1 hour' WHERE id = %s"
        if connection.vendor == "postgresql" else
        "UPDATE timers_timer SET owed_at = datetime(owed_at, '+1 hour') WHERE id = %s", [notice.id])
    w.step("an alarm retimed by a raw statement")
    ack = Timer.objects.filter(domain=tc.id, owner=us, key__contains=":rung:ack daily").first()
    raw("UPDATE timers_timer SET data = %s WHERE id = %s", ['{"day": 2, "days": 9}', ack.id])
    w.step("an ack's day, in its timer's data")

    # The tick fires a rung: the record says what it did.
    advance(tc.id, at("2028-01-20T00:00Z"))
    w.step("a test clock advance past a notice (and the plan's mint)")
    fired = Timer.objects.filter(domain=tc.id, owner=us, kind="rung", status="fired").first()
    Event.objects.create(domain=tc.id, brand=brand, type="clock.rung_ran", subject=us, key=fired.key,
                         data={"step": "extend", "outcome": "moved"}, fired_at=tc.frozen_time)
    w.step("the record's row under a fired rung's key")
    ny = item(file, "US-NY")
    Event.objects.create(domain=tc.id, brand=brand, type="clock.satisfied", subject=ny.owner_key,
                         data={"with": "the extension"}, fired_at=tc.frozen_time)
    w.step("how a kept date was kept, on the record")

    # The domain's today: a date's status ("ahead" → "due today") with nothing fired.
    clock = TestClock.objects.get(pk=tc.pk)
    TestClock.objects.filter(pk=tc.pk).update(frozen_time=clock.frozen_time + timedelta(hours=1))
    w.step("the test clock's time within its day", shows=False)
    assert w.tag == get(client, subject, token).get("ETag")
    due = item(pay, "US").due_at
    TestClock.objects.filter(pk=tc.pk).update(frozen_time=due - timedelta(hours=2))
    w.step("the test clock's day")

    # The services' dates: a renewal that ends, a renewal retimed.
    Subscription.objects.filter(pk=sub.pk).update(cancel_at_period_end=True)
    w.step("a subscription cancelled at the cycle's end")
    cycle = Timer.objects.filter(domain=tc.id, owner=sub.id, kind="cycle", status="armed").first()
    raw("UPDATE timers_timer SET owed_at = %s WHERE id = %s", [cycle.owed_at + timedelta(days=2), cycle.id])
    w.step("a renewal retimed")


def test_an_unchanged_feed_is_a_304_without_building_it(client, acme, monkeypatch):
    _, subject, _, _, _, token = acme
    first = get(client, subject, token)
    assert first.status_code == 200
    tag, last_modified = first["ETag"], first["Last-Modified"]

    def no_building(*args, **kwargs):
        raise AssertionError("the feed was built")

    monkeypatch.setattr("calendars.api.subject_calendar", no_building)
    monkeypatch.setattr("calendars.feed.build_ics", no_building)
    for headers in ({"HTTP_IF_NONE_MATCH": tag}, {"HTTP_IF_NONE_MATCH": f'"nope", W/{tag}'},
                    {"HTTP_IF_MODIFIED_SINCE": last_modified}):
        with CaptureQueriesContext(connection) as queries:
            r = get(client, subject, token, **headers)
        assert r.status_code == 304 and r.content == b"", headers
        assert r["ETag"] == tag and r["Last-Modified"] == last_modified
        assert r["Cache-Control"] == "private, no-cache"
        if connection.vendor == "postgresql":
            # The token's lookup and the stamp, in one statement (feed_stamp.probe): nothing loaded first.
            assert len(queries) == 1, [q["sql"][:120] for q in queries]
    # A 200 at the same stamp comes from the cache, byte for byte.
    again = get(client, subject, token)
    assert again.status_code == 200 and again.content == first.content and again["ETag"] == tag
    head = client.head(f"/subjects/{subject.id}/calendar.ics", {"token": token}, HTTP_IF_NONE_MATCH=tag)
    assert head.status_code == 304


def test_if_modified_since_never_matches_a_newer_stamp(client, acme):
    """Last-Modified is when the feed first served its stamp; a newer stamp is seen a second or more later,
    so a client's If-Modified-Since never matches it, even when the data comes back as it was."""
    _, subject, file, _, _, token = acme
    first = get(client, subject, token)
    since = first["Last-Modified"]
    row = FeedStamp.objects.get(subject=subject)
    assert format_datetime(row.seen_at.replace(microsecond=0), usegmt=True) == since
    title = file.title
    Clock.objects.filter(pk=file.pk).update(title="changed")
    changed = get(client, subject, token, HTTP_IF_MODIFIED_SINCE=since)
    assert changed.status_code == 200 and changed["ETag"] != first["ETag"]
    Clock.objects.filter(pk=file.pk).update(title=title)  # back as it was: the first stamp again
    back = get(client, subject, token, HTTP_IF_MODIFIED_SINCE=since)
    assert back.status_code == 200 and back["ETag"] == first["ETag"]
    seen = FeedStamp.objects.get(subject=subject).seen_at
    assert seen >= row.seen_at + timedelta(seconds=2)
    # Last-Modified is never later than the response: a stamp seen "in the next second" has none yet.
    assert "Last-Modified" not in back or parsedate_to_datetime(back["Last-Modified"]) <= wall_now()
    # If-None-Match wins over If-Modified-Since (RFC 9110 13.1.3).
    r = get(client, subject, token, HTTP_IF_NONE_MATCH='"nope"',
            HTTP_IF_MODIFIED_SINCE="Fri, 01 Jan 2100 00:00:00 GMT")
    assert r.status_code == 200


def test_a_provider_that_does_not_say_what_it_reads_is_built_every_time(client, acme):
    _, subject, _, _, _, token = acme
    calls = []

    def listed(subject_, domain, from_date):
        calls.append(domain)
        return []

    entries.register(listed)
    try:
        assert stamps.feed_stamp(subject) is None
        r = get(client, subject, token)
        assert r.status_code == 200 and r["ETag"] == feed.etag(r.content) and "Last-Modified" not in r
        assert get(client, subject, token, HTTP_IF_NONE_MATCH=r["ETag"]).status_code == 304
        assert len(calls) == 2  # each request built the calendar
    finally:
        entries.unregister(listed)
    assert stamps.feed_stamp(subject) is not None


def test_the_stamp_and_the_cache_can_be_turned_off(client, acme, settings, monkeypatch):
    _, subject, _, _, _, token = acme
    stamped = get(client, subject, token)
    settings.KEEPING_TIME = {**settings.KEEPING_TIME, "FEED_STAMP": False}
    before = get(client, subject, token)  # as the feed was before the stamp: the body's hash
    assert before["ETag"] == feed.etag(before.content) and before.content == stamped.content
    assert get(client, subject, token, HTTP_IF_NONE_MATCH=before["ETag"]).status_code == 304
    settings.KEEPING_TIME = {**settings.KEEPING_TIME, "FEED_STAMP": True, "FEED_CACHE": ""}
    built = []
    real = feed.build_ics
    monkeypatch.setattr("calendars.feed.build_ics", lambda sc: built.append(1) or real(sc))
    assert get(client, subject, token).content == stamped.content
    assert get(client, subject, token).content == stamped.content
    assert len(built) == 2  # no cache: each 200 builds


@pytest.fixture
def deal(db):
    """api.forsale's deal B on 4 November 2027: a registrar grant running, the transfer Task due, the deal's
    deadline and its at-risk time ahead (services/people_dates.py lists them)."""
    transports.register("notices", transports.RecordingTransport())
    call_command("loadexample", "api_forsale", "--reset", stdout=StringIO())
    tc = TestClock.objects.get(seed="api_forsale")
    advance(tc.id, at("2027-11-04T00:00Z"))
    subject = Subject.objects.select_related("calendar").get(domain=tc.id, key="beta.example")
    return tc, subject, subject_feed_rotate(subject=subject)


def test_the_people_dates_change_the_feeds_etag(client, deal):
    """Whatever people_dates reads (links, grants, Tasks, jobs' deadlines and their at-risk timers) and the
    names the feed says (the brand's, the test clock's) change the stamp when they change the feed."""
    tc, subject, token = deal
    w = Watch(client, subject, token)
    job = Job.objects.get(subject=subject)
    grant = Grant.objects.get(job=job)
    Grant.objects.filter(pk=grant.pk).update(ends_at=grant.ends_at + timedelta(days=1))
    w.step("a grant's end")
    Grant.objects.filter(pk=grant.pk).update(status="ended")
    w.step("a grant ended")
    task = Task.objects.get(job=job, step="transfer")
    Task.objects.filter(pk=task.pk).update(due_at=task.due_at + timedelta(hours=3))
    w.step("a Task's due date")
    member = get_user_model().objects.get(username="grace")
    Task.objects.filter(pk=task.pk).update(status="taken", member=member, takes=1, taken_at=tc.frozen_time,
                                           hold_until=tc.frozen_time + timedelta(days=2))
    w.step("a Task taken: its hold's end")
    Task.objects.filter(pk=task.pk).update(hold_until=tc.frozen_time + timedelta(days=3), extensions=1)
    w.step("a hold extended")
    ask = Ask.objects.filter(job=job).first()
    Ask.objects.filter(pk=ask.pk).update(status="open", link=2, expires_at=tc.frozen_time + timedelta(days=2))
    w.step("a link open again")
    Ask.objects.filter(pk=ask.pk).update(status="expired")
    w.step("a link expired")
    Job.objects.filter(pk=job.pk).update(late_at=job.late_at + timedelta(days=1))
    w.step("a job's deadline")
    Job.objects.filter(pk=job.pk).update(late=True)
    w.step("a job late")
    risk = Timer.objects.get(domain=tc.id, owner=job.id, key__contains=":deadline:at_risk:")
    raw("UPDATE timers_timer SET owed_at = %s WHERE id = %s", [risk.owed_at + timedelta(hours=5), risk.id])
    w.step("the at-risk time, retimed by a raw statement")
    Brand.objects.filter(pk=subject.brand_id).update(name="api.forsale, Inc.")
    w.step("the brand's name (the calendar's name, who answers)")
    TestClock.objects.filter(pk=tc.pk).update(name="the deals")
    w.step("the test clock's name")


@pytest.mark.skipif(connection.vendor != "postgresql", reason="the probe is PostgreSQL's one statement")
def test_a_polling_calendar_app_costs_one_statement_and_loads_nothing(client, brand, acme, monkeypatch, settings,
                                                                       django_assert_max_num_queries):
    """A 304, and a 200 whose body is in the cache, are the probe's one statement: the token's lookup and the
    stamp together, before any subject is loaded or the feed built. Its stamp is the ordinary path's, on a
    test clock with a calendar and on the live clock without one (a shape the probe guesses wrong once)."""
    _, subject, _, _, _, token = acme
    live = Subject.objects.create(brand=brand, kind="person", key_name="email", key="ada@example.com",
                                  name="Ada", created_at=at("2026-01-01T00:00Z"))
    live_token = subject_feed_rotate(subject=live)
    tags, bodies = {}, {}
    for s, t in ((subject, token), (live, live_token)):
        first = get(client, s, t)
        assert first.status_code == 200 and first.content == fresh(s.id)
        tags[s.id], bodies[s.id] = first["ETag"], first.content
        assert stamps.probe(subject_id=s.id, digest=s.feed_digest).stamp == stamps.feed_stamp(s)

    def not_loaded(*args, **kwargs):
        raise AssertionError("the subject was loaded")

    monkeypatch.setattr("calendars.api.subject_by_feed_token", not_loaded)
    monkeypatch.setattr("calendars.feed.build_ics", not_loaded)
    for s, t in ((subject, token), (live, live_token), (subject, token)):
        with django_assert_max_num_queries(1):
            assert get(client, s, t, HTTP_IF_NONE_MATCH=tags[s.id]).status_code == 304
        with django_assert_max_num_queries(1):
            r = get(client, s, t)
        assert r.status_code == 200 and r["ETag"] == tags[s.id] and r.content == bodies[s.id]
    # A wrong token is no probe's answer: the ordinary path says 404.
    monkeypatch.undo()
    assert get(client, subject, "wrong", HTTP_IF_NONE_MATCH=tags[subject.id]).status_code == 404
    # Unprepared (behind a pooler in transaction mode), the same statement binds on the client.
    settings.KEEPING_TIME = {**settings.KEEPING_TIME, "FEED_PREPARE": False}
    assert stamps.probe(subject_id=subject.id, digest=subject.feed_digest).stamp.etag == tags[subject.id]


def call_wsgi(app, subject_id: str, token: str, *, method: str = "GET", **headers) -> tuple[str, list, bytes]:
    """A request to a WSGI application as gunicorn makes it: its status line, its headers in order, its body.
    The request signals leave the test's connection open, as Django's test client does."""
    environ = {"REQUEST_METHOD": method, "PATH_INFO": f"/subjects/{subject_id}/calendar.ics",
               "QUERY_STRING": urlencode({"token": token}), "SCRIPT_NAME": "", "SERVER_NAME": "testserver",
               "SERVER_PORT": "80", "SERVER_PROTOCOL": "HTTP/1.1", "HTTP_HOST": "testserver",
               "REMOTE_ADDR": "127.0.0.1", "wsgi.url_scheme": "http", "wsgi.input": BytesIO(),
               "wsgi.errors": StringIO(), **headers}
    started = {}
    request_started.disconnect(close_old_connections)
    request_finished.disconnect(close_old_connections)
    try:
        response = app(environ, lambda status, headers, exc_info=None: started.update(status=status, headers=headers))
        body = b"".join(response)
        response.close()
    finally:
        request_started.connect(close_old_connections)
        request_finished.connect(close_old_connections)
    return started["status"], started["headers"], body


def test_the_wsgi_layer_answers_a_poll_as_django_does(acme, monkeypatch):
    """keeping_time/wsgi.py answers a poll (a 304, a 200 from the cache) before Django's stack, with the same
    status, headers (in order) and body as Django gives it; anything else it passes to Django untouched."""
    _, subject, _, _, _, token = acme
    passed: list[str] = []

    def django(environ, start_response):
        passed.append(environ["REQUEST_METHOD"])
        return kt_wsgi.django_application(environ, start_response)

    layer = kt_wsgi.FeedPolls(django)
    status, headers, body = call_wsgi(kt_wsgi.django_application, subject.id, token)  # the stamp's first serve
    assert status == "200 OK" and body == fresh(subject.id)
    tag, since = dict(headers)["ETag"], dict(headers)["Last-Modified"]
    polls = ({}, {"HTTP_IF_NONE_MATCH": tag}, {"HTTP_IF_NONE_MATCH": f'"nope", W/{tag}'},
             {"HTTP_IF_MODIFIED_SINCE": since}, {"HTTP_IF_NONE_MATCH": '"nope"', "HTTP_IF_MODIFIED_SINCE": since})
    for headers in polls:
        expected = call_wsgi(kt_wsgi.django_application, subject.id, token, **headers)
        assert expected[0] in ("200 OK", "304 Not Modified"), headers
        assert call_wsgi(layer, subject.id, token, **headers) == expected, headers
    # On PostgreSQL the probe answered each poll in front of Django; elsewhere there is no probe.
    assert passed == ([] if connection.vendor == "postgresql" else ["GET"] * len(polls))

    passed.clear()
    unusual = (("a wrong token", "wrong", "GET", {"HTTP_IF_NONE_MATCH": tag}),
               ("a HEAD", token, "HEAD", {"HTTP_IF_NONE_MATCH": tag}),
               ("a cookie", token, "GET", {"HTTP_IF_NONE_MATCH": tag, "HTTP_COOKIE": "sessionid=x"}),
               ("a host not allowed", token, "GET", {"HTTP_IF_NONE_MATCH": tag, "HTTP_HOST": "evil.example"}))
    for what, t, method, headers in unusual:
        expected = call_wsgi(kt_wsgi.django_application, subject.id, t, method=method, **headers)
        assert call_wsgi(layer, subject.id, t, method=method, **headers) == expected, what
    assert passed == ["GET", "HEAD", "GET", "GET"]  # each one Django's to answer
    with override_settings(MIDDLEWARE=[*settings.MIDDLEWARE, "tests.support.acme.SomeMiddleware"]):
        unknown = kt_wsgi.FeedPolls(django)  # a middleware the layer cannot answer for: Django answers all
    assert call_wsgi(unknown, subject.id, token, HTTP_IF_NONE_MATCH=tag)[0] == "304 Not Modified"
    with override_settings(SECURE_SSL_REDIRECT=True):  # plain http: Django's security middleware redirects it
        handler = WSGIHandler()
        secure = kt_wsgi.FeedPolls(lambda environ, start: passed.append("redirect") or handler(environ, start))
        assert call_wsgi(secure, subject.id, token, HTTP_IF_NONE_MATCH=tag)[0].startswith("301")
    assert passed[4:] == ["GET", "redirect"]
    # A feed whose stamp changed: the first serve of the new stamp (its Last-Modified) is Django's.
    passed.clear()
    Subject.objects.filter(pk=subject.pk).update(name="Acme Robotics, Inc.")
    status, _, body = call_wsgi(layer, subject.id, token, HTTP_IF_NONE_MATCH=tag)
    assert status == "200 OK" and body == fresh(subject.id) and passed == ["GET"]


@pytest.mark.postgresql("the stamp's one statement and hash_record_extended are PostgreSQL's")
def test_a_column_whose_equality_forgets_its_text_is_digested_by_its_text(brand):
    """A row is hashed by its columns' own hash functions only when each type's hash covers its whole text:
    jsonb's 1 and 1.0 are equal (and hash alike) yet print differently, so an input selecting a jsonb column
    is hashed by its row's text, and the digest sees the change."""
    tc = test_clock_create(brand=brand, frozen_time=at("2027-06-01T12:00Z"), name="digest")
    event = Event.objects.create(domain=tc.id, brand=brand, type="clock.rung_ran", subject="clk_x", key="k",
                                 data={"n": 1}, fired_at=tc.frozen_time)
    rows = Event.objects.filter(pk=event.pk).order_by().values_list("seq", "data")
    typed = Event.objects.filter(pk=event.pk).order_by().values_list("seq", "type", "fired_at")
    assert not stamps._hashes_whole(rows) and stamps._hashes_whole(typed)

    def digest() -> str:
        sql, params = stamps._rows_digest(rows)
        with connection.cursor() as cursor:
            cursor.execute(f"SELECT {sql}", params)
            return cursor.fetchone()[0]

    before = digest()
    raw("""UPDATE timers_event SET data = '{"n": 1.0}' WHERE seq = %s""", [event.seq])
    assert digest() != before
