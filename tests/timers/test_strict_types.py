"""Strict types (issue 25, item 8): a number field takes a JSON number and a boolean a JSON boolean, never the
same written as a string ("7", "true"): 400 naming the field. The operations and fields are read from the
API's own /openapi.json, so a new number or boolean in a request body can't escape: the test fails until its
operation has a valid body below. A form-encoded body (every value text) still writes them as strings.

Names the API or a command stores take no control characters (400 invalid_name; one CLI line with the code),
and createapikey's --brand of 201 characters is one line with a code, not a traceback.
"""

from __future__ import annotations

import copy
import json
from datetime import UTC, datetime
from io import StringIO
from urllib.parse import urlencode

import jsonschema_rs
import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.test import Client

from calendars.models import Calendar, Clock, Subject
from services.models import Job
from services.versions import version_deploy
from tests.support.acme import tax_plan_subscribers
from tests.support.cli import one_line
from timers import webhooks
from timers.advance import advance
from timers.models import ApiKey, Brand, Membership, TestClock
from timers.schedules import schedule_create
from timers.tenants import api_key_create
from timers.test_clocks import test_clock_create

pytestmark = pytest.mark.django_db

START = datetime(2027, 1, 20, 14, tzinfo=UTC)
NOW = datetime(2027, 3, 1, 14, tzinfo=UTC)
LATER = int(datetime(2027, 3, 2, tzinfo=UTC).timestamp())

# A body each operation takes, with every number and boolean its schema has ({ids} filled from the world).
BODIES: dict[str, dict] = {
    "POST /calendars": {"name": "New York office", "zone": "America/New_York", "weekends": [5, 6],
                        "default": False},
    "POST /calendars/{calendar_id}": {"weekends": [6], "default": False},
    "POST /clocks/{clock_id}/penalties": {"notice": "CP14", "amount": 1250, "currency": "usd"},
    "POST /owner/jobs/{job_id}/repin": {"to": "2027-06", "dry_run": True},
    "POST /policies": {"service": "deal", "name": "stall_days", "value": 7, "test_clock": "{tc}"},
    "POST /subjects": {"kind": "taxpayer", "key": "98-7654321", "name": "Byron Robotics", "test_clock": "{tc}",
                       "calendar": "{calendar_id}",
                       "contacts": [{"name": "Bob Byron", "email": "bob@byron.example", "primary": True}]},
    "POST /subjects/{subject_id}/contacts": {"name": "Bob Byron", "email": "bob@acme.example", "primary": False},
    "POST /subjects/{subject_id}/contacts/{contact_id}": {"primary": True},
    "POST /schedules": {"test_clock": "{tc}", "spec": {"every": "1d"},
                        "target": {"url": "http://127.0.0.1:9/hook", "timeout": 10, "retries": 3},
                        "buffer_limit": 5, "catchup_window": 3600, "paused": True, "start_at": LATER,
                        "end_at": LATER + 30 * 86400, "remaining_actions": 3},
    "POST /schedules/{schedule_id}": {"revision": 1, "spec": {"every": "2d"}, "buffer_limit": 5,
                                      "target": {"url": "http://127.0.0.1:9/hook", "timeout": 10, "retries": 3},
                                      "catchup_window": 3600, "paused": True, "start_at": LATER,
                                      "end_at": LATER + 30 * 86400, "remaining_actions": 3},
    "POST /schedules/{schedule_id}/backfill": {"start": LATER - 3 * 86400, "end": LATER},
    "POST /test_clocks": {"frozen_time": LATER, "name": "strict"},
    "POST /test_clocks/{clock_id}/advance": {"to": LATER, "redeliver": False},
    "POST /timers": {"key": "job_1:task:prep:2027", "owed_at": LATER, "handler": "noop", "test_clock": "{tc}"},
    "POST /webhook_endpoints/{endpoint_id}": {"disabled": True},
    "POST /windows": {"member": "ada", "hours": 8, "test_clock": "{tc}"},
}


class World:
    """A brand on a test clock with a Tax Plan customer ticked to March 2027 (a job, its clocks, a stored version),
    a member, a calendar of its own and a webhook endpoint; a test key."""

    def __init__(self, brand: Brand):
        self.brand = brand
        self.tc = test_clock_create(brand=brand, frozen_time=START, name="strict")
        tax_plan_subscribers(brand, self.tc, 1)
        advance(self.tc.id, NOW)
        version_deploy(domain=self.tc.id, at=NOW, module="services.examples.apis_tax.annual_return_2027_06",
                       name="2027-06")
        self.job = Job.objects.get(domain=self.tc.id, service="annual-return", period="2026")
        Membership.objects.create(user=get_user_model().objects.create_user("ada"), brand=brand, role="member",
                                  name="Ada")
        self.calendar = Calendar.objects.create(brand=brand, name="Spare", zone="UTC")
        self.endpoint = webhooks.endpoint_create(brand=brand, livemode=False, url="https://example.com/hooks",
                                                 enabled_events=["*"])
        self.schedule = schedule_create(brand=brand, domain=self.tc.id, spec={"every": "1d"},
                                        target={"url": "http://127.0.0.1:9/hook"})
        _, self.key = api_key_create(brand=brand)
        self.client = Client(enforce_csrf_checks=True, raise_request_exception=False)
        subject = Subject.objects.get(domain=self.tc.id)
        self.ids = {"tc": self.tc.id, "clock_id": Clock.objects.filter(domain=self.tc.id).first().id,
                    "calendar_id": self.calendar.id, "job_id": self.job.id, "endpoint_id": self.endpoint.id,
                    "subject_id": subject.id, "contact_id": subject.contacts.get().id,
                    "schedule_id": self.schedule.id}

    def fill(self, value):
        if isinstance(value, str) and value.startswith("{") and value.endswith("}"):
            return self.ids[value[1:-1]]
        if isinstance(value, dict):
            return {k: self.fill(v) for k, v in value.items()}
        return value

    def path(self, template: str) -> str:
        # {clock_id} names a test clock under /test_clocks, a date's clock under /clocks.
        return template.format(**{**self.ids, **({"clock_id": self.tc.id} if template.startswith("/test_clocks/")
                                                 else {})})

    def post(self, path: str, body, *, form: bool = False):
        if form:
            return self.client.post(path, urlencode(body), content_type="application/x-www-form-urlencoded",
                                    HTTP_AUTHORIZATION=f"Bearer {self.key}")
        return self.client.post(path, json.dumps(body), content_type="application/json",
                                HTTP_AUTHORIZATION=f"Bearer {self.key}")


@pytest.fixture
def world(brand) -> World:
    return World(brand)


@pytest.fixture(scope="module")
def schema(django_db_blocker) -> dict:
    with django_db_blocker.unblock():
        return Client().get("/openapi.json").json()


def _resolve(schema: dict, node: dict) -> dict:
    while "$ref" in node:
        node = schema["components"]["schemas"][node["$ref"].rsplit("/", 1)[1]]
    return node


def typed_leaves(schema: dict, node: dict, path: tuple = ()) -> list[tuple[tuple, str, dict]]:
    """Every (path, type, schema) of a number, integer or boolean in a body's schema; an array's item is index 0."""
    node = _resolve(schema, node)
    found = []
    for key in ("oneOf", "anyOf", "allOf"):
        for branch in node.get(key, []):
            found += [(p, t, node) for p, t, _ in typed_leaves(schema, branch, path)]
    if node.get("type") in ("integer", "number", "boolean"):
        found.append((path, node["type"], node))
    for name, prop in node.get("properties", {}).items():
        found += typed_leaves(schema, prop, (*path, name))
    if node.get("type") == "array" and "items" in node:
        found += typed_leaves(schema, node["items"], (*path, 0))
    return found


def operations(schema: dict) -> dict[str, list[tuple[tuple, str, dict]]]:
    """Each operation whose JSON body holds a number or boolean: its leaves."""
    ops = {}
    for path, item in schema["paths"].items():
        for method, op in item.items():
            body = op.get("requestBody", {}).get("content", {}).get("application/json")
            if body is None:
                continue
            leaves = typed_leaves(schema, body["schema"])
            if leaves:
                ops[f"{method.upper()} {path}"] = list({leaf[0]: leaf for leaf in leaves}.values())
    return ops


def _get(body, path):
    for part in path:
        body = body[part]
    return body


def _set(body, path, value):
    for part in path[:-1]:
        body = body[part]
    body[path[-1]] = value


def as_string(value) -> str:
    return json.dumps(value) if isinstance(value, bool) else str(value)


def test_every_body_with_a_number_or_boolean_has_a_body_here(schema):
    """A new operation, or a new number field on one, fails here until BODIES gives it a value: none escapes."""
    ops = operations(schema)
    assert set(ops) - set(BODIES) == set(), "add a valid body to BODIES for these operations"
    assert len(ops) >= 10, sorted(ops)
    for name, leaves in ops.items():
        for path, _, _ in leaves:
            try:
                _get(BODIES[name], path)
            except (KeyError, IndexError):
                pytest.fail(f"BODIES[{name!r}] has no {'.'.join(map(str, path))}: give it a value")


def test_every_number_and_boolean_refuses_its_value_as_a_string_and_takes_it_as_json(world, schema):
    checked = []
    for name, leaves in sorted(operations(schema).items()):
        method, template = name.split(" ", 1)
        body = world.fill(BODIES[name])
        for path, _kind, node in leaves:
            value = _get(body, path)
            text = as_string(value)
            # A field that also takes a string (an instant's RFC 3339, a window's "45m") may take this one.
            strings = [b for b in node.get("oneOf", []) + node.get("anyOf", []) if b.get("type") == "string"]
            if any(jsonschema_rs.Draft4Validator(b, validate_formats=True).is_valid(text) for b in strings):
                continue
            bad = copy.deepcopy(body)
            _set(bad, path, text)
            r = world.post(world.path(template), bad)
            field = ".".join(map(str, path))
            assert r.status_code == 400, (name, field, r.status_code, r.content[:300])
            err = r.json()["error"]
            assert err["type"] == "invalid_request_error" and err["code"].startswith("invalid"), (name, field, err)
            assert (err.get("param") or "").startswith(str(path[0])) or str(path[-1]) in err["message"], \
                (name, field, err)
            checked.append(f"{name} {field}")
    # Each number and boolean the bodies hold, as JSON: taken (after the refusals, so one body makes one thing).
    # The advance last: its clock is advancing after it (202), which other writes on the clock wait out.
    for name in sorted(operations(schema), key=lambda n: (n.endswith("/advance"), n)):
        method, template = name.split(" ", 1)
        r = world.post(world.path(template), world.fill(BODIES[name]))
        assert r.status_code in (200, 201, 202), (name, r.status_code, r.content[:400])
    assert len(checked) >= 18, checked
    assert "POST /clocks/{clock_id}/penalties amount" in checked
    assert "POST /calendars weekends.0" in checked


def test_an_amount_is_whole_cents_with_a_currency_and_a_form_writes_it_as_digits(world, schema):
    """Stripe's amount: 30000 is $300.00. A float or a dollar string once read as dollars turned 30000 into
    3,000,000 cents; now each is 400 invalid_amount."""
    said = schema["components"]["schemas"]["ClockPenalty"]["properties"]["amount"]
    assert {k: said.get(k) for k in ("type", "minimum", "maximum")} == {"type": "integer", "minimum": 1,
                                                                       "maximum": 99_999_999}
    path = f"/clocks/{world.ids['clock_id']}/penalties"
    for amount in (5, 30_000, 99_999_999):
        r = world.post(path, {"notice": f"CP{amount}", "amount": amount, "currency": "usd"})
        assert r.status_code == 201, r.content
        assert (r.json()["amount"], r.json()["currency"], r.json()["amount_cents"]) == (amount, "usd", amount)
    for amount in ("5", "5.00", "$300", True, 300.0, 0.35, 0, -1, 100_000_000, 1e10):
        r = world.post(path, {"notice": "CP-bad", "amount": amount})
        err = r.json()["error"]
        assert r.status_code == 400 and (err["param"], err["code"]) == ("amount", "invalid_amount"), (amount, err)
    r = world.post(path, {"notice": "CP-eur", "amount": 5, "currency": "eur"})
    assert r.status_code == 400 and r.json()["error"]["code"] == "invalid_currency", r.content
    # Stripe's clients send forms: every value is text there, a whole number as its digits.
    r = world.post(path, {"notice": "CP-form", "amount": "1250"}, form=True)
    assert r.status_code == 201 and r.json()["amount_cents"] == 1250, r.content
    r = world.post(path, {"notice": "CP-form2", "amount": "12.50"}, form=True)
    assert r.status_code == 400 and r.json()["error"]["code"] == "invalid_amount", r.content
    r = world.post(f"/test_clocks/{world.tc.id}/advance", {"to": str(LATER), "redeliver": "false"}, form=True)
    assert r.status_code == 202, r.content


def test_an_integral_json_number_is_a_whole_number_and_the_message_says_what_to_send(world):
    r = world.post("/windows", {"member": "ada", "hours": 8.0, "test_clock": world.tc.id})
    assert r.status_code == 200, r.content
    r = world.post("/policies", {"service": "deal", "name": "stall_days", "value": "7", "test_clock": world.tc.id})
    err = r.json()["error"]
    assert r.status_code == 400 and err == {
        "type": "invalid_request_error", "code": "invalid_request", "param": "value",
        "message": 'value: expected a whole number, not a string ("7"): send it without quotes'}, err
    for value in (7.5, True, None, [7]):
        r = world.post("/policies", {"service": "deal", "name": "stall_days", "value": value,
                                     "test_clock": world.tc.id})
        assert r.status_code == 400 and r.json()["error"]["param"] == "value", (value, r.content)


def test_a_query_strings_numbers_and_booleans_are_text_as_openapi_writes_them(world):
    auth = {"HTTP_AUTHORIZATION": f"Bearer {world.key}"}
    assert world.client.get("/test_clocks?limit=2", **auth).status_code == 200
    assert world.client.get(f"/versions?pinned=true&test_clock={world.tc.id}", **auth).status_code == 200
    for query in ("/test_clocks?limit=2.0", f"/versions?pinned=yes&test_clock={world.tc.id}"):
        r = world.client.get(query, **auth)
        assert r.status_code == 400 and r.json()["error"]["code"] == "invalid_request", (query, r.content)


# -- names ---------------------------------------------------------------------------------------------------
CONTROL = ("Acme\x07", "Acme\nRobotics", "Acme\x1b[31m", "Ac\x7fme", "Acme\x85", "\t")


@pytest.mark.parametrize("name", CONTROL)
def test_a_name_the_api_stores_takes_no_control_character(world, name):
    tc = world.tc.id
    before = (TestClock.objects.count(), Calendar.objects.count())
    for path, body in (("/test_clocks", {"frozen_time": LATER, "name": name}),
                       ("/calendars", {"name": name, "zone": "UTC"}),
                       (f"/calendars/{world.calendar.id}", {"name": name}),
                       ("/schedules", {"test_clock": tc, "name": name, "spec": {"every": "1d"},
                                       "target": {"url": "http://127.0.0.1:9/hook"}})):
        r = world.post(path, body)
        assert r.status_code == 400, (path, r.content)
        assert r.json()["error"]["code"] == "invalid_name" and r.json()["error"]["param"] == "name", r.content
    assert (TestClock.objects.count(), Calendar.objects.count()) == before
    world.calendar.refresh_from_db()
    assert world.calendar.name == "Spare"
    # Plain text of any script is a name.
    r = world.post("/test_clocks", {"frozen_time": LATER, "name": "Ünïcødé · 東京 — ok"})
    assert r.status_code == 201, r.content


@pytest.mark.parametrize("brand_name", ["x" * 201, *CONTROL, "   "])
def test_createapikey_refuses_a_bad_brand_name_in_one_line_with_a_code(db, brand_name):
    one_line(["createapikey", "--brand", brand_name], "invalid_name")
    assert not Brand.objects.exists() and not ApiKey.objects.exists()


def test_createapikey_refuses_a_bad_key_name_and_takes_a_good_one(db):
    one_line(["createapikey", "--brand", "acme", "--name", "ci\x00key"], "invalid_name")
    one_line(["createapikey", "--brand", "acme", "--name", "k" * 201], "invalid_name")
    assert not Brand.objects.exists()
    out = StringIO()
    call_command("createapikey", "--brand", "a" * 200, "--name", "ci · deploy", stdout=out)
    assert out.getvalue().splitlines()[1].startswith("sk_test_")


@pytest.mark.processes
def test_createapikey_with_201_characters_exits_non_zero_with_one_line(tmp_path):
    """The real command line: one line on stderr with the code, exit status 1, no traceback; refused before the
    database is opened (the SQLite file it names is never made)."""
    import os
    import subprocess
    import sys

    from django.conf import settings

    env = {**os.environ, "DATABASE_URL": f"sqlite:///{tmp_path}/never.sqlite3",
           "DJANGO_SETTINGS_MODULE": "keeping_time.test_settings"}
    done = subprocess.run([sys.executable, "manage.py", "createapikey", "--brand", "x" * 201], env=env,
                          capture_output=True, text=True, cwd=settings.BASE_DIR, timeout=120)
    assert done.returncode == 1, done
    assert done.stderr.strip().splitlines() == [
        "CommandError: invalid_name: --brand at most 200 characters (this one has 201)"], done.stderr
    assert done.stdout == "" and not (tmp_path / "never.sqlite3").exists()


def test_a_float_field_takes_a_json_number_and_text_only_from_a_form():
    from django.http import QueryDict
    from rest_framework import serializers

    from timers.api.inputs import StrictFloatField

    class Body(serializers.Serializer):
        ratio = StrictFloatField()

    assert Body(data={"ratio": 7}).is_valid() and Body(data={"ratio": 0.5}).is_valid()
    for value in ("7.5", True, None):
        s = Body(data={"ratio": value})
        assert not s.is_valid() and "ratio" in s.errors, value
    form = Body(data=QueryDict("ratio=7.5"))
    assert form.is_valid() and form.validated_data["ratio"] == 7.5
