"""A business's own people (issue 37): customers have contacts, Services name roles, and who answers for a date
is a person record, resolved when the date opens and again on every change, each time on the record."""

from __future__ import annotations

from datetime import UTC, datetime
from io import StringIO

import pytest
from django.core import mail
from django.core.management import call_command

from calendars.models import Clock, ClockItem, Contact, Subject
from services.declare import ServiceError
from services.models import Notification, PortalSession
from services.registry import module_bundle
from tests.support.cli import one_line, run
from timers.advance import advance
from timers.models import Event, TestClock
from timers.test_clocks import test_clock_create

pytestmark = pytest.mark.django_db

START = datetime(2027, 1, 20, 14, tzinfo=UTC)
NY = {"name": "New York office", "zone": "America/New_York", "holidays": "US-DC"}
ADA = {"name": "Ada Lovelace", "email": "ada@acme.example", "role": "officer"}
BOB = {"name": "Bob Byron", "email": "bob@acme.example", "role": "bookkeeper", "zone": "America/Los_Angeles"}


@pytest.fixture
def tc(brand):
    return test_clock_create(brand=brand, frozen_time=START, name="acme")


@pytest.fixture
def cal(api):
    r = api.post("/calendars", NY, format="json")
    assert r.status_code == 201, r.json()
    return r.json()


def make(api, tc, **extra):
    return api.post("/subjects", {"kind": "taxpayer", "key": "12-3456789", "name": "Acme Robotics",
                                  "test_clock": tc.id, **extra}, format="json")


def events(tc, type_: str) -> list[Event]:
    return list(Event.objects.filter(domain=tc.id, type=type_).order_by("seq"))


def return_clocks(subject_id: str) -> list[Clock]:
    return list(Clock.objects.filter(subject_id=subject_id, name__in=["file", "pay"]).order_by("name", "period"))


# -- contacts over the API ---------------------------------------------------------------------------------------
def test_a_subject_is_made_with_its_contacts_and_the_first_is_primary(api, tc, cal):
    r = make(api, tc, contacts=[ADA, BOB])
    assert r.status_code == 201, r.json()
    contacts = r.json()["contacts"]
    assert [(c["name"], c["role"], c["primary"]) for c in contacts] == [
        ("Ada Lovelace", "officer", True), ("Bob Byron", "bookkeeper", False)]
    assert contacts[1]["zone"] == "America/Los_Angeles" and contacts[0]["zone"] is None
    listed = api.get(f"/subjects/{r.json()['id']}/contacts").json()
    assert listed["object"] == "list" and [c["id"] for c in listed["data"]] == [c["id"] for c in contacts]


@pytest.mark.parametrize(("contact", "code", "param"), [
    ({"name": "Ada", "email": "not an address"}, "invalid_email", "contacts[0].email"),
    ({"name": "Ada", "email": "ada@acme.example", "role": "Chief Officer"}, "invalid_role", "contacts[0].role"),
    ({"name": "Ada", "email": "ada@acme.example", "phone": "call me"}, "invalid_phone", "contacts[0].phone"),
    ({"name": "Ada", "email": "ada@acme.example", "zone": "Mars/Olympus"}, "invalid_zone", "contacts[0].zone"),
    ({"name": "Ada\nLovelace", "email": "ada@acme.example"}, "invalid_name", "contacts[0].name"),
    ({"name": "\u200b\u200b", "email": "ada@acme.example"}, "invalid_name", "contacts[0].name"),
    ({"email": "ada@acme.example"}, "invalid_name", "contacts[0].name"),
])
def test_a_bad_contact_is_a_coded_400_with_its_param_and_nothing_is_written(api, tc, cal, contact, code, param):
    r = make(api, tc, contacts=[contact])
    assert r.status_code == 400, r.json()
    assert (r.json()["error"]["code"], r.json()["error"]["param"]) == (code, param), r.json()
    assert not Subject.objects.exists() and not Contact.objects.exists()


def test_a_customers_first_contact_is_primary_even_when_it_says_not(api, tc, cal):
    subject = make(api, tc).json()
    first = api.post(f"/subjects/{subject['id']}/contacts", {**ADA, "primary": False}, format="json")
    assert first.status_code == 201 and first.json()["primary"] is True, first.json()
    second = api.post(f"/subjects/{subject['id']}/contacts", {**BOB, "primary": False}, format="json")
    assert second.status_code == 201 and second.json()["primary"] is False, second.json()


def test_contacts_are_added_changed_made_primary_and_removed(api, tc, cal):
    subject = make(api, tc, contacts=[ADA]).json()
    base = f"/subjects/{subject['id']}/contacts"
    bob = api.post(base, BOB, format="json")
    assert bob.status_code == 201 and bob.json()["primary"] is False, bob.json()
    again = api.post(base, {**BOB, "name": "Robert"}, format="json")
    assert again.status_code == 409 and again.json()["error"]["code"] == "contact_exists"
    bad = api.post(f"{base}/{bob.json()['id']}", {"email": "nope"}, format="json")
    assert bad.status_code == 400 and bad.json()["error"] == {
        "type": "invalid_request_error", "code": "invalid_email", "param": "email",
        "message": bad.json()["error"]["message"]}
    assert Contact.objects.get(pk=bob.json()["id"]).email == BOB["email"]  # nothing written
    made = api.post(f"{base}/{bob.json()['id']}", {"primary": True, "phone": "+1 212 555 0100"}, format="json")
    assert made.status_code == 200 and made.json()["primary"] is True and made.json()["phone"] == "+1 212 555 0100"
    assert [c.name for c in Contact.objects.filter(subject_id=subject["id"], primary=True)] == ["Bob Byron"]
    # Who is primary changes by naming another: false is refused, even for one who is not (nothing written).
    for who in (bob.json()["id"], Contact.objects.get(subject_id=subject["id"], name="Ada Lovelace").id):
        unmade = api.post(f"{base}/{who}", {"primary": False, "name": "Someone Else"}, format="json")
        assert (unmade.status_code, unmade.json()["error"]["param"]) == (400, "primary"), unmade.json()
    assert sorted(Contact.objects.filter(subject_id=subject["id"]).values_list("name", "primary")) == [
        ("Ada Lovelace", False), ("Bob Byron", True)]
    gone = api.delete(f"{base}/{bob.json()['id']}")
    assert gone.status_code == 200 and gone.json() == {"id": bob.json()["id"], "object": "contact", "deleted": True}
    # The primary left: the next oldest is primary now.
    assert [(c.name, c.primary) for c in Contact.objects.filter(subject_id=subject["id"])] == [("Ada Lovelace", True)]
    assert api.get(f"{base}/{bob.json()['id']}").status_code == 404


def test_another_brands_subject_and_contact_are_not_found(api, tc, cal, client):
    from rest_framework.test import APIClient

    from timers.tenants import api_key_create, brand_get_or_create

    subject = make(api, tc, contacts=[ADA]).json()
    other = APIClient()
    other.credentials(HTTP_AUTHORIZATION=f"Bearer {api_key_create(brand=brand_get_or_create(name='globex'))[1]}")
    ada = subject["contacts"][0]["id"]
    assert other.get(f"/subjects/{subject['id']}/contacts").status_code == 404
    assert other.post(f"/subjects/{subject['id']}/contacts", BOB, format="json").status_code == 404
    assert other.delete(f"/subjects/{subject['id']}/contacts/{ada}").status_code == 404
    assert other.post("/portal_sessions", {"subject": subject["id"], "contact": ada}, format="json").status_code == 404
    assert Contact.objects.filter(subject_id=subject["id"]).count() == 1


# -- roles, resolved to people ----------------------------------------------------------------------------------
def test_a_customer_with_no_contact_has_nobody_named_and_a_new_contact_takes_their_dates_on_the_record(api, tc, cal):
    subject = make(api, tc).json()
    job = api.post("/jobs", {"subject": subject["id"], "service": "annual-return", "period": "2026"}, format="json")
    assert job.status_code == 201, job.json()
    clocks = return_clocks(subject["id"])
    assert {(c.role, c.answers_for, c.contact_id) for c in clocks} == {("customer:officer", "", None)}
    opened = [e for e in events(tc, "clock.assigned") if e.data["why"] == "opened"]
    assert {(e.data["role"], e.data["to"]) for e in opened} == {("customer:officer", "")}

    # A bookkeeper is the primary contact: the officer's dates fall back to them until an officer is named.
    api.post(f"/subjects/{subject['id']}/contacts", BOB, format="json")
    assert {c.answers_for for c in return_clocks(subject["id"])} == {"Bob Byron"}
    ada = api.post(f"/subjects/{subject['id']}/contacts", ADA, format="json").json()
    assert {(c.answers_for, c.contact_id) for c in return_clocks(subject["id"])} == {("Ada Lovelace", ada["id"])}
    moved = [(e.subject, e.data["was"], e.data["to"], e.data["why"]) for e in events(tc, "clock.assigned")
             if e.data["why"] != "opened"]
    assert {(w, t, why) for _, w, t, why in moved} == {("", "Bob Byron", "contact added"),
                                                       ("Bob Byron", "Ada Lovelace", "contact added")}
    assert len(moved) == 2 * len(clocks)  # one line per date that changed hands, each time

    # Ada leaves: her dates go back to whoever the role names now.
    api.delete(f"/subjects/{subject['id']}/contacts/{ada['id']}")
    assert {c.answers_for for c in return_clocks(subject["id"])} == {"Bob Byron"}


def test_a_date_the_brand_handles_stays_with_the_brand_when_contacts_change(api, tc, cal):
    from calendars.acts import clock_reassign
    from calendars.roles import STEWARD
    from timers.armer import DirectArmer

    subject = make(api, tc, contacts=[ADA]).json()
    api.post("/jobs", {"subject": subject["id"], "service": "annual-return", "period": "2026"}, format="json")
    pay = Clock.objects.get(subject_id=subject["id"], name="pay")
    clock_reassign(armer=DirectArmer(brand=pay.brand_id, domain=tc.id), clock=pay, to=STEWARD, by="Ada Lovelace",
                   why="the customer handed it to the brand")
    api.post(f"/subjects/{subject['id']}/contacts", {**BOB, "role": "officer", "primary": True}, format="json")
    pay.refresh_from_db()
    assert (pay.answers_for, pay.assigned) == ("the brand", True)
    assert Clock.objects.get(subject_id=subject["id"], name="file").answers_for == "Bob Byron"


def test_a_service_that_names_a_person_where_a_role_belongs_stops_the_load(tmp_path, monkeypatch):
    pkg = tmp_path / "named_person"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "plan.py").write_text(
        "from services.declare import Price, Service, SubjectSpec, clock\n"
        "from datetime import date\n\n"
        "def due(x):\n    return date(int(x.period) + 1, 4, 15)\n\n"
        "report = Service(name='named-report', subject=SubjectSpec(kind='company', key='id'), price=Price(usd=10),\n"
        "                 clocks={'file': clock('file', due=due, answers_for='Ada Lovelace')})\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(ServiceError) as err:
        module_bundle("named_person.plan")
    text = str(err.value)
    assert text.startswith(str(pkg / "plan.py")) or "named_person/plan.py" in text, text
    assert "clocks.file.answers_for" in text and "'Ada Lovelace'" in text, text


def test_the_examples_name_roles_and_no_person(settings):
    from pathlib import Path

    from tests.support import ROOT

    for path in (ROOT / "services" / "examples").rglob("*.py"):
        text = Path(path).read_text()
        for name in ("Ada Lovelace", "Lovelace", "Hedy", "Grace Hopper", "Linus"):
            assert name not in text, (path, name)


# -- who hears, for real -----------------------------------------------------------------------------------------
def test_acme_example_makes_ada_the_primary_officer_and_her_notices_and_lapses_email_her(settings):
    settings.EMAIL_BACKEND = "django.core.mail.backends.locmem.EmailBackend"
    call_command("loadexample", "apis_tax", stdout=StringIO())
    tc = TestClock.objects.get(seed="apis_tax")
    acme = Subject.objects.get(domain=tc.id, key="12-3456789")
    [ada] = acme.contacts.all()
    assert (ada.name, ada.role, ada.primary) == ("Ada Lovelace", "officer", True)
    advance(tc.id, datetime(2027, 4, 16, 14, tzinfo=UTC))
    file_us = ClockItem.objects.get(clock__subject=acme, clock__name="file", clock__period="2026", item="US")
    assert file_us.clock.contact_id == ada.pk and file_us.clock.answers_for == "Ada Lovelace"
    # A notice rang for her (notice 30d on 2027-03-16) and reached her inbox, at her address.
    notes = Notification.objects.filter(domain=tc.id, contact=ada)
    assert notes.filter(kind="clock.notice").exists()
    to_ada = [m for m in mail.outbox if m.to == ["ada@acme-robotics.example"]]
    assert to_ada and any("is due" in m.body for m in to_ada)
    assert all("clock." not in m.subject and "ctc_" not in m.body for m in to_ada)


def test_kt_people_stops_the_start_saying_where_people_live_now():
    import os
    import subprocess
    import sys

    from tests.support import ROOT

    env = {**os.environ, "KT_PEOPLE": "Ada Lovelace=ada@example.com", "DJANGO_SETTINGS_MODULE": "keeping_time.settings"}
    p = subprocess.run([sys.executable, "manage.py", "check"], cwd=ROOT, env=env, capture_output=True, text=True,
                       timeout=120)
    assert p.returncode != 0
    assert "KT_PEOPLE is retired" in p.stderr and "contacts" in p.stderr and "Traceback" not in p.stderr.split(
        "ImproperlyConfigured")[-1], p.stderr[-600:]


# -- portal links, one contact each ----------------------------------------------------------------------------
def test_a_portal_link_is_for_one_contact_default_the_primary(api, tc, cal):
    subject = make(api, tc, contacts=[ADA, BOB]).json()
    ada, bob = (c["id"] for c in subject["contacts"])
    first = api.post("/portal_sessions", {"subject": subject["id"]}, format="json").json()
    second = api.post("/portal_sessions", {"subject": subject["id"], "contact": bob}, format="json").json()
    assert (first["contact"], second["contact"]) == (ada, bob)
    assert PortalSession.objects.get(pk=second["id"]).contact.name == "Bob Byron"
    missing = api.post("/portal_sessions", {"subject": subject["id"], "contact": "ctc_nobody"}, format="json")
    assert missing.status_code == 404 and missing.json()["error"]["param"] == "contact"


# -- the CLI -----------------------------------------------------------------------------------------------------
def test_subjects_contacts_add_list_remove_and_bad_input_in_one_line(brand, tc, cal):
    made = run("subjects", "create", "--kind", "taxpayer", "--key", "12-3456789", "--name", "Acme Robotics",
               "--brand", brand.name, "--test-clock", tc.id, "--contact", "Ada Lovelace <ada@acme.example> officer")
    subject_id = made.split(" · ")[0]
    assert "Ada Lovelace · ada@acme.example · officer · primary" in made
    added = run("subjects", "contacts", "add", subject_id, "--name", "Bob Byron", "--email", "bob@acme.example",
                "--role", "bookkeeper", "--zone", "America/Los_Angeles")
    bob = added.split(" · ")[0]
    assert added.strip().endswith("bookkeeper · America/Los_Angeles")
    listed = run("subjects", "contacts", "list", subject_id).splitlines()
    assert [line.split(" · ")[1] for line in listed] == ["Ada Lovelace", "Bob Byron"]
    one_line(["subjects", "contacts", "add", subject_id, "--name", "Eve", "--email", "eve"], "invalid_email")
    one_line(["subjects", "contacts", "add", subject_id, "--name", "Eve", "--email", "eve@x.example", "--role",
              "Boss Lady"], "invalid_role")
    assert Contact.objects.filter(subject_id=subject_id).count() == 2
    assert "no longer a contact" in run("subjects", "contacts", "remove", subject_id, bob)
    assert [c.name for c in Contact.objects.filter(subject_id=subject_id)] == ["Ada Lovelace"]


def test_a_contacts_link_opens_only_their_own_customers_portal(api, tc, cal, client):
    acme = make(api, tc, contacts=[ADA]).json()
    globex = api.post("/subjects", {"kind": "taxpayer", "key": "98-7654321", "name": "Globex", "test_clock": tc.id,
                                    "contacts": [BOB]}, format="json").json()
    for s in (acme, globex):
        assert api.post("/jobs", {"subject": s["id"], "service": "annual-return", "period": "2026"},
                        format="json").status_code == 201
    theirs = Clock.objects.get(subject_id=globex["id"], name="file")
    link = api.post("/portal_sessions", {"subject": acme["id"]}, format="json").json()["url"]
    assert client.get(link.split("://", 1)[1].split("/", 1)[1].join(["/", ""])).status_code == 302
    page = client.get("/portal/customer/").content.decode()
    assert "Acme Robotics" in page and "Globex" not in page and "Bob Byron" not in page
    # Globex's date, acted on from Acme's link: not found, and nothing done.
    for act in ("done", "acknowledge", "steward"):
        assert client.post(f"/portal/customer/clocks/{theirs.id}/US/{act}").status_code == 404
    assert set(ClockItem.objects.filter(clock=theirs).values_list("status", flat=True)) == {"open"}
    assert not Event.objects.filter(domain=tc.id, subject__startswith=theirs.id,
                                    type__in=["clock.satisfied", "clock.acknowledged", "clock.reassigned"]).exists()


def test_a_date_nobody_is_named_for_offers_no_remind_and_says_so(api, tc, cal, brand):
    from portals.owner.risks import dates_at_risk
    from portals.owner.scope import AsOf
    from timers.domains import domain_now

    subject = make(api, tc).json()  # no contact yet
    api.post("/jobs", {"subject": subject["id"], "service": "annual-return", "period": "2026"}, format="json")
    advance(tc.id, datetime(2027, 4, 9, 14, tzinfo=UTC))  # the federal date is six days off
    tc.refresh_from_db()
    at = AsOf(domain=tc.id, clock=tc, now=domain_now(domain=tc.id), zone="America/New_York",
              brand_ids=frozenset({brand.id}), chosen=True)
    rows = [r for r in dates_at_risk(at) if r.on == "Acme Robotics" and r.ref.startswith("clk_")]
    assert rows
    for row in rows:
        assert "remind" not in {c.act for c in row.controls}, row
        assert "has nobody to remind: add a contact" in row.why, row.why
    # A contact added: the same rows offer Remind, naming them.
    api.post(f"/subjects/{subject['id']}/contacts", ADA, format="json")
    rows = [r for r in dates_at_risk(at) if r.ref in {r.ref for r in rows}]
    assert all(any(c.label == "Remind Ada Lovelace" for c in r.controls) for r in rows)
