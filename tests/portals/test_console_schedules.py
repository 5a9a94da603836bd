"""The console's Schedules act (issue 40): pause with a note and resume, run now, change (with the revision the page
read: a change made meanwhile is refused and nothing is kept), backfill (how many start, already ran, skipped) and
delete (a confirm page; the page stays readable, without buttons), each through the service function the API
calls, so the record gets what the API's act writes. A refusal is an error on its field; another brand's schedule
is not found; a plan's own schedule is changed on its subscription, never here."""

from __future__ import annotations

import re
from datetime import UTC, datetime

import pytest
from django.contrib.admin.utils import quote
from django.contrib.auth import get_user_model
from django.test import Client
from django.urls import reverse

from calendars.brand_calendars import calendar_create
from calendars.models import Subject
from calendars.words import runtime_words
from portals.owner.schedule_forms import when_words
from services import registry
from services.subscriptions import subscription_create
from tests.conftest import admin_url
from tests.support.owners import owner
from timers.models import Event, Schedule, Timer
from timers.schedule_changes import schedule_update
from timers.schedules import next_fire_at, schedule_create
from timers.tenants import brand_get_or_create
from timers.test_clocks import test_clock_create

pytestmark = pytest.mark.django_db

T0 = datetime(2027, 1, 20, 14, 0, tzinfo=UTC)  # Wednesday, 09:00 in New York
HOOK = {"url": "http://127.0.0.1:9/hook"}  # never called here: nothing advances the clock



@pytest.fixture
def shop(client):
    brand = brand_get_or_create(name="apis.tax")
    calendar_create(brand=brand, name="New York office", zone="America/New_York", now=T0)
    clock = test_clock_create(brand=brand, frozen_time=T0, name="trial")
    sch = schedule_create(brand=brand, domain=clock.id, spec={"cron": "0 9 * * *"}, zone="America/New_York",
                          name="nightly-report", target=HOOK)
    client.force_login(owner(brand, "ada"))
    return {"brand": brand, "clock": clock, "sch": sch}


def url(name: str, sch: Schedule, *args) -> str:
    return reverse(f"admin:timers_schedule_{name}", args=[quote(sch.pk), *args])  # as the admin quotes an id


def types(sch: Schedule) -> list[str]:
    return list(Event.objects.filter(subject=sch.id).order_by("seq").values_list("type", flat=True))


def change_data(sch: Schedule, **over) -> dict:
    """The change form as the page fills it (what the schedule is now), with ``over`` typed in."""
    data = {"revision": sch.revision, "name": sch.name, "cron": sch.spec.get("cron", ""), "every": "", "phase": "",
            "zone": sch.zone, "overlap": sch.overlap, "buffer_limit": sch.buffer_limit, "catchup_window": "365d",
            "start_at": "", "end_at": "", "remaining_actions": "", "skip": "", "jitter": "", "calendar": "",
            "closed_days": "skip"}
    return {**data, **over}


def visible(html: str) -> str:
    """The page's own words (its content, not the console's header and links), as a reader sees them."""
    html = html.split('id="content"', 1)[1].split("</main>", 1)[0]
    html = re.sub(r"<(script|style)\b.*?</\1>", " ", html, flags=re.S)
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", html))


def messages_of(response) -> list[str]:
    return [str(m) for m in response.context["messages"]] if response.context else []


def test_the_page_says_when_in_the_brands_zone_and_offers_the_acts(client, shop):
    page = client.get(admin_url(shop["sch"])).content.decode()
    text = visible(page)
    assert "Thu 21 Jan 2027, 09:00 EST" in text  # the next run, in the brand's zone
    assert "at 09:00 every day · America/New_York" in text and "catch-up window: 365 days" in text
    assert "UTC" not in text and not runtime_words(text), runtime_words(text)
    assert "tick" not in text.lower() and "minted" not in text
    for act in ("Change", "Pause", "Run now", "Backfill", "Delete"):
        assert f">{act}<" in page
    listing = client.get(reverse("admin:timers_schedule_changelist")).content.decode()
    assert "nightly-report" in listing and "Thu 21 Jan 2027, 09:00 EST" in listing


def test_the_list_says_when_a_schedule_runs_in_words_not_its_spec(client, shop):
    schedule_create(brand=shop["brand"], domain=shop["clock"].id, spec={"every": "30m", "phase": "5m"}, name="sync",
                    target=HOOK)
    listing = visible(client.get(reverse("admin:timers_schedule_changelist")).content.decode())
    assert "at 09:00 every day · America/New_York" in listing
    assert "every 30 minutes, offset 5 minutes" in listing
    assert "0 9 * * *" not in listing and "30m" not in listing


@pytest.mark.parametrize(("spec", "said"), [
    ({"cron": "0 9 * * 1-5"}, "at 09:00 on Monday through Friday"),
    ({"cron": "*/15 * * * *"}, "every 15th minute of every hour"),
    ({"cron": "not a cron"}, "cron not a cron"),  # a spec stored before the grammar was checked, as written
    ({"every": "1h", "phase": "0m"}, "every hour"),
    ({"every": "2w", "phase": "1d"}, "every 2 weeks, offset 1 day"),
    ({"every": "90s"}, "every 90 seconds"),
    ({"each": "tax_year", "at": "15d before end", "time": "06:30"}, "each tax year, 15 days before its end, at 06:30"),
    ({"each": "month", "at": "1mo after start"}, "each month, 1 month after its start"),
])
def test_when_words(spec, said):
    assert when_words(spec) == said


def test_a_change_is_a_new_revision_and_the_next_run_moves(client, shop):
    sch = shop["sch"]
    form = client.get(url("edit", sch)).content.decode()
    assert 'name="revision" value="1"' in form and 'value="0 9 * * *"' in form
    r = client.post(url("edit", sch), change_data(sch, cron="30 10 * * *", skip="2027-12-25\r\n0 9 * * 0"),
                    follow=True)
    assert r.redirect_chain[-1][0] == admin_url(sch)
    sch.refresh_from_db()
    assert sch.revision == 2 and sch.spec == {"cron": "30 10 * * *"} and sch.skip == ["2027-12-25", "0 9 * * 0"]
    # 10:30 in New York today (EST): 15:30Z, no longer tomorrow's 09:00.
    assert next_fire_at(sch) == datetime(2027, 1, 20, 15, 30, tzinfo=UTC)
    updated = Event.objects.get(subject=sch.id, type="schedule.updated")
    assert updated.data["changed"] == {"spec": {"cron": "30 10 * * *"}, "skip": ["2027-12-25", "0 9 * * 0"]}
    said = " ".join(messages_of(r))
    assert "Nightly-report changed (when it runs, skips)" in said and "Wed 20 Jan 2027, 10:30 EST" in said
    # Start and end are read in the brand's zone, as the page shows them.
    client.post(url("edit", sch), change_data(sch, cron="30 10 * * *", skip="2027-12-25\n0 9 * * 0",
                                              end_at="2027-02-01T00:00:00"))
    sch.refresh_from_db()
    assert sch.revision == 3 and sch.end_at == datetime(2027, 2, 1, 5, 0, tzinfo=UTC)


def test_a_stale_revision_is_refused_and_nothing_changes(client, shop):
    sch = shop["sch"]
    stale = change_data(sch, cron="0 7 * * *")  # the page as read at revision 1
    schedule_update(schedule=sch, zone="Europe/London")  # meanwhile, over the API: revision 2
    r = client.post(url("edit", sch), stale)
    assert r.status_code == 200
    assert any("changed since you opened this page" in m for m in messages_of(r))
    sch.refresh_from_db()
    assert sch.revision == 2 and sch.spec == {"cron": "0 9 * * *"} and sch.zone == "Europe/London"
    assert types(sch).count("schedule.updated") == 1
    # The form is shown again as the schedule is now, at its new revision.
    assert 'name="revision" value="2"' in r.content.decode() and 'value="Europe/London"' in r.content.decode()


@pytest.mark.parametrize(("over", "field", "code"), [
    ({"cron": "61 * * * *"}, "cron", "invalid_spec"),
    ({"cron": "", "every": "1mo"}, "every", "invalid_spec"),
    ({"cron": "*/30 * * * *"}, "cron", "quota_exceeded"),  # with the shortest period raised to 1h, below
    ({"cron": "", "every": "30m"}, "every", "quota_exceeded"),
    ({"zone": "Mars/Olympus"}, "zone", "invalid_zone"),
    ({"name": "Nightly Report"}, "name", "invalid_name"),
    ({"catchup_window": "2s"}, "catchup_window", "invalid_catchup_window"),
    ({"buffer_limit": "0"}, "buffer_limit", "invalid_buffer_limit"),
    ({"skip": "not a rule"}, "skip", "invalid_skip"),
    ({"jitter": "5 minutes"}, "jitter", "invalid_jitter"),
    ({"remaining_actions": "-1"}, "remaining_actions", "invalid_remaining_actions"),
])
def test_a_refusal_is_said_on_its_field_and_nothing_is_kept(client, shop, settings, over, field, code):
    sch = shop["sch"]
    if code == "quota_exceeded":  # the shortest period a schedule may have, raised for this test
        settings.KEEPING_TIME = {**settings.KEEPING_TIME, "QUOTAS": {**settings.KEEPING_TIME.get("QUOTAS", {}),
                                                                     "schedule_period": "1h"}}
    r = client.post(url("edit", sch), change_data(sch, **over))
    page = r.content.decode()
    assert r.status_code == 200
    errors = page.split(f'id="id_{field}_error"', 1)
    assert len(errors) == 2 and code in errors[1].split("</ul>", 1)[0], visible(page)
    sch.refresh_from_db()
    assert sch.revision == 1 and "schedule.updated" not in types(sch)


def test_pause_with_a_note_resume_and_run_now(client, shop):
    sch = shop["sch"]
    assert client.get(url("act", sch, "resume")).status_code == 302  # a GET does nothing
    r = client.post(url("pause", sch), {"note": "endpoint moving"}, follow=True)
    sch.refresh_from_db()
    assert sch.paused and sch.pause_note == "endpoint moving"
    assert "Nightly-report is paused" in " ".join(messages_of(r))
    page = client.get(admin_url(sch)).content.decode()
    assert ">Resume<" in page and ">Pause<" not in page and "endpoint moving" in page
    r = client.post(url("pause", sch), {"note": "again"}, follow=True)
    assert "It is paused already" in " ".join(messages_of(r)) and sch.pause_note == "endpoint moving"
    r = client.post(url("act", sch, "resume"), follow=True)
    sch.refresh_from_db()
    assert not sch.paused and "resumed" in " ".join(messages_of(r))
    r = client.post(url("act", sch, "run-now"), follow=True)
    assert "runs when the test clock next moves" in " ".join(messages_of(r))
    assert Timer.objects.filter(domain=sch.domain, owner=sch.id, key__contains=":schedule:trigger:").count() == 1
    r = client.post(url("act", sch, "run-now"), follow=True)  # the same instant: one run
    assert "Not done." in " ".join(messages_of(r))
    assert types(sch) == ["schedule.created", "schedule.paused", "schedule.resumed"]
    assert Event.objects.get(subject=sch.id, type="schedule.paused").data == {"note": "endpoint moving"}


def test_backfill_answers_how_many_start_already_ran_and_were_skipped(client, shop):
    sch = shop["sch"]
    schedule_update(schedule=sch, spec={"every": "1h"}, skip=["0 6 * * *"])  # 06:00 New York is skipped
    # 03:00 to 09:00 in New York: 08:00Z to 14:00Z, seven hours, one of them skipped.
    span = {"start": "2027-01-20T03:00:00", "end": "2027-01-20T09:00:00", "overlap": "allow"}
    r = client.post(url("backfill", sch), span, follow=True)
    said = " ".join(messages_of(r))
    assert ("from Wed 20 Jan 2027, 03:00 EST to Wed 20 Jan 2027, 09:00 EST: 6 runs start when the test clock "
            "next moves, 0 already ran, 1 skipped by its rules") in said, said
    backfilled = Event.objects.get(subject=sch.id, type="schedule.backfilled")
    assert backfilled.data == {"start": "2027-01-20T08:00:00Z", "end": "2027-01-20T14:00:00Z", "overlap": "allow",
                               "fires": 6, "already_run": 0, "skipped": 1}
    r = client.post(url("backfill", sch), span, follow=True)
    assert "0 runs to start, 6 already ran, 1 skipped" in " ".join(messages_of(r))
    # A buffer policy on a schedule that does not buffer: refused on the field, nothing asked for.
    r = client.post(url("backfill", sch), {**span, "overlap": "buffer_one"})
    assert r.status_code == 200 and "schedule_not_buffering" in r.content.decode()
    assert Event.objects.filter(subject=sch.id, type="schedule.backfilled").count() == 2


def test_delete_asks_first_then_the_page_stays_readable_without_buttons(client, shop):
    sch = shop["sch"]
    confirm = client.get(url("delete", sch))
    assert confirm.status_code == 200 and "Delete the schedule" in confirm.content.decode()
    sch.refresh_from_db()
    assert sch.deleted_at is None
    r = client.post(url("delete", sch), follow=True)
    sch.refresh_from_db()
    assert sch.deleted_at == T0 and "schedule.deleted" in types(sch)
    assert "Nightly-report is deleted: nothing runs after it." in " ".join(messages_of(r))
    page = client.get(admin_url(sch)).content.decode()
    assert "Deleted Wed 20 Jan 2027, 09:00 EST" in page
    for act in (">Change<", ">Run now<", ">Pause<", ">Backfill<", ">Delete<"):
        assert act not in page
    # Its acts' pages refuse it, and nothing is kept.
    r = client.post(url("edit", sch), change_data(sch, cron="0 7 * * *"), follow=True)
    assert "That schedule was deleted" in " ".join(messages_of(r))
    r = client.post(url("act", sch, "run-now"), follow=True)
    assert "That schedule was deleted" in " ".join(messages_of(r))
    sch.refresh_from_db()
    assert sch.revision == 1 and types(sch) == ["schedule.created", "schedule.deleted"]


def test_another_brands_schedule_is_not_found(client, shop):
    other = brand_get_or_create(name="globex")
    theirs = schedule_create(brand=other, domain=test_clock_create(brand=other, frozen_time=T0).id,
                             spec={"every": "1h"}, name="theirs", target=HOOK)
    for name, args in (("edit", ()), ("backfill", ()), ("pause", ()), ("delete", ()), ("act", ("run-now",)),
                       ("act", ("resume",))):
        assert client.post(url(name, theirs, *args), {"note": "x"}).status_code == 404, name
    assert client.get(admin_url(theirs)).status_code == 302  # the admin's "not found": back to the index
    assert "theirs" not in client.get(reverse("admin:timers_schedule_changelist")).content.decode()
    theirs.refresh_from_db()
    assert not theirs.paused and theirs.deleted_at is None and types(theirs) == ["schedule.created"]


def test_the_acts_take_the_pages_csrf_token(shop):
    browser = Client(enforce_csrf_checks=True)
    browser.force_login(get_user_model().objects.get(username="ada"))
    assert browser.post(url("act", shop["sch"], "run-now")).status_code == 403
    assert browser.post(url("delete", shop["sch"])).status_code == 403
    assert not Timer.objects.filter(owner=shop["sch"].id, key__contains=":trigger:").exists()
    assert Schedule.objects.get(pk=shop["sch"].pk).deleted_at is None


def test_a_plans_schedule_is_changed_on_its_subscription_never_here(client, shop):
    registry.load(["tests.support.svc_fixtures"])
    clock, brand = shop["clock"], shop["brand"]
    cal = calendar_create(brand=brand, name="Customer", zone="America/New_York", now=T0)
    subject = Subject.objects.create(brand=brand, domain=clock.id, kind="account", key_name="domain",
                                     key="acme.example", name="Acme", calendar=cal, created_at=T0)
    sub = subscription_create(brand=brand, domain=clock.id, subject=subject, service="t-monthly")
    plans = Schedule.objects.get(domain=clock.id, owner_ref=f"{sub.id}:job")
    page = client.get(admin_url(plans)).content.decode()
    assert "This schedule belongs to Acme" in page and "the subscription’s page" in page
    for act in (">Change<", ">Run now<", ">Pause<", ">Backfill<", ">Delete<"):
        assert act not in page
    before = types(plans)
    r = client.post(url("edit", plans), change_data(plans, cron="0 7 * * *"), follow=True)
    assert "That schedule is a plan's: pause or resume it on the subscription's page" in " ".join(messages_of(r))
    client.post(url("delete", plans))
    client.post(url("act", plans, "run-now"))
    r = client.post(reverse("admin:timers_schedule_changelist"),
                    {"action": "pause_selected", "_selected_action": [plans.pk, shop["sch"].pk], "apply": "1",
                     "note": "holidays"}, follow=True)
    said = " ".join(messages_of(r))
    assert "Nightly-report is paused" in said and "T-monthly · job: Not done. That schedule is a plan's" in said
    plans.refresh_from_db()
    assert plans.deleted_at is None and not plans.paused and plans.revision == 1 and types(plans) == before
    assert not Timer.objects.filter(owner=plans.id, key__contains=":trigger:").exists()


def test_the_list_pauses_and_resumes_the_selected(client, shop):
    second = schedule_create(brand=shop["brand"], domain=shop["clock"].id, spec={"every": "6h"}, name="sync",
                             target=HOOK)
    changelist = reverse("admin:timers_schedule_changelist")
    both = [shop["sch"].pk, second.pk]
    page = client.post(changelist, {"action": "pause_selected", "_selected_action": both})
    assert page.status_code == 200 and "Pause schedules" in page.content.decode()  # the note first
    assert not Schedule.objects.filter(paused=True).exists()
    client.post(changelist, {"action": "pause_selected", "_selected_action": both, "apply": "1", "note": "move"})
    assert set(Schedule.objects.filter(paused=True).values_list("pause_note", flat=True)) == {"move"}
    paused = client.get(changelist, {"state": "paused"}).content.decode()
    assert "nightly-report" in paused and "sync" in paused
    assert "sync" not in client.get(changelist, {"state": "running"}).content.decode()
    r = client.post(changelist, {"action": "resume_selected", "_selected_action": both}, follow=True)
    assert not Schedule.objects.filter(paused=True).exists()
    assert sum("resumed" in m for m in messages_of(r)) == 2
