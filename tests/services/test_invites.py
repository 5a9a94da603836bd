"""Tenants never touch (issue 36, item 3): an invite is an invitation the address's owner accepts.

`POST /members {email}` for an address that has an account on another brand makes nothing of it: no
membership, no staff, no pool place, until the account's owner opens the one-time link, signs in and joins.
The API's answer, the listing and the email are the same, value for value, for an address with an account
and one without. The access matrix: invited and not accepted, the account sees nothing of the brand in the
owner console, the delivery portal or the API (a Task taken in its name); accepted, it does.
"""

from __future__ import annotations

import json
import re

import pytest
from django.contrib.auth import get_user_model
from django.core import mail
from django.test import Client

from services.models import Task
from tests.services import test_members
from tests.services.test_members import LINK, error, messages_of, open_tasks, person, take
from timers.models import Membership

pytestmark = pytest.mark.django_db
forsale, acme = test_members.forsale, test_members.acme  # the same brands as the members' tests


def _signed_in(username: str, password: str = "pw") -> Client:
    c = Client()
    assert c.login(username=username, password=password)
    return c


def _portal(client: Client) -> str:
    return client.get("/portal/delivery/").content.decode()


def test_an_account_on_another_brand_is_invited_and_gets_nothing_until_it_accepts_by_the_link(forsale, acme):
    # Ada has an account, as a member of apis.tax; api.forsale invites her address, as an owner, into brokers.
    ada = person(acme["brand"], "ada", "Ada Lovelace").user
    ada.email = "ada@example.com"
    ada.save(update_fields=["email"])
    live, test = forsale["live"], forsale["test"]
    r = live.post("/members", {"email": "ada@example.com", "name": "Ada L", "role": "owner"})
    assert r.status_code == 201, r.content
    mid = r.json()["id"]
    assert live.post("/pools/brokers/members", {"member": mid}).status_code == 200
    link = LINK.search(mail.outbox[0].body)[1]

    # Not accepted: no membership of api.forsale, not staff, nothing in the console, the portal or the API.
    ada.refresh_from_db()
    assert list(Membership.objects.filter(user=ada).values_list("brand__name", flat=True)) == ["apis.tax"]
    assert not ada.is_staff
    her = _signed_in("ada")
    assert her.get("/admin/").status_code == 302  # the console's login: she owns no brand
    page = _portal(her)
    assert "api.forsale" not in page and "data-task" not in page
    task = open_tasks(forsale["tc"])[0]
    assert her.post(f"/portal/delivery/tasks/{task.id}/take").status_code == 404
    error(take(test, task, "ada"), 403, "not_in_pool")  # as for anyone who is no member of the brand
    assert Task.objects.get(pk=task.pk).status == "open"

    # Someone else signed in cannot take it; anyone not signed in is sent to sign in first.
    zed = _signed_in(person(acme["brand"], "zed", "Zed Other").user.get_username())
    assert zed.get(link).status_code == 302
    said = zed.get("/portal/delivery/invite/accept").content.decode()
    assert "this invite is for ada@example.com" in said
    r = zed.post("/portal/delivery/invite/accept")
    assert r.status_code == 400 and "sign in as that account" in r.content.decode()
    anonymous = Client()
    anonymous.get(link)
    assert "ada@example.com has a Keeping Time account" in anonymous.get("/portal/delivery/invite/accept") \
        .content.decode()
    r = anonymous.post("/portal/delivery/invite/accept", {"password1": "x-Long-pw-1", "password2": "x-Long-pw-1"})
    assert r.status_code == 302 and r["Location"].startswith("/portal/delivery/login?next=")
    assert not get_user_model().objects.filter(username="ada@example.com").exists()  # no second account made
    assert not Membership.objects.filter(brand=forsale["brand"], user__username__in=["ada", "zed"]).exists()

    # Accepted: she signs in, opens the link, joins; the brand is hers to see and work in.
    assert her.get(link).status_code == 302
    assert "Join api.forsale" in her.get("/portal/delivery/invite/accept").content.decode()
    r = her.post("/portal/delivery/invite/accept", follow=True)
    assert "You are in api.forsale now." in messages_of(r)
    ada.refresh_from_db()
    assert ada.is_staff and her.get("/admin/").status_code == 200
    assert "data-task" in _portal(her)
    assert take(test, task, "ada").status_code == 200
    body = live.get(f"/members/{mid}").json()
    assert (body["username"], body["status"], body["pools"]) == ("ada", "active", ["brokers"])
    # The link is spent.
    assert "This link has been used" in Client().get(link, follow=True).content.decode()


def _same(body: dict, address: str) -> str:
    return re.sub(r"mem_[0-9]+", "mem_N", json.dumps(body, sort_keys=True).replace(address, "ADDRESS"))


def test_the_answer_is_the_same_for_an_address_with_an_account_and_one_without(forsale, acme):
    grace = person(acme["brand"], "grace.h", "Grace Hopper").user  # an account whose username is not its address
    grace.email = "grace@example.com"
    grace.save(update_fields=["email"])
    live = forsale["live"]
    answers = {}
    for address in ("grace@example.com", "nobody@example.com"):
        r = live.post("/members", {"email": address, "name": "Someone", "role": "member"})
        assert r.status_code == 201
        mid = r.json()["id"]
        listed = next(m for m in live.get("/members?limit=100").json()["data"] if m["id"] == mid)
        answers[address] = (r.status_code, sorted(r.headers.keys()), _same(r.json(), address),
                            _same(live.get(f"/members/{mid}").json(), address), _same(listed, address))
    assert answers["grace@example.com"] == answers["nobody@example.com"]
    assert '"username": "ADDRESS"' in answers["grace@example.com"][2] and "grace.h" not in json.dumps(answers)
    # The emails too, but for the address and its link.
    first, second = (re.sub(r"/invite/\S+", "/invite/LINK", m.body.replace(m.to[0], "ADDRESS")) for m in mail.outbox)
    assert first == second and "grace.h" not in first
    # Inviting an address again is refused the same way, whoever it names.
    for address in ("grace@example.com", "nobody@example.com"):
        error(live.post("/members", {"email": address}), 409, "member_exists", "email")


def test_an_invites_link_is_cut_to_a_prefix_in_every_request_log():
    from keeping_time.log_filters import redact

    token = "Kc4tS6" + "x" * 37
    assert redact(f'"GET /portal/delivery/invite/{token} HTTP/1.1" 302') == \
        '"GET /portal/delivery/invite/Kc4tS6… HTTP/1.1" 302'
    assert redact("/portal/delivery/invite/accept") == "/portal/delivery/invite/accept"
