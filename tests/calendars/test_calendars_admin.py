"""The owner console for calendars: closed days edited there re-roll every open date through the calendar
services; clocks and their items are read-only; a subject's feed token is rotated and shown once."""

from __future__ import annotations

import re
from datetime import date

import pytest

from calendars.feed_tokens import subject_feed_rotate
from calendars.models import Calendar, ClockItem, ClosedDay, Subject
from tests.conftest import admin_url, at
from tests.support.acme import acme_subject, open_return
from tests.support.feeds import ics
from timers.models import Event
from timers.test_clocks import test_clock_create

pytestmark = pytest.mark.django_db

NY = "America/New_York"


@pytest.fixture
def acme(brand):
    tc = test_clock_create(brand=brand, frozen_time=at("2027-06-01T12:00Z"), name="acme")
    subject = acme_subject(brand, tc.id)
    file, pay = open_return(brand, tc, subject)
    return tc, subject, file, pay


def item(clock, name: str) -> ClockItem:
    return ClockItem.objects.get(clock=clock, item=name)


def change_url(calendar: Calendar) -> str:
    return admin_url(calendar)


def calendar_form(calendar: Calendar, rows: list[dict], *, extra: dict | None = None) -> dict:
    """The Calendar change form as the browser posts it: its own fields (those that roll are read-only on
    change) and the closed-day inline formset with its management form."""
    initial = [r for r in rows if r.get("id")]
    data = {
        "name": calendar.name,
        "closed-TOTAL_FORMS": str(len(rows)),
        "closed-INITIAL_FORMS": str(len(initial)),
        "closed-MIN_NUM_FORMS": "0",
        "closed-MAX_NUM_FORMS": "1000",
        "_continue": "Save and continue editing",
    }
    for i, row in enumerate(rows):
        data[f"closed-{i}-id"] = str(row.get("id", ""))
        data[f"closed-{i}-calendar"] = str(calendar.pk)
        data[f"closed-{i}-date"] = row.get("date", "")
        data[f"closed-{i}-why"] = row.get("why", "")
        if row.get("DELETE"):
            data[f"closed-{i}-DELETE"] = "on"
    data.update(extra or {})
    return data


def save(admin_client, url: str, data: dict):
    """Post a form as a browser does, following the redirect: (the final response, the messages it shows)."""
    r = admin_client.post(url, data, follow=True)
    shown = [str(m) for m in r.context["messages"]] if r.context and "messages" in r.context else []
    return r, shown


def saved(r) -> bool:
    return r.status_code == 200 and bool(r.redirect_chain) and r.redirect_chain[0][1] == 302


# -- the lists -----------------------------------------------------------------------------------------------
def test_the_lists_and_forms_load_with_their_filters(admin_client, acme):
    tc, subject, file, pay = acme
    cal = subject.calendar
    for url in [
        "/admin/calendars/calendar/", f"/admin/calendars/calendar/?zone={NY}",
        "/admin/calendars/calendar/add/", change_url(cal),
        "/admin/calendars/subject/", "/admin/calendars/subject/?kind=taxpayer",
        f"/admin/calendars/subject/?domain={tc.id}",
        admin_url(subject),
        "/admin/calendars/clock/", "/admin/calendars/clock/?hard__exact=1",
        "/admin/calendars/clock/?lives_on__exact=job",
        admin_url(file),
        "/admin/calendars/clockitem/", "/admin/calendars/clockitem/?status__exact=open",
        "/admin/calendars/clockitem/?clock__hard__exact=1",
        "/admin/calendars/clockitem/?clock__hard__exact=0&status__exact=open",
        admin_url(item(file, "US")),
    ]:
        r = admin_client.get(url)
        assert r.status_code == 200, (url, r.status_code)
        assert "?e=1" not in r.get("Location", "")  # an unknown filter redirects with ?e=1

    items = admin_client.get("/admin/calendars/clockitem/?clock__hard__exact=1").content.decode()
    assert "2028-04-18" in items or "April 18, 2028" in items
    assert items.count('class="field-item"') == 1  # the hard clock has one item: pay · US
    everything = admin_client.get("/admin/calendars/clockitem/").content.decode()
    assert everything.count('class="field-item"') == 5
    for heading in ("Clock", "Item", "Due date", "Status", "Moves", "Hard"):
        assert f">{heading}<" in everything
    assert "By status" in everything and "By hard" in everything

    clock_page = admin_client.get(admin_url(file)).content.decode()
    for state in ("US-CA", "US-NY", "US-NJ"):
        assert state in clock_page  # its items, inline
    assert 'name="items-0-due_date"' not in clock_page  # read-only: nothing to post
    assert admin_client.get("/admin/calendars/clock/add/").status_code == 403
    assert admin_client.get("/admin/calendars/clockitem/add/").status_code == 403
    delete = admin_client.post(admin_url(item(file, "US"), "delete"), {"post": "yes"})
    assert delete.status_code == 403
    assert item(file, "US").due_date == date(2028, 4, 18)


def test_the_calendar_change_form_shows_the_rolling_fields_read_only(admin_client, acme):
    _, subject, _, _ = acme
    cal = subject.calendar
    page = admin_client.get(change_url(cal)).content.decode()
    assert 'name="name"' in page and 'name="closed-TOTAL_FORMS"' in page
    for field in ("zone", "weekends", "closes", "holiday_country", "holiday_subdiv", "brand"):
        assert f'name="{field}"' not in page, field
    assert NY in page
    # A post cannot change them either: the form has no such fields.
    r = admin_client.post(change_url(cal), calendar_form(cal, [], extra={"zone": "UTC", "weekends": "[]"}))
    assert r.status_code == 302
    cal.refresh_from_db()
    assert (cal.zone, cal.weekends) == (NY, [5, 6])


# -- closed days re-roll -------------------------------------------------------------------------------------
def test_a_closed_day_added_in_the_console_re_rolls_and_deleting_it_rolls_back(admin_client, acme):
    tc, subject, file, pay = acme
    cal = subject.calendar
    us = item(file, "US")
    assert (us.civil, us.due_date, us.moves) == (date(2028, 4, 15), date(2028, 4, 18), 0)

    closed = [{"date": "2028-04-18", "why": "IRS disaster day"}]
    r, shown = save(admin_client, change_url(cal), calendar_form(cal, closed))
    assert saved(r), r.content.decode()[:3000]
    assert "4 dates re-rolled" in shown
    row = ClosedDay.objects.get(calendar=cal)
    assert (row.date, row.why) == (date(2028, 4, 18), "IRS disaster day")

    us = item(file, "US")
    assert (us.civil, us.due_date, us.moves) == (date(2028, 4, 15), date(2028, 4, 19), 1)
    assert "IRS disaster day" in us.rolled_why
    assert item(file, "US-CA").due_date == item(file, "US-NY").due_date == date(2028, 4, 19)
    assert item(file, "US-NJ").due_date == date(2028, 5, 15) and item(file, "US-NJ").moves == 0
    assert item(pay, "US").due_date == date(2028, 4, 19)  # a hard date rolls too
    moved = Event.objects.filter(domain=tc.id, type="clock.moved", subject=f"{file.id}#US").order_by("seq")
    assert [(e.data["by"], e.data["from"], e.data["to"]) for e in moved] == [
        ("calendar", "2028-04-18", "2028-04-19")]
    assert moved[0].data["calendar"] == "closed 2028-04-18: IRS disaster day"
    # The console keeps its own history of the edit.
    history = admin_client.get(admin_url(cal, "history")).content.decode()
    assert "Added closed day" in history

    # Changing only why re-rolls nothing.
    closed = [{"id": row.pk, "date": "2028-04-18", "why": "IRS relief"}]
    r, shown = save(admin_client, change_url(cal), calendar_form(cal, closed))
    assert saved(r) and "0 dates re-rolled" in shown
    assert ClosedDay.objects.get(calendar=cal).why == "IRS relief"
    assert item(file, "US").moves == 1

    # Deleting it opens the day again: each date rolls back to the 18th, a move of its own.
    row = ClosedDay.objects.get(calendar=cal)
    r, shown = save(admin_client, change_url(cal), calendar_form(
        cal, [{"id": row.pk, "date": "2028-04-18", "why": "IRS relief", "DELETE": True}]))
    assert saved(r) and "4 dates re-rolled" in shown
    assert not ClosedDay.objects.filter(calendar=cal).exists()
    us = item(file, "US")
    assert (us.civil, us.due_date, us.moves) == (date(2028, 4, 15), date(2028, 4, 18), 2)
    assert item(pay, "US").due_date == date(2028, 4, 18)
    moved = Event.objects.filter(domain=tc.id, type="clock.moved", subject=f"{file.id}#US").order_by("seq")
    assert [(e.data["from"], e.data["to"], e.data["calendar"]) for e in moved][-1] == (
        "2028-04-19", "2028-04-18", "opened 2028-04-18")


def test_a_closed_day_moved_to_another_date_opens_the_old_one(admin_client, acme):
    tc, subject, file, _ = acme
    cal = subject.calendar
    save(admin_client, change_url(cal), calendar_form(cal, [{"date": "2028-04-18", "why": "storm"}]))
    assert item(file, "US").due_date == date(2028, 4, 19)
    row = ClosedDay.objects.get(calendar=cal)
    closed = [{"id": row.pk, "date": "2028-04-19", "why": "storm"}]
    r, shown = save(admin_client, change_url(cal), calendar_form(cal, closed))
    assert saved(r) and shown[0] == "4 dates re-rolled" and len(shown) == 2
    assert list(ClosedDay.objects.filter(calendar=cal).values_list("date", flat=True)) == [date(2028, 4, 19)]
    # The 18th is open again, the 19th closed: the dates roll from the 15th to the 18th.
    assert item(file, "US").due_date == date(2028, 4, 18)


def test_a_bad_closed_day_saves_nothing(admin_client, acme):
    _, subject, file, _ = acme
    cal = subject.calendar
    r = admin_client.post(change_url(cal), calendar_form(cal, [{"date": "2028-02-30", "why": "nope"}]))
    assert r.status_code == 200  # the form again, with its error
    assert "Enter a valid date" in r.content.decode()
    assert not ClosedDay.objects.exists() and item(file, "US").moves == 0
    admin_client.post(change_url(cal), calendar_form(cal, [{"date": "2028-04-18", "why": "storm"}]))
    twice = calendar_form(cal, [{"id": ClosedDay.objects.get().pk, "date": "2028-04-18", "why": "storm"},
                                {"date": "2028-04-18", "why": "again"}])
    r = admin_client.post(change_url(cal), twice)
    assert r.status_code == 200 and ClosedDay.objects.count() == 1
    assert item(file, "US").moves == 1


def test_a_calendar_added_with_closed_days(admin_client, brand):
    data = {"brand": str(brand.pk), "name": "Head office", "zone": "Europe/London", "weekends": ["5", "6"],
            "closes": "17:30", "holiday_country": "GB", "holiday_subdiv": "",
            "closed-TOTAL_FORMS": "1", "closed-INITIAL_FORMS": "0", "closed-MIN_NUM_FORMS": "0",
            "closed-MAX_NUM_FORMS": "1000", "closed-0-date": "2028-12-27", "closed-0-why": "office closed"}
    r, shown = save(admin_client, "/admin/calendars/calendar/add/", data)
    assert saved(r), r.content.decode()[:3000]
    cal = Calendar.objects.get(name="Head office")
    assert cal.zone == "Europe/London" and cal.closes.isoformat() == "17:30:00"
    assert [(d.date, d.why) for d in cal.closed.all()] == [(date(2028, 12, 27), "office closed")]
    assert "0 dates re-rolled" in shown


# -- subjects ------------------------------------------------------------------------------------------------
def test_the_subject_shows_its_feed_status_never_the_digest(admin_client, acme):
    _, subject, _, _ = acme
    page = admin_client.get("/admin/calendars/subject/").content.decode()
    assert "icon-no.svg" in page  # no feed yet
    subject_feed_rotate(subject=subject)
    digest = Subject.objects.get(pk=subject.pk).feed_digest
    for url in ("/admin/calendars/subject/", admin_url(subject)):
        page = admin_client.get(url).content.decode()
        assert "icon-yes.svg" in page
        assert digest not in page and "feed_digest" not in page and "digest" not in page.lower()
    # A customer is added through subject_create (portals/owner/customers.py), never edited by hand.
    assert b"Add a customer" in admin_client.get("/admin/calendars/subject/add/").content
    assert admin_client.post(admin_url(subject), {"name": "x"}).status_code == 403
    assert admin_client.post(admin_url(subject, "delete"), {"post": "yes"}).status_code == 403
    assert Subject.objects.get(pk=subject.pk).name == "Acme Robotics"


def test_rotate_shows_the_new_webcal_url_once(client, admin_client, acme):
    _, subject, _, _ = acme
    old = subject_feed_rotate(subject=subject)
    r, shown = save(admin_client, "/admin/calendars/subject/",
                    {"action": "rotate_feed", "_selected_action": [subject.pk]})
    assert saved(r) and len(shown) == 1
    assert shown[0] in r.content.decode()  # on the page the action returns to
    webcal = rf"webcal://localhost:8000/subjects/{subject.id}/calendar\.ics\?token=([A-Za-z0-9_-]+)"
    m = re.search(webcal, shown[0])
    assert m, shown
    token = m[1]
    assert token != old
    assert ics(client, subject, token).status_code == 200
    assert ics(client, subject, old).status_code == 404  # the old link stops working at once
    # Shown once: the list after it carries no token.
    page = admin_client.get("/admin/calendars/subject/").content.decode()
    assert token not in page and "webcal://" not in page
    history = admin_client.get(admin_url(subject, "history")).content.decode()
    assert "Rotated the calendar feed token." in history and token not in history


def test_a_calendar_added_in_the_console_is_checked_as_the_api_checks_it(admin_client, brand):
    base = {"brand": str(brand.pk), "name": "Mars base", "weekends": ["5", "6"], "closes": "17:30",
            "holiday_subdiv": "", "closed-TOTAL_FORMS": "0", "closed-INITIAL_FORMS": "0",
            "closed-MIN_NUM_FORMS": "0", "closed-MAX_NUM_FORMS": "1000"}
    for bad, says in (({"zone": "Mars/Olympus", "holiday_country": ""}, "an IANA zone"),
                      ({"zone": "UTC", "holiday_country": "ZZ"}, "holidays package knows"),
                      ({"zone": "UTC", "holiday_country": "US", "holiday_subdiv": "ZZ"}, "has no subdivision")):
        r = admin_client.post("/admin/calendars/calendar/add/", {**base, **bad})
        assert r.status_code == 200 and says in r.content.decode(), bad
    assert not Calendar.objects.filter(name="Mars base").exists()
    r = admin_client.post("/admin/calendars/calendar/add/", {**base, "zone": "UTC", "holiday_country": "us"})
    cal = Calendar.objects.get(name="Mars base")
    assert r.status_code == 302 and cal.holiday_country == "US" and cal.is_default  # the brand's first


def test_the_console_sets_a_calendars_time_rules_and_refuses_them_while_dates_are_open(admin_client, brand, acme):
    base = {"brand": str(brand.pk), "name": "Fires", "zone": NY, "weekends": ["5", "6"], "closes": "17:30",
            "holiday_country": "", "holiday_subdiv": "", "dst_skipped": "skip", "dst_repeated": "second",
            "closed-TOTAL_FORMS": "0", "closed-INITIAL_FORMS": "0", "closed-MIN_NUM_FORMS": "0",
            "closed-MAX_NUM_FORMS": "1000"}
    r = admin_client.post("/admin/calendars/calendar/add/", base)
    cal = Calendar.objects.get(name="Fires")
    assert r.status_code == 302 and (cal.dst_skipped, cal.dst_repeated) == ("skip", "second")
    r, _ = save(admin_client, change_url(cal), calendar_form(cal, [], extra={"dst_repeated": "first"}))
    cal.refresh_from_db()
    assert saved(r) and (cal.dst_skipped, cal.dst_repeated) == ("skip", "first")
    _tc, subject, _file, _pay = acme  # its open dates are on its calendar
    used = subject.calendar
    r, shown = save(admin_client, change_url(used), calendar_form(used, [], extra={"dst_skipped": "skip"}))
    used.refresh_from_db()
    assert used.dst_skipped == "next_minute" and any("calendar_in_use" in m for m in shown), shown
