"""Members and pools without a deploy (issue 23): a brand's people are data, changed over the API, the CLI and
the owner console with the same service functions (services/members.py).

api.forsale (``loadexample api_forsale``) ticked to its deals' opening: each deal's appraisal is an open Task of
the brokers pool, whose members (grace, linus) loadexample puts in as data; the deal's Service declares only
``Pool(hold="2d")``. apis.tax's Acme (``loadexample apis_tax``) gives clocks that answer for "Ada Lovelace".

What is proved: an invite sends one email whose link, once, makes the account and the member then signs in; a
member put in brokers (API, console) takes the next open Task at once, and one taken out cannot
(403 not_in_pool); a removal hands every date and Task to the successor (or a Task back to its pool) on the
record; another brand's members are never seen; every new endpoint's bad input is a coded 4xx that writes
nothing; the CLI; the console's pages.
"""

from __future__ import annotations

import html
import json
import re
from datetime import UTC, datetime
from io import StringIO

import pytest
from django.contrib.auth import get_user_model
from django.core import mail
from django.core.management import call_command
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext

from calendars.acts import clock_reassign
from calendars.models import Clock
from portals.delivery.views import _my_tasks
from services.handovers import WAITING
from services.members import member_id
from services.models import PoolMember, Task
from tests.support.cli import one_line, run
from timers.advance import advance
from timers.armer import DirectArmer
from timers.models import Brand, Event, Membership, Timer
from timers.tenants import api_key_create, brand_get_or_create

pytestmark = pytest.mark.django_db

DEALS_OPEN = datetime(2027, 10, 20, 14, 30, tzinfo=UTC)  # both deals opened; their appraise Tasks are open
ACME_AT = datetime(2027, 10, 17, tzinfo=UTC)
LINK = re.compile(r"https?://[^/\s]+(/portal/delivery/invite/\S+)")


def load(example: str) -> dict:
    out = StringIO()
    call_command("loadexample", example, stdout=out)
    text = out.getvalue()
    name = text.split(" · ", 1)[1].split("\n", 1)[0].strip()
    return {"brand": Brand.objects.get(name=name), "tc": text.split("test clock ")[1].split()[0]}


class Api:
    """A brand's key (live by default: members and pools change with a live key) over Django's test client."""

    def __init__(self, brand: Brand, *, live: bool = True):
        _, self.key = api_key_create(brand=brand, live=live)
        self.client = Client(enforce_csrf_checks=True, raise_request_exception=False)

    def call(self, method: str, path: str, body=None, *, raw: str | None = None,
             content_type: str = "application/json"):
        data = raw if raw is not None else ("" if body is None else json.dumps(body))
        return self.client.generic(method, path, data=data, content_type=content_type,
                                   HTTP_AUTHORIZATION=f"Bearer {self.key}")

    def get(self, path: str):
        return self.call("GET", path)

    def post(self, path: str, body=None):
        return self.call("POST", path, body if body is not None else {})

    def delete(self, path: str):
        return self.call("DELETE", path)


def error(r, status: int, code: str, param: str | None = None) -> dict:
    assert r.status_code == status, (r.status_code, r.content[:400])
    err = r.json()["error"]
    assert err["code"] == code and err["message"], err
    if param is not None:
        assert err.get("param") == param, err
    return err


@pytest.fixture
def forsale(db):
    ids = load("api_forsale")
    advance(ids["tc"], DEALS_OPEN)
    ids["live"], ids["test"] = Api(ids["brand"]), Api(ids["brand"], live=False)
    return ids


@pytest.fixture
def acme(db):
    ids = load("apis_tax")
    advance(ids["tc"], ACME_AT)
    mail.outbox.clear()  # the notices Acme's officer heard on the way: the tests count their own emails
    ids["live"] = Api(ids["brand"])
    return ids


def person(brand: Brand, username: str, name: str, *, role: str = "member", password: str = "pw") -> Membership:
    user = get_user_model().objects.create_user(username=username, password=password,
                                                is_staff=role == "owner")
    return Membership.objects.create(user=user, brand=brand, role=role, name=name)


def open_tasks(tc: str) -> list[Task]:
    return list(Task.objects.filter(domain=tc, status="open").select_related("job").order_by("id"))


def take(api: Api, task: Task, member: str):
    return api.post(f"/jobs/{task.job_id}/steps/{task.step}/take", {"member": member})


def accept_new(link: str, password: str = "first-choice-1") -> Client:
    """Open an invite's link with no account, choose a password: joined and signed in."""
    browser = Client()
    r = browser.get(link)  # the token leaves the address at once
    assert r.status_code == 302 and r["Location"] == "/portal/delivery/invite/accept"
    r = browser.post(r["Location"], {"password1": password, "password2": password})
    assert r.status_code == 302 and r["Location"] == "/portal/delivery/", r.content[:600]
    return browser


def member_client(username: str, password: str = "pw") -> Client:
    c = Client()
    assert c.login(username=username, password=password)
    return c


def messages_of(response) -> list[str]:
    page = response.content.decode()
    found = re.findall(r'<li class="(?:success|error|warning|info)">(.*?)</li>', page, re.S)
    return [html.unescape(re.sub(r"<[^>]+>", "", m)).strip() for m in found]


def written() -> dict[str, int]:
    """What a refused request must leave as it was."""
    return {"users": get_user_model().objects.count(), "members": Membership.objects.count(),
            "pools": PoolMember.objects.count(), "events": Event.objects.count(), "mail": len(mail.outbox),
            "taken": Task.objects.filter(status="taken").count(), "timers": Timer.objects.count(),
            "answers": sorted(Clock.objects.values_list("id", "answers_for"))}


# -- invite ---------------------------------------------------------------------------------------------------
def test_an_invite_sends_one_email_whose_link_makes_the_account_once_and_the_member_signs_in(forsale):
    api = forsale["live"]
    r = api.post("/members", {"email": "Ada@Example.com", "name": "Ada King", "role": "member"})
    assert r.status_code == 201, r.content
    body = r.json()
    assert (body["object"], body["email"], body["username"], body["name"], body["role"], body["status"],
            body["pools"]) == ("member", "ada@example.com", "ada@example.com", "Ada King", "member", "invited", [])
    assert re.fullmatch(r"mem_[0-9]+", body["id"])
    assert not get_user_model().objects.filter(username="ada@example.com").exists()  # no account until she accepts
    assert len(mail.outbox) == 1
    sent = mail.outbox[0]
    assert sent.to == ["ada@example.com"] and "api.forsale" in sent.subject
    link = LINK.search(sent.body)[1]

    browser = Client()
    r = browser.get(link)  # the token leaves the address at once
    assert r.status_code == 302 and r["Location"] == "/portal/delivery/invite/accept"
    page = browser.get(r["Location"])
    assert page.status_code == 200 and "Join api.forsale, Ada King" in page.content.decode()
    r = browser.post("/portal/delivery/invite/accept", {"password1": "first-choice-1", "password2": "first-choice-1"})
    assert r.status_code == 302 and r["Location"] == "/portal/delivery/"
    home = browser.get("/portal/delivery/", follow=True)
    assert home.status_code == 200 and "You are in api.forsale now." in messages_of(home)
    assert api.get(f"/members/{body['id']}").json()["status"] == "active"

    # The link works once: a second use is refused, and the password stays the one chosen.
    again = Client()
    r = again.get(link, follow=True)
    assert "This link has been used" in r.content.decode()
    r = again.post("/portal/delivery/invite/accept", {"password1": "second-try-2", "password2": "second-try-2"})
    assert r.status_code == 404 and "This link has been used" in r.content.decode()
    user = get_user_model().objects.get(username="ada@example.com")
    assert user.check_password("first-choice-1") and not user.check_password("second-try-2")
    # And the member signs in to the delivery portal with it.
    signed = Client()
    r = signed.post("/portal/delivery/login", {"username": "ada@example.com", "password": "first-choice-1"})
    assert r.status_code == 302 and signed.get("/portal/delivery/").status_code == 200


def test_an_owner_is_staff_and_enters_the_console_once_they_accepted(forsale):
    r = forsale["live"].post("/members", {"email": "olive@example.com", "name": "Olive Owner", "role": "owner"})
    assert r.status_code == 201 and r.json()["role"] == "owner"
    assert not get_user_model().objects.filter(username="olive@example.com").exists()
    assert "owner console" in mail.outbox[0].body
    browser = accept_new(LINK.search(mail.outbox[0].body)[1], "olive-pw-1")
    assert get_user_model().objects.get(username="olive@example.com").is_staff
    assert browser.get("/admin/").status_code == 200  # the console's dashboard, signed in


def test_an_invite_to_someone_already_in_the_brand_is_409_and_sends_nothing(forsale):
    api = forsale["live"]
    assert api.post("/members", {"email": "ada@example.com"}).status_code == 201
    before = written()
    error(api.post("/members", {"email": "ADA@example.com", "role": "owner"}), 409, "member_exists", "email")
    assert written() == before


def test_an_email_that_cannot_be_sent_adds_no_one(forsale, settings):
    settings.EMAIL_BACKEND = "django.core.mail.backends.smtp.EmailBackend"
    settings.EMAIL_HOST, settings.EMAIL_PORT, settings.EMAIL_TIMEOUT = "127.0.0.1", 9, 2  # nothing listens
    before = written()
    error(forsale["live"].post("/members", {"email": "ada@example.com"}), 502, "email_not_sent")
    assert written() == before


def test_the_link_of_someone_removed_from_every_brand_opens_nothing(forsale):
    api = forsale["live"]
    mid = api.post("/members", {"email": "ada@example.com"}).json()["id"]
    link = LINK.search(mail.outbox[0].body)[1]
    assert api.delete(f"/members/{mid}").status_code == 200
    r = Client().get(link, follow=True)
    assert "This link has been used" in r.content.decode()


# -- pools are data -------------------------------------------------------------------------------------------
def test_a_member_put_in_brokers_over_the_api_takes_the_next_open_task_at_once_and_one_taken_out_cannot(forsale):
    live, test = forsale["live"], forsale["test"]
    mid = live.post("/members", {"email": "ada@example.com", "name": "Ada King"}).json()["id"]
    accept_new(LINK.search(mail.outbox[0].body)[1])
    first, second = open_tasks(forsale["tc"])
    error(take(test, first, "ada@example.com"), 403, "not_in_pool")

    r = live.post("/pools/brokers/members", {"member": mid})
    assert r.status_code == 200 and [m["name"] for m in r.json()["members"]] == ["Ada King", "Grace Hopper",
                                                                                  "Linus Pauling"]
    r = take(test, first, "ada@example.com")
    assert r.status_code == 200 and r.json()["task"]["member"] == "ada@example.com"

    r = live.delete(f"/pools/brokers/members/{mid}")
    assert r.status_code == 200 and mid not in [m["id"] for m in r.json()["members"]]
    error(take(test, second, "ada@example.com"), 403, "not_in_pool")
    assert Task.objects.get(pk=second.pk).status == "open"
    # The Task already taken stays hers until done, given back, or its hold ends.
    assert Task.objects.get(pk=first.pk).member.username == "ada@example.com"


def test_get_pools_lists_each_declared_pool_its_hold_and_its_members(forsale):
    r = forsale["test"].get("/pools")  # either key reads them
    assert r.status_code == 200
    body = r.json()
    assert (body["object"], body["has_more"]) == ("list", False)
    brokers = next(p for p in body["data"] if p["name"] == "brokers")
    assert brokers["hold"] == "2d" and {"service": "deal", "hold": "2d"} in brokers["services"]
    assert sorted(m["username"] for m in brokers["members"]) == ["grace", "linus"]


def test_the_delivery_portal_reads_the_pools_a_member_is_in_in_one_query(forsale):
    grace = get_user_model().objects.get(username="grace")
    brands = [forsale["brand"].id]
    with CaptureQueriesContext(connection) as q:
        mine, open_ = _my_tasks(grace, brands)
    assert len(open_) == 2 and not mine
    assert len(q.captured_queries) == 2  # her Tasks, and the open Tasks of her pools: never one per Task
    PoolMember.objects.filter(membership__user=grace).delete()
    assert _my_tasks(grace, brands)[1] == []


def test_the_console_puts_a_member_in_brokers_and_the_portal_shows_them_its_open_tasks_at_once(forsale):
    brand = forsale["brand"]
    bob = person(brand, "bob", "Bob Owner", role="owner")
    ada = person(brand, "ada", "Ada King")
    portal = member_client("ada")
    assert "Nothing open in your pools" in portal.get("/portal/delivery/").content.decode()

    console = Client()
    console.force_login(bob.user)
    page = console.get("/admin/services/poolmember/")
    assert page.status_code == 200 and 'data-pool="brokers"' in page.content.decode()
    r = console.post("/admin/services/poolmember/", {"do": "add", "brand": brand.id, "pool": "brokers",
                                                     "member": ada.pk}, follow=True)
    assert messages_of(r) == ["Ada King is in brokers: they take its open Tasks from now."]

    tasks = re.findall(r'data-task="(\w+)"', portal.get("/portal/delivery/").content.decode())
    assert len(tasks) == 2
    r = portal.post(f"/portal/delivery/tasks/{tasks[0]}/take", follow=True)
    assert messages_of(r) == ["You hold it now: appraise · deal B-2001 for Beta Foods, due Mon 25 Oct 2027, 07:00 PDT"]

    # Out of brokers from her page in the console: no box ticked.
    r = console.post(f"/admin/timers/membership/{ada.pk}/change/", {"do": "pools"}, follow=True)
    assert messages_of(r) == ["Ada King is out of brokers."]
    assert tasks[1] not in portal.get("/portal/delivery/").content.decode()
    assert portal.post(f"/portal/delivery/tasks/{tasks[1]}/take").status_code == 404
    assert Task.objects.get(pk=tasks[1]).status == "open"


# -- leaving: dates and Tasks to a successor --------------------------------------------------------------------
def test_removing_a_member_hands_every_date_they_answer_for_to_the_successor_on_the_record(acme):
    brand, tc, api = acme["brand"], acme["tc"], acme["live"]
    ada = person(brand, "ada", "Ada Lovelace")
    bob = person(brand, "bob", "Bob Builder")
    # The owner assigns Ada, now one of the brand's people, every date she answered for as Acme's officer.
    for clock in Clock.objects.filter(brand=brand, answers_for="Ada Lovelace"):
        clock_reassign(armer=DirectArmer(brand=brand, domain=clock.domain), clock=clock, to=ada, by="the owner",
                       why="assigned in the owner console")
    theirs = Clock.objects.filter(brand=brand, member=ada)
    waiting = set(theirs.filter(items__status__in=WAITING).values_list("id", flat=True)) | set(
        theirs.filter(lives_on="subject").values_list("id", flat=True))
    kept = set(theirs.values_list("id", flat=True)) - waiting
    assert waiting and kept  # dates still to keep, and clocks whose dates were all kept

    before = written()
    error(api.delete(f"/members/{member_id(ada)}"), 400, "successor_required", "successor")
    assert written() == before

    r = api.delete(f"/members/{member_id(ada)}?successor=bob")
    assert r.status_code == 200, r.content
    body = r.json()
    assert (body["object"], body["deleted"], body["handed_over"]["successor"]) == ("member", True, member_id(bob))
    assert set(body["handed_over"]["clocks"]) == waiting
    assert set(Clock.objects.filter(pk__in=waiting).values_list("answers_for", flat=True)) == {"Bob Builder"}
    assert set(Clock.objects.filter(pk__in=kept).values_list("answers_for", flat=True)) == {"Ada Lovelace"}
    moved = Event.objects.filter(domain=tc, type="clock.reassigned", data__why="member_left")
    assert sorted(e.subject for e in moved) == sorted(waiting)
    assert {(e.data["from"], e.data["to"], e.data["by"]) for e in moved} == {("Ada Lovelace", "Bob Builder",
                                                                              "the brand")}
    assert not Membership.objects.filter(pk=ada.pk).exists()
    assert get_user_model().objects.filter(username="ada").exists()  # the account stays


def test_a_task_goes_to_a_successor_in_its_pool_with_its_hold_and_the_hold_end_reads_the_new_member(forsale):
    live, test, tc = forsale["live"], forsale["test"], forsale["tc"]
    task = open_tasks(tc)[0]
    assert take(test, task, "grace").status_code == 200
    task.refresh_from_db()
    hold, armed = task.hold_until, set(Timer.objects.filter(domain=tc, owner=task.job_id, kind="task",
                                                            status="armed").values_list("key", flat=True))
    r = live.post("/members/grace/remove", {"successor": "linus"})
    assert r.status_code == 200, r.content
    assert r.json()["handed_over"]["tasks"] == [task.id] and r.json()["handed_over"]["reopened"] == []
    task.refresh_from_db()
    assert (task.status, task.member.username, task.hold_until) == ("taken", "linus", hold)
    assert set(Timer.objects.filter(domain=tc, owner=task.job_id, kind="task", status="armed")
               .values_list("key", flat=True)) == armed  # the hold runs on: no timer moved
    ev = Event.objects.get(domain=tc, type="task.handed_over")
    assert (ev.data["task"], ev.data["from"], ev.data["to"], ev.data["why"]) == (task.id, "grace", "linus",
                                                                                "member_left")
    advance(tc, hold)  # the hold's end reads the Task when it fires: linus's hold ended
    ended = Event.objects.get(domain=tc, type="task.reopened", data__task=task.id)
    assert (ended.data["member"], ended.data["why"]) == ("linus", "hold_ended")


def test_a_task_goes_back_to_its_pool_when_the_successor_is_not_in_it(forsale):
    live, test, tc = forsale["live"], forsale["test"], forsale["tc"]
    ada = person(forsale["brand"], "ada", "Ada King")  # not a broker
    task = open_tasks(tc)[0]
    take(test, task, "grace")
    r = live.post("/members/grace/remove", {"successor": member_id(ada)})
    assert r.status_code == 200, r.content
    assert r.json()["handed_over"]["reopened"] == [task.id] and r.json()["handed_over"]["tasks"] == []
    task.refresh_from_db()
    assert (task.status, task.member, task.hold_until) == ("open", None, None)
    ev = Event.objects.get(domain=tc, type="task.reopened", data__task=task.id)
    assert (ev.data["member"], ev.data["why"]) == ("grace", "member_left")
    assert not Timer.objects.filter(domain=tc, owner=task.job_id, kind="task", status="armed").exists()
    assert Timer.objects.filter(domain=tc, owner=task.job_id, kind="task", by="task.member_left").count() == 2
    # linus, still a broker, takes it next.
    assert take(test, Task.objects.get(pk=task.pk), "linus").status_code == 200


def test_a_successor_must_be_another_member_of_the_brand_and_the_last_owner_stays(forsale, acme):
    live, tc = forsale["live"], forsale["tc"]
    take(forsale["test"], open_tasks(tc)[0], "grace")
    stranger = person(acme["brand"], "zed", "Zed Other")
    olive = person(forsale["brand"], "olive", "Olive Owner", role="owner")
    before = written()
    error(live.post("/members/grace/remove", {"successor": member_id(stranger)}), 400, "successor_not_member",
          "successor")
    error(live.post("/members/grace/remove", {"successor": "grace"}), 400, "successor_is_leaver", "successor")
    error(live.post("/members/grace/remove", {}), 400, "successor_required", "successor")
    error(live.delete(f"/members/{member_id(olive)}"), 409, "last_owner")
    error(live.post(f"/members/{member_id(olive)}", {"role": "member"}), 409, "last_owner")
    assert written() == before
    # With a second owner, the first may go, and stops being staff.
    r = live.post("/members/linus", {"role": "owner"})
    assert r.status_code == 200 and r.json()["role"] == "owner"
    assert get_user_model().objects.get(username="linus").is_staff
    assert live.delete(f"/members/{member_id(olive)}").status_code == 200
    assert not get_user_model().objects.get(username="olive").is_staff


# -- who sees whom ------------------------------------------------------------------------------------------------
def test_another_brands_members_are_never_seen_nor_changed(forsale, acme):
    theirs = person(acme["brand"], "zed", "Zed Other")
    api = forsale["live"]
    listed = api.get("/members?limit=100").json()
    assert sorted(m["username"] for m in listed["data"]) == ["grace", "linus"] and not listed["has_more"]
    before = written()
    zid = member_id(theirs)
    for r in (api.get(f"/members/{zid}"), api.post(f"/members/{zid}", {"name": "x"}), api.delete(f"/members/{zid}"),
              api.post(f"/members/{zid}/remove", {}), api.get("/members/zed"),
              api.post("/pools/brokers/members", {"member": zid}), api.delete(f"/pools/brokers/members/{zid}")):
        assert r.status_code == 404 and r.json()["error"]["code"] == "resource_missing", r.content
        assert "Zed" not in r.content.decode()
    assert "zed" not in json.dumps(api.get("/pools").json())
    assert written() == before


def test_a_test_key_reads_members_and_pools_and_a_live_key_changes_them(forsale):
    test = forsale["test"]
    assert test.get("/members").status_code == 200 and test.get("/members/grace").json()["username"] == "grace"
    before = written()
    for r in (test.post("/members", {"email": "ada@example.com"}), test.post("/members/grace", {"name": "G"}),
              test.delete("/members/grace?successor=linus"), test.post("/members/grace/remove", {"successor": "linus"}),
              test.post("/pools/brokers/members", {"member": "grace"}), test.delete("/pools/brokers/members/grace")):
        error(r, 403, "live_mode_only")
    assert written() == before


def test_a_member_never_sees_another_brands_pool_tasks(forsale, acme):
    # zed is in brokers of apis.tax (as data: no Service of apis.tax runs it), not of api.forsale.
    zed = person(acme["brand"], "zed", "Zed Other")
    PoolMember.objects.create(brand=acme["brand"], pool="brokers", membership=zed, added_at=DEALS_OPEN)
    page = member_client("zed").get("/portal/delivery/").content.decode()
    assert "data-task" not in page
    task = open_tasks(forsale["tc"])[0]
    error(take(forsale["test"], task, "zed"), 403, "not_in_pool")


def test_an_owner_sees_and_changes_only_their_brands_members_in_the_console(forsale, acme):
    bob = person(forsale["brand"], "bob", "Bob Owner", role="owner")
    zed = person(acme["brand"], "zed", "Zed Other")
    console = Client()
    console.force_login(bob.user)
    listing = console.get("/admin/timers/membership/").content.decode()
    assert "Grace Hopper" in listing and "Zed" not in listing
    r = console.get(f"/admin/timers/membership/{zed.pk}/change/")
    assert r.status_code == 302 and r["Location"] == "/admin/"
    before = written()
    console.post(f"/admin/timers/membership/{zed.pk}/change/", {"do": "remove"})
    r = console.post("/admin/services/poolmember/", {"do": "add", "brand": acme["brand"].id, "pool": "brokers",
                                                     "member": zed.pk}, follow=True)
    assert messages_of(r)[-1] == "Not done: choose a member and a pool of your brand."
    assert "Zed" not in console.get("/admin/services/poolmember/").content.decode()
    assert written() == before


# -- the console --------------------------------------------------------------------------------------------------
def test_the_console_invites_changes_and_removes_a_member_in_peoples_words(forsale):
    brand = forsale["brand"]
    bob = person(brand, "bob", "Bob Owner", role="owner")
    console = Client()
    console.force_login(bob.user)
    assert console.get("/admin/timers/membership/add/").status_code == 200
    r = console.post("/admin/timers/membership/add/", {"brand": brand.id, "email": "ada@example.com",
                                                       "name": "Ada King", "role": "member"}, follow=True)
    assert messages_of(r) == ["Invite sent to ada@example.com: Ada King is in api.forsale as a member once they "
                              "accept it."]
    assert "Bob Owner invited you to join api.forsale" in mail.outbox[0].body
    ada = Membership.everyone.get(invited_email="ada@example.com")

    # The same address again: the form says so, nothing sent.
    r = console.post("/admin/timers/membership/add/", {"brand": brand.id, "email": "ada@example.com", "role": "member"})
    assert r.status_code == 200 and "member_exists" in r.content.decode() and len(mail.outbox) == 1

    page = f"/admin/timers/membership/{ada.pk}/change/"
    r = console.post(page, {"do": "save", "name": "Ada Lovelace King", "role": "member"}, follow=True)
    assert messages_of(r) == ["Saved: Ada Lovelace King is a member of api.forsale."]
    r = console.post(page, {"do": "pools", "pools": ["brokers"]}, follow=True)
    assert messages_of(r) == ["Ada Lovelace King is in brokers now."]
    r = console.post(page, {"do": "reinvite"}, follow=True)
    assert messages_of(r) == ["A new invite went to ada@example.com."] and len(mail.outbox) == 2
    # The new link replaces the first, which opens nothing now.
    assert "This link has been used" in Client().get(LINK.search(mail.outbox[0].body)[1], follow=True).content.decode()
    accept_new(LINK.search(mail.outbox[1].body)[1])

    # grace holds a Task: removing her needs a successor; ada is a broker, so the Task is hers.
    task = open_tasks(forsale["tc"])[0]
    take(forsale["test"], task, "grace")
    grace = Membership.objects.get(user__username="grace")
    grace_page = f"/admin/timers/membership/{grace.pk}/change/"
    page = console.get(grace_page).content.decode()
    assert "holds 1 Task" in page and "Ada Lovelace King" in page
    r = console.post(grace_page, {"do": "remove", "successor": ""}, follow=True)
    assert messages_of(r) == ["Not done: Grace Hopper answers for 1 Task: name a successor from api.forsale's "
                              "members (successor_required). Nothing was changed."]
    r = console.post(grace_page, {"do": "remove", "successor": str(ada.pk)}, follow=True)
    assert messages_of(r) == ["Grace Hopper left; 1 Task went to Ada Lovelace King."]
    task.refresh_from_db()
    assert task.member.username == "ada@example.com"
    assert Event.objects.get(domain=forsale["tc"], type="task.handed_over").data["by"] == "Bob Owner"


def test_the_tasks_page_and_the_dashboard_assign_from_the_pool_as_data(forsale):
    brand = forsale["brand"]
    bob = person(brand, "bob", "Bob Owner", role="owner")
    console = Client()
    console.force_login(bob.user)
    assert "grace, linus" in console.get("/admin/services/task/").content.decode()
    ada = person(brand, "ada", "Ada King")
    PoolMember.objects.create(brand=brand, pool="brokers", membership=ada, added_at=DEALS_OPEN)
    assert "ada, grace, linus" in console.get("/admin/services/task/").content.decode()


# -- the CLI ------------------------------------------------------------------------------------------------------
def test_the_cli_invites_lists_pools_and_removes_members(forsale, settings):
    settings.KEEPING_TIME = {**settings.KEEPING_TIME, "FEED_HOST": "time.example.com"}
    b = ["--brand", "api.forsale"]
    out = run("members", "invite", "ada@example.com", "--name", "Ada King", *b)
    assert "invited ada@example.com to api.forsale as member with a link to accept" in out
    assert "http://time.example.com/portal/delivery/invite/" in mail.outbox[0].body
    listed = run("members", "list", *b)
    assert "Grace Hopper  grace  member" in listed and "Ada King  ada@example.com  member  invited  no pool" in listed
    assert "is in brokers" in run("pools", "add", "brokers", "ada@example.com", *b)
    assert "brokers  hold 2d  (deal)  Ada King, Grace Hopper, Linus Pauling" in run("pools", "list", *b)
    one_line(["pools", "add", "brokers", "ada@example.com", *b], "member_in_pool")
    one_line(["pools", "add", "nopool", "grace", *b], "unknown_pool")
    one_line(["pools", "remove", "brokers", "nobody", *b], "resource_missing")
    one_line(["members", "invite", "not-an-email", *b], "invalid_email")
    one_line(["members", "invite", "x@example.com", "--role", "boss", *b], "invalid_role")
    one_line(["members", "change", "grace", "--role", "boss", *b], "invalid_role")
    assert "Grace H · member" in run("members", "change", "grace", "--name", "Grace H", *b)

    accept_new(LINK.search(mail.outbox[0].body)[1])
    take(forsale["test"], open_tasks(forsale["tc"])[0], "grace")
    assert "holds 1 Task(s)" in run("members", "show", "grace", *b)
    one_line(["members", "remove", "grace", *b], "successor_required")
    one_line(["members", "remove", "grace", "--successor", "nobody", *b], "successor_not_member")
    out = run("members", "remove", "grace", "--successor", "ada@example.com", *b)
    assert out.startswith("Grace H left; 1 Task went to Ada King.")
    assert "is out of brokers" in run("pools", "remove", "brokers", "ada@example.com", *b)
    brand_get_or_create(name="globex")
    one_line(["members", "list"], "brand_required")  # two brands: name one


# -- bad input: a coded 4xx for every new endpoint, and nothing written -------------------------------------------
NUL, SURROGATE = "a\u0000@example.com", '{"email": "\\ud800@example.com"}'


@pytest.mark.parametrize("body, status, code, param", [
    ({}, 400, "invalid_request", "email"),
    ({"email": "not-an-email"}, 400, "invalid_email", "email"),
    ({"email": 5}, 400, "invalid_request", "email"),
    ({"email": ["a@example.com"]}, 400, "invalid_request", "email"),
    ({"email": NUL}, 400, "invalid_request", "email"),
    ({"email": "a@" + "b" * 150 + ".com"}, 400, "invalid_email", "email"),
    ({"email": "a@example.com", "role": "boss"}, 400, "invalid_request", "role"),
    ({"email": "a@example.com", "role": True}, 400, "invalid_request", "role"),
    ({"email": "a@example.com", "name": "n" * 201}, 400, "invalid_request", "name"),
    ({"email": "a@example.com", "name": None}, 400, "invalid_request", "name"),
    ({"email": "grace"}, 400, "invalid_email", "email"),
])
def test_bad_invites_are_coded_and_write_nothing(forsale, body, status, code, param):
    before = written()
    error(forsale["live"].post("/members", body), status, code, param)
    assert written() == before


def test_bad_bodies_and_queries_on_the_members_endpoints_are_coded_and_write_nothing(forsale):
    api = forsale["live"]
    take(forsale["test"], open_tasks(forsale["tc"])[0], "grace")  # so that a removal would hand something over
    before = written()
    error(api.call("POST", "/members", raw="{not json"), 400, "invalid_json")
    error(api.call("POST", "/members", raw=SURROGATE), 400, "invalid_json")
    error(api.call("POST", "/members", raw='{"email": "a@example.com"}', content_type="text/plain"), 415,
          "unsupported_media_type")
    error(api.call("PUT", "/members", {"email": "a@example.com"}), 405, "method_not_allowed")
    error(api.get("/members?limit=0"), 400, "invalid_request", "limit")
    error(api.get("/members?limit=ten"), 400, "invalid_request", "limit")
    error(api.get("/members?starting_after=nobody"), 404, "resource_missing", "starting_after")
    error(api.get("/members?starting_after=mem_999999"), 404, "resource_missing", "starting_after")
    error(api.get("/members/mem_999999"), 404, "resource_missing")
    error(api.get("/members/" + "x" * 200), 404, "resource_missing")
    error(api.post("/members/grace", {"role": "boss"}), 400, "invalid_request", "role")
    error(api.post("/members/grace", {"name": "n" * 201}), 400, "invalid_request", "name")
    error(api.post("/members/grace", {"name": 5}), 400, "invalid_request", "name")
    error(api.post("/members/nobody", {"name": "x"}), 404, "resource_missing")
    error(api.delete("/members/grace?successor=nobody"), 400, "successor_not_member", "successor")
    error(api.delete("/members/grace?successor=" + "x" * 151), 400, "invalid_request", "successor")
    error(api.delete("/members/grace"), 400, "successor_required", "successor")
    error(api.delete("/members/nobody?successor=linus"), 404, "resource_missing")
    error(api.post("/members/grace/remove", {"successor": 5}), 400, "invalid_request", "successor")
    error(api.post("/members/grace/remove", {"successor": "nobody"}), 400, "successor_not_member", "successor")
    error(api.call("POST", "/members/grace/remove", raw="successor=linus",
                   content_type="application/x-www-form-urlencoded"), 415, "unsupported_media_type")
    assert written() == before


def test_bad_pool_changes_are_coded_and_write_nothing(forsale):
    api = forsale["live"]
    ada = person(forsale["brand"], "ada", "Ada King")  # in no pool
    before = written()
    error(api.post("/pools/nopool/members", {"member": "grace"}), 404, "unknown_pool")
    error(api.post("/pools/brokers/members", {}), 400, "invalid_request", "member")
    error(api.post("/pools/brokers/members", {"member": ""}), 400, "invalid_request", "member")
    error(api.post("/pools/brokers/members", {"member": 7}), 400, "invalid_request", "member")
    error(api.post("/pools/brokers/members", {"member": "nobody"}), 404, "resource_missing", "member")
    error(api.post("/pools/brokers/members", {"member": "grace"}), 409, "member_in_pool", "member")
    error(api.call("POST", "/pools/brokers/members", raw="{"), 400, "invalid_json")
    error(api.delete("/pools/nopool/members/grace"), 404, "unknown_pool")
    error(api.delete("/pools/brokers/members/nobody"), 404, "resource_missing", "member")
    error(api.delete(f"/pools/brokers/members/{member_id(ada)}"), 404, "resource_missing", "member")
    error(api.post("/pools", {}), 405, "method_not_allowed")
    assert written() == before
