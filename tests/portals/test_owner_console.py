"""The owner console (issue 10): the Django admin on a brand-scoped AdminSite whose index is the dashboard.

Brand A is apis.tax with Acme (``loadexample apis_tax``) advanced to 2027-10-17: the 2026 return's federal
and NY file dates came unsatisfied, 2027's first three estimates' hard pay dates passed, four jobs are late.
Brand B is api.forsale (``loadexample api_forsale``): two deals with Tasks for grace and linus.

What is proved: an owner of B sees none of A (lists, change pages, history, actions, the settle buttons, the
as-of selector, related filters); the dashboard sorts dates at risk by what a miss costs, each with why and
a control; the controls and admin actions call the service functions (a refusal is a message with its code,
nothing kept, never a 500); times print in the brand's zone, named; the console is viewed as of a test clock.
"""

from __future__ import annotations

import dataclasses
import re
from datetime import UTC, datetime, timedelta
from io import StringIO

import pytest
from django.contrib.admin.utils import quote
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.urls import reverse

from calendars.models import Calendar, Clock, ClockItem, Subject
from portals.owner.dashboard import next_30_days
from portals.owner.risks import dates_at_risk
from portals.owner.scope import AsOf, brand_zone
from portals.owner.selectors import admin_link
from portals.owner.site import site
from services.models import Job, MoneyLine, Notification, Subscription, Task
from tests.conftest import admin_url
from tests.support.acme import acme_subject, open_return
from timers import transports
from timers.advance import advance
from timers.domains import domain_now
from timers.models import Brand, Event, Membership, TestClock, Timer, live_domain
from timers.test_clocks import test_clock_create

pytestmark = pytest.mark.django_db

CAME_DUE = datetime(2027, 10, 17, tzinfo=UTC)
DEALS_OPEN = datetime(2027, 10, 20, 14, 30, tzinfo=UTC)  # both deals opened; their appraise Tasks are open
NY = "America/New_York"


def load(example: str) -> tuple[Brand, str]:
    out = StringIO()
    call_command("loadexample", example, stdout=out)
    text = out.getvalue()
    brand = Brand.objects.get(name=text.split(" · ", 1)[1].split("\n", 1)[0].strip())
    return brand, text.split("test clock ")[1].split()[0]


def owner(brand: Brand, username: str, name: str = ""):
    user = get_user_model().objects.create_user(username=username, password="pw", is_staff=True)
    Membership.objects.create(user=user, brand=brand, role=Membership.Role.OWNER, name=name)
    return user


def theirs(clocks, user) -> None:
    """The clocks are the brand's own: assigned to ``user``'s membership (as the owner's Assign does)."""
    m = Membership.objects.get(user=user)
    clocks.update(member=m, contact=None, assigned=True, answers_for=m.name or user.username)


@pytest.fixture
def world(db, client):
    transports.register("notices", transports.RecordingTransport())
    a, tc_a = load("apis_tax")
    advance(tc_a, CAME_DUE)
    b, tc_b = load("api_forsale")
    advance(tc_b, DEALS_OPEN)
    ada = owner(a, "ada", "Ada Lovelace")
    theirs(Clock.objects.filter(brand=a, answers_for="Ada Lovelace"), ada)  # Ada works for apis.tax here
    return {"a": a, "tc_a": tc_a, "b": b, "tc_b": tc_b, "ada": ada, "bob": owner(b, "bob")}


def as_user(client, user):
    client.force_login(user)
    return client


def markers(brand: Brand, tc: str) -> list[str]:
    """Strings only brand A's objects print: ids, names."""
    subjects = Subject.objects.filter(brand=brand, domain=tc)
    out = [brand.id, tc, *subjects.values_list("id", flat=True), *subjects.values_list("name", flat=True), *Job.objects.filter(brand=brand).values_list("id", flat=True),
           *Subscription.objects.filter(brand=brand).values_list("id", flat=True),
           *Clock.objects.filter(brand=brand).values_list("id", flat=True)]
    return [m for m in out if m]


def leaked(html: str, marks: list[str]) -> list[str]:
    return [m for m in marks if m in html]


def scoped_models():
    """Every admin the console serves (its own and the apps' it adopts from Django's default site)."""
    site.adopt()
    return list(site._registry.items())


# -- who may enter, and what each sees ---------------------------------------------------------------------------
def test_the_console_is_the_custom_site_and_an_owner_signs_in_to_their_brand(world, client):
    r = as_user(client, world["ada"]).get("/admin/")
    assert r.status_code == 200
    html = r.content.decode()
    assert "apis.tax · owner console" in html  # the brand's name in the header
    assert 'name="as_of"' in html  # the as-of selector
    assert "/static/admin/css/base.css" in html  # styled: the admin's own stylesheet
    # A staff user who owns no brand is not let in (sent to the login page), nor a member who is not staff.
    stranger = get_user_model().objects.create_user(username="stranger", password="pw", is_staff=True)
    r = as_user(client, stranger).get("/admin/")
    assert r.status_code == 302 and "/admin/login/" in r["Location"]
    member = get_user_model().objects.create_user(username="grace2", password="pw")
    Membership.objects.create(user=member, brand=world["a"], role=Membership.Role.MEMBER)
    r = as_user(client, member).get("/admin/")
    assert r.status_code == 302 and "/admin/login/" in r["Location"]


def test_an_owner_of_brand_b_sees_none_of_brand_a_by_list(world, client):
    a_marks = markers(world["a"], world["tc_a"])
    b_marks = markers(world["b"], world["tc_b"])
    assert a_marks and b_marks
    listed = 0
    as_user(client, world["bob"])
    for model, ma in scoped_models():
        opts = model._meta
        url = reverse(f"admin:{opts.app_label}_{opts.model_name}_changelist")
        r = client.get(url)
        if not ma.has_view_permission(_request_for(world["bob"])):
            assert r.status_code == 403, url  # users, groups, versions: the superuser's alone
            continue
        assert r.status_code == 200, url
        assert not leaked(r.content.decode(), a_marks), (url, leaked(r.content.decode(), a_marks))
        listed += 1
    assert listed >= 15
    # The lists are not empty for the owner's own brand: B's jobs show, A's never.
    jobs = client.get("/admin/services/job/").content.decode()
    assert all(j in jobs for j in Job.objects.filter(brand=world["b"]).values_list("id", flat=True))
    # Related filters offer only the owner's own values: never another brand's name.
    calendars = client.get("/admin/calendars/calendar/").content.decode()
    assert "apis.tax" not in calendars
    # The superuser sees both brands.
    root = get_user_model().objects.create_superuser(username="root", password="pw")
    jobs = as_user(client, root).get("/admin/services/job/?all=").content.decode()
    assert all(j in jobs for j in Job.objects.values_list("id", flat=True))
    board = client.get("/admin/").content.decode()
    assert world["tc_a"] in board and world["tc_b"] in board  # every brand's test clocks to choose from


def _request_for(user):
    from django.test import RequestFactory

    request = RequestFactory().get("/admin/")
    request.user = user
    return request


def test_an_owner_of_brand_b_sees_none_of_brand_a_by_change_page_history_or_dashboard(world, client):
    a_marks = [m for m in markers(world["a"], world["tc_a"])]
    as_user(client, world["bob"])
    tried = 0
    for model, _ma in scoped_models():
        from portals.owner.scope import brand_path, scope

        if brand_path(model) is None:
            continue
        obj = scope(model.objects.all(), frozenset({world["a"].id})).first()
        if obj is None:
            continue
        opts = model._meta
        for view in ("change", "history"):
            url = reverse(f"admin:{opts.app_label}_{opts.model_name}_{view}", args=[quote(obj.pk)])
            r = client.get(url)
            assert r.status_code == 302 and r["Location"] == "/admin/", (url, r.status_code)
            shown = client.get(r["Location"]).content.decode()
            assert "doesn’t exist" in shown
            rest = [m for m in a_marks if m != str(obj.pk)]
            assert not leaked(shown, rest), (url, leaked(shown, rest))
        tried += 1
    assert tried >= 12
    # The dashboard and its as-of selector: B's own test clock, never A's.
    board = client.get("/admin/").content.decode()
    assert not leaked(board, a_marks)
    assert world["tc_b"] in board


def test_an_owner_of_brand_b_cannot_act_on_brand_a(world, client):
    as_user(client, world["bob"])
    job = Job.objects.filter(brand=world["a"], status="open").order_by("id").first()
    item = ClockItem.objects.filter(clock__brand=world["a"], status="due").order_by("pk").first()
    sub = Subscription.objects.get(brand=world["a"])
    events = Event.objects.filter(domain=world["tc_a"]).count()
    # An admin action naming A's job on B's list: the selection holds nothing of A's.
    r = client.post("/admin/services/job/", {"action": "deliver", "_selected_action": [job.pk]}, follow=True)
    assert r.status_code == 200
    r = client.post("/admin/services/subscription/", {"action": "cancel_at_cycle_end",
                                                      "_selected_action": [sub.pk]}, follow=True)
    r = client.post("/admin/calendars/clockitem/", {"action": "mark_done", "_selected_action": [item.pk]},
                    follow=True)
    # The dashboard's settle buttons, by id: not found.
    r = client.post("/admin/settle/", {"kind": "item", "id": item.pk, "act": "satisfy"}, follow=True)
    assert "That date was not found." in r.content.decode()
    r = client.post("/admin/settle/", {"kind": "job", "id": job.pk, "act": "deliver"}, follow=True)
    assert "That work was not found." in r.content.decode()
    # The as-of selector: A's test clock is refused.
    r = client.post("/admin/as-of/", {"as_of": world["tc_a"]}, follow=True)
    assert "No such clock." in r.content.decode()
    assert client.session.get("owner_as_of") != world["tc_a"]
    job.refresh_from_db(), item.refresh_from_db(), sub.refresh_from_db()
    assert job.status == "open" and item.status == "due" and not sub.cancel_at_period_end
    assert Event.objects.filter(domain=world["tc_a"]).count() == events  # nothing recorded on A


# -- the dashboard -------------------------------------------------------------------------------------------------
def _as_of(world, key="a") -> AsOf:
    tc = world[f"tc_{key}"]
    brand = world[key]
    return AsOf(domain=tc, clock=TestClock.objects.get(pk=tc), now=domain_now(domain=tc), zone=NY,
                brand_ids=frozenset({brand.id}), chosen=True)


def test_dates_at_risk_are_sorted_by_what_a_miss_costs_each_with_why_and_a_control(world):
    risks = dates_at_risk(_as_of(world))
    # On 2027-10-17 nothing open is due within a week: every row is past (the dates ahead would lead).
    assert risks and all(r.past for r in risks)
    assert [r.cost.cents for r in risks] == sorted((r.cost.cents for r in risks), reverse=True)
    refs = [r.ref for r in risks]
    # Acme's plan includes every job it mints, so no miss here takes money off a charge (the late price
    # comes off a charge of nothing, as the deadline's firing credits it): at one cost, the latest first,
    # a date the world sets before the job it costs; the file dates say why they cost nothing.
    top = risks[0]
    assert top.cost.cents == 0 and "missed on Fri 15 Oct 2027" in top.why
    assert [r.at for r in risks] == sorted((r.at for r in risks), reverse=True)
    assert {"satisfy", "reassign"} <= {c.act for c in top.controls}  # Ada Lovelace is the brand's owner here
    came = [r for r in risks if "A due date, missed on Fri 15 Oct 2027" in r.why]
    assert came and all("the plan includes this work" in r.cost.says for r in came)
    # The late jobs and the passed fixed dates are there, each with a why, what happens next and a control.
    late_jobs = set(Job.objects.filter(brand=world["a"], late=True, status="open").values_list("id", flat=True))
    assert late_jobs and late_jobs <= set(refs)
    passed = [r for r in risks if r.why.startswith("A fixed date (it can't be extended), missed on")]
    assert len(passed) == 3
    assert all(r.next for r in risks)
    assert all(r.controls for r in risks)


def test_the_dashboard_page_lists_risks_late_timers_the_next_30_days_and_notifications(world, client):
    a = world["a"]
    # A live timer that fired 12 minutes late, and one only 2 minutes late (not listed).
    base = dict(brand=a, domain=live_domain(a.id), kind="deadline", place=5, handler="noop", status="fired",
                opened_at=CAME_DUE, armed_at=CAME_DUE, owed_at=CAME_DUE, fired_at=CAME_DUE + timedelta(minutes=12))
    Timer.objects.create(key="job_x:deadline:late:2027", owner="job_x", late_by=timedelta(minutes=12), **base)
    Timer.objects.create(key="job_y:deadline:late:2027", owner="job_y", late_by=timedelta(minutes=2),
                         **{**base, "fired_at": CAME_DUE + timedelta(minutes=2)})
    as_user(client, world["ada"])
    # The brand now has live timers, so the console opens on the live clock: choose the test clock.
    assert 'data-ref="clk_' not in client.get("/admin/").content.decode()
    client.post("/admin/as-of/", {"as_of": world["tc_a"]})
    html = client.get("/admin/").content.decode()
    risk_rows = re.findall(r'<tr class="risk" data-ref="([^"]+)"', html)
    assert risk_rows[0].startswith("clk_")  # the costliest first
    late = html.split('id="late-timers"')[1].split("</section>")[0]
    # Named in words (what it was for), linked to its page; never its key.
    timer = Timer.objects.get(key="job_x:deadline:late:2027")
    assert "The late point of a piece of work" in late and "12m" in late and admin_link(timer) in late
    assert "job_x" not in late
    assert "job_y:deadline:late:2027" not in html
    # The next 30 days from 2027-10-17 hold nothing (CA's and NJ's file dates close 2027-11-16 04:59Z, just
    # after); from 2027-10-20 they are there, soonest first, and nothing past the 30th day.
    assert "Nothing in the next 30 days." in html.split('id="next-30-days"')[1].split("</section>")[0]
    later = dataclasses.replace(_as_of(world), now=datetime(2027, 10, 20, tzinfo=UTC))
    ahead = next_30_days(later)
    assert [a.what for a in ahead] == ["file · the 2026 return · US-CA", "file · the 2026 return · US-NJ"]
    assert all(later.now <= a.at < later.now + timedelta(days=30) for a in ahead)
    unread = Notification.objects.filter(brand=a, domain=world["tc_a"], read_at__isnull=True).count()
    assert unread and f"{unread} unread notifications" in html
    assert "No runaway alarms." in html
    # Times print in the brand's zone, named: now is 2027-10-17 00:00Z = 2027-10-16 20:00 in New York.
    assert f"now 2027-10-16 20:00 · {NY}" in html
    assert f"Times in {NY}" in html


def test_a_runaway_alarm_shows_on_the_dashboard(world, client):
    Event.objects.create(domain=world["tc_a"], brand=world["a"], type="tick.runaway", subject="job_loop",
                         owed_at=CAME_DUE, fired_at=CAME_DUE, data={})
    html = as_user(client, world["ada"]).get("/admin/").content.decode()
    assert "Stopped a runaway chain" in html and "job_loop" not in html


# -- the controls call the service functions ---------------------------------------------------------------------
def test_the_owner_settles_the_top_date_at_risk_with_its_button(world, client):
    top = dates_at_risk(_as_of(world))[0]
    control = top.controls[0]
    r = as_user(client, world["ada"]).post("/admin/settle/", {"kind": control.kind, "id": control.id,
                                                              "act": control.act}, follow=True)
    assert r.status_code == 200
    assert "marked done" in r.content.decode()
    item = ClockItem.objects.get(pk=int(control.id))
    assert item.status == "satisfied"
    kept = Event.objects.get(domain=world["tc_a"], type="clock.satisfied", subject=item.owner_key)
    assert kept.data["by"] == "Ada Lovelace" and kept.data["on_time"] is False
    # Its rungs and due timers are superseded: nothing more rings for it.
    assert not Timer.objects.filter(domain=world["tc_a"], owner=item.owner_key, status="armed").exists()
    assert top.ref not in [r.ref for r in dates_at_risk(_as_of(world))]


@pytest.fixture
def passed_pay(brand, client):
    """The test Acme's 2027 pay date (hard, options "pay late" → the pay step) passed on 2028-04-18."""
    transports.register("notices", transports.RecordingTransport())
    tc = test_clock_create(brand=brand, frozen_time=datetime(2027, 6, 1, 12, tzinfo=UTC), name="acme")
    subject = acme_subject(brand, tc.id)
    file, pay = open_return(brand, tc, subject)
    advance(tc.id, datetime(2028, 4, 20, tzinfo=UTC))
    item = ClockItem.objects.get(clock=pay, item="US")
    assert item.status == "passed"
    return tc, item, owner(brand, "own", "Owner")


def test_a_refusal_is_a_clear_message_and_nothing_is_kept(passed_pay, client):
    tc, item, user = passed_pay
    theirs(Clock.objects.filter(pk=item.clock_id), user)  # the brand's own: it may choose
    as_user(client, user)
    before = Event.objects.filter(domain=tc.id).count()
    r = client.post("/admin/settle/", {"kind": "item", "id": item.pk, "act": "choose", "option": "pay late"},
                    follow=True)
    assert r.status_code == 200
    assert "Not done. Its date has passed" in r.content.decode() and "Nothing was changed." in r.content.decode()
    # The same refusal through the admin action's intermediate form.
    r = client.post("/admin/calendars/clockitem/", {"action": "choose", "_selected_action": [item.pk],
                                                    "apply": "1", "option": "pay late"}, follow=True)
    assert r.status_code == 200 and "Not done. Its date has passed" in r.content.decode()
    item.refresh_from_db()
    assert item.status == "passed"
    assert Event.objects.filter(domain=tc.id).count() == before  # clock.chosen was rolled back with it
    # An option that names no step is recorded: the gate has nothing to refuse.
    file_item = ClockItem.objects.get(clock__domain=tc.id, clock__name="file", item="US-NJ")
    assert file_item.status in ("due", "open")


def test_the_dashboard_offers_each_option_of_a_clock_that_declares_them(passed_pay):
    tc, item, user = passed_pay
    row = next(r for r in dates_at_risk(AsOf(domain=tc.id, clock=tc, now=domain_now(domain=tc.id), zone=NY,
                                             brand_ids=frozenset({tc.brand_id}), chosen=True))
               if r.ref == item.owner_key)
    assert row.customers and not [c for c in row.controls if c.act in ("choose", "satisfy")]  # Ada's, not ours
    theirs(Clock.objects.filter(pk=item.clock_id), user)
    at = AsOf(domain=tc.id, clock=tc, now=domain_now(domain=tc.id), zone=NY, brand_ids=frozenset({tc.brand_id}),
              chosen=True)
    row = next(r for r in dates_at_risk(at) if r.ref == item.owner_key)
    assert [c.option for c in row.controls if c.act == "choose"] == ["pay late"]
    assert row.cost.cents >= 50000  # the guarantee's cap: penalties credited up to $500


def test_job_actions_deliver_and_cancel_call_the_service_functions(world, client):
    as_user(client, world["ada"])
    late = list(Job.objects.filter(brand=world["a"], late=True, status="open").order_by("id"))
    r = client.post("/admin/services/job/", {"action": "deliver", "_selected_action": [late[0].pk]}, follow=True)
    assert "delivered" in r.content.decode()
    late[0].refresh_from_db()
    assert late[0].status == "delivered"
    assert Event.objects.filter(domain=world["tc_a"], type="job.delivered", subject=late[0].id).exists()
    r = client.post("/admin/services/job/", {"action": "cancel", "_selected_action": [late[1].pk]}, follow=True)
    late[1].refresh_from_db()
    assert late[1].status == "canceled"
    # A second deliver of a delivered job is refused with its code, not a 500.
    r = client.post("/admin/services/job/", {"action": "deliver", "_selected_action": [late[0].pk]}, follow=True)
    assert r.status_code == 200 and "Not done. That work is already closed." in r.content.decode()


def test_the_job_page_shows_its_clocks_and_timers_and_the_list_filters_late(world, client):
    as_user(client, world["ada"])
    job = Job.objects.get(brand=world["a"], service="annual-return", period="2026")
    html = client.get(admin_url(job)).content.decode()
    assert "file · the 2026 return · US-NY" in html  # its clocks
    assert f"{job.id}:deadline:" in html  # its timers
    late = client.get("/admin/services/job/?late__exact=1").content.decode()
    n = Job.objects.filter(brand=world["a"], late=True).count()
    assert n == 4 and f"{n} jobs" in late


def test_subscription_usage_pause_resume_and_cancel_at_cycle_end(world, client):
    as_user(client, world["ada"])
    sub = Subscription.objects.get(brand=world["a"])
    page = client.get(admin_url(sub)).content.decode()
    assert "annual-return" in page and "estimate" in page  # usage against allowances
    listing = client.get("/admin/services/subscription/").content.decode()
    assert re.search(r"estimate \d of 4", listing)
    r = client.post("/admin/services/subscription/", {"action": "pause", "_selected_action": [sub.pk], "apply": "1",
                                                      "note": "moving offices"}, follow=True)
    assert "paused" in r.content.decode()
    sub.refresh_from_db()
    assert sub.paused_at is not None and sub.pause_note == "moving offices"
    assert Timer.objects.filter(domain=sub.domain, owner=sub.id, kind="schedule", status="held").exists()
    client.post("/admin/services/subscription/", {"action": "resume", "_selected_action": [sub.pk]})
    sub.refresh_from_db()
    assert sub.paused_at is None
    client.post("/admin/services/subscription/", {"action": "cancel_at_cycle_end", "_selected_action": [sub.pk]})
    sub.refresh_from_db()
    assert sub.cancel_at_period_end
    assert Event.objects.filter(domain=sub.domain, type="subscription.cancel_scheduled", subject=sub.id).exists()


def test_tasks_and_pools_assign_a_member(world, client):
    as_user(client, world["bob"])
    task = Task.objects.filter(brand=world["b"], status="open").order_by("id").first()
    listing = client.get("/admin/services/task/").content.decode()
    assert "grace, linus" in listing  # the pool and its members
    r = client.post("/admin/services/task/", {"action": "assign", "_selected_action": [task.pk], "apply": "1",
                                              "member": "grace"}, follow=True)
    assert "assigned to grace" in r.content.decode()
    task.refresh_from_db()
    assert task.status == "taken" and task.member.username == "grace"
    assert Timer.objects.filter(domain=task.domain, owner=task.job_id, kind="task", status="armed").exists()


def test_postpone_a_date_and_mark_notifications_read(world, client):
    as_user(client, world["ada"])
    item = ClockItem.objects.get(clock__brand=world["a"], clock__name="file", item="US-CA")
    moves = item.moves
    r = client.post("/admin/calendars/clockitem/", {"action": "postpone", "_selected_action": [item.pk],
                                                    "apply": "1", "to": "2027-12-15", "notice": "CA-2027-07"},
                    follow=True)
    assert "1 date moved to Wed 15 Dec 2027 (notice CA-2027-07)." in r.content.decode()
    item.refresh_from_db()
    assert item.civil.isoformat() == "2027-12-15" and item.moves == moves + 1
    assert Event.objects.filter(domain=world["tc_a"], type="clock.moved", subject=item.owner_key).exists()
    unread = list(Notification.objects.filter(brand=world["a"], read_at__isnull=True).values_list("pk", flat=True))
    client.post("/admin/services/notification/", {"action": "mark_read", "_selected_action": unread[:2]})
    read = Notification.objects.filter(pk__in=unread[:2])
    assert all(n.read_at == domain_now(domain=world["tc_a"]) for n in read)


def test_times_print_in_the_brands_zone(world, client):
    as_user(client, world["ada"])
    job = Job.objects.get(brand=world["a"], service="annual-return", period="2026")
    assert job.late_at == datetime(2027, 4, 11, 4, tzinfo=UTC)
    listing = client.get("/admin/services/job/").content.decode()
    assert "April 11, 2027, midnight" in listing  # 04:00Z in New York
    assert brand_zone(frozenset({world["a"].id}), world["tc_a"]) == NY
    # A brand with no calendar prints UTC, and says so.
    lone = Brand.objects.create(name="lone", created_at=CAME_DUE)
    assert brand_zone(frozenset({lone.id}), "live") == "UTC"  # "live": the brands' live clocks


def test_the_console_is_viewed_as_of_a_test_clock_or_the_live_clock(world, client):
    as_user(client, world["ada"])
    html = client.get("/admin/").content.decode()
    assert f'<option value="{world["tc_a"]}" selected>' in html  # the example's data lives on its test clock
    r = client.post("/admin/as-of/", {"as_of": "live", "next": "/admin/services/job/"})
    assert r.status_code == 302 and r["Location"] == "/admin/services/job/"
    jobs = client.get("/admin/services/job/").content.decode()
    assert not any(j in jobs for j in Job.objects.filter(brand=world["a"]).values_list("id", flat=True))
    board = client.get("/admin/").content.decode()
    assert "Nothing ahead is at risk on the live clock." in board
    client.post("/admin/as-of/", {"as_of": world["tc_a"], "next": "https://evil.example/"})
    board = client.get("/admin/").content.decode()
    assert 'data-ref="clk_' in board
    # An outside "next" is never followed.
    r = client.post("/admin/as-of/", {"as_of": world["tc_a"], "next": "https://evil.example/"})
    assert r["Location"] == "/admin/"


def test_an_owner_edits_their_calendars_closed_days_through_the_calendar_services(world, client):
    as_user(client, world["ada"])
    cal = Calendar.objects.filter(brand=world["a"]).first()
    r = client.get(admin_url(cal))
    assert r.status_code == 200 and 'name="closed-TOTAL_FORMS"' in r.content.decode()
    as_user(client, world["bob"])
    r = client.get(admin_url(cal))
    assert r.status_code == 302


def test_money_ledger_totals(world, client):
    html = as_user(client, world["ada"]).get("/admin/services/moneyline/").content.decode()
    total = sum(MoneyLine.objects.filter(brand=world["a"], kind="charge").values_list("amount_cents", flat=True))
    assert total and f"charge ${total / 100:,.2f}" in html


def test_where_money_is_at_stake_the_costliest_miss_leads(world):
    """api.forsale on 2027-11-12: deal B is at risk (its late price, $150, and the $1,500 hold a lapse
    returns) and leads every row that costs less."""
    advance(world["tc_b"], datetime(2027, 11, 12, 12, tzinfo=UTC))
    risks = dates_at_risk(_as_of(world, "b"))
    assert [r.cost.cents for r in risks] == sorted((r.cost.cents for r in risks), reverse=True)
    top = risks[0]
    deal_b = Job.objects.get(domain=world["tc_b"], period="B-2001")
    assert top.ref == deal_b.id and top.cost.cents == 15000 + 150000
    assert "a lapse returns the $1,500.00 hold" in top.cost.says


def test_the_owner_assigns_a_date_to_a_member_of_the_brand(world, client):
    item = ClockItem.objects.select_related("clock").filter(clock__brand=world["a"], status="due").first()
    carol = get_user_model().objects.create_user(username="carol", password="pw")
    Membership.objects.create(user=carol, brand=world["a"], role=Membership.Role.MEMBER, name="Carol Shaw")
    as_user(client, world["ada"])
    # The dashboard's "Who for" names the brand's people as they are known; the username is only the value sent.
    board = client.get("/admin/").content.decode()
    assert '<option value="carol">Carol Shaw</option>' in board
    assert ">carol</option>" not in board
    r = client.post("/admin/settle/", {"kind": "item", "id": item.pk, "act": "reassign", "member": "bob"},
                    follow=True)
    assert "Choose one of the brand&#x27;s people" in r.content.decode()  # bob is api.forsale's
    client.post("/admin/settle/", {"kind": "item", "id": item.pk, "act": "reassign", "member": "carol"})
    item.clock.refresh_from_db()
    assert item.clock.answers_for == "Carol Shaw"
    ev = Event.objects.get(type="clock.reassigned", subject=item.clock_id)
    assert (ev.data["from"], ev.data["to"], ev.data["by"]) == ("Ada Lovelace", "Carol Shaw", "Ada Lovelace")


def test_a_link_to_an_object_whose_id_holds_an_admin_escape_opens_its_page(world, client):
    # The admin reads "_3A" in a URL's key as ":" (its quoting of keys): an id holding one, linked raw, was a
    # page not found. The dashboard's links quote the key.
    from portals.owner.selectors import admin_link

    as_user(client, world["ada"])
    job = Job.objects.get(brand=world["a"], service="annual-return", period="2026")
    odd = Job.objects.create(brand=job.brand, domain=job.domain, service=job.service, subject=job.subject,
                             period="2031", id="job_3A5Fodd", opened_at=job.opened_at)
    r = client.get(admin_link(odd))
    assert r.status_code == 200 and odd.id in r.content.decode()
    assert client.get(f"/admin/services/job/{odd.id}/change/").status_code == 302  # raw: not found
