"""Schemathesis over the app's /openapi.json, with a secret key: a bounded, deterministic run of every phase
(examples, coverage, fuzzing, stateful) against a live server, and every default check. It must find no
server error and no mismatch between the API and its documented schema, either way: a response that is not
what the schema says, a request the schema allows that the API refuses (positive_data_acceptance), or one
the schema forbids that the API takes (negative_data_rejection); and, a check of its own, no operation takes a
query parameter it does not know (400 parameter_unknown).

apis.tax's Acme Robotics, ticked into 2028, gives the reads real objects: every GET runs with its ids (and
its test clock, but GET /clocks/{clock_id}) so lists and objects are checked against their schemas with data in
them; writes get ids schemathesis makes up or finds through the links it infers from the responses.
"""

from __future__ import annotations

import time
import uuid
from dataclasses import dataclass, field
from io import StringIO

import pytest
import schemathesis
from django.conf import settings
from django.core.management import call_command
from schemathesis import engine
from schemathesis.engine import events

from services import registry
from services.models import Job
from timers.models import Brand, Event, Timer
from timers.tenants import api_key_create

pytestmark = [pytest.mark.django_db(transaction=True)]

SEED = 20270120  # fixed: the same cases every run
MAX_EXAMPLES = 5  # per operation in the generating phases: about 1,200 requests in all, a minute


def _acme() -> dict[str, str]:
    """Load the example and tick it to 2028-02-01; the ids every GET is given."""
    out = StringIO()
    call_command("loadexample", "apis_tax", "--reset", stdout=out)
    text = out.getvalue()
    tc = text.split("test clock ")[1].split()[0]
    call_command("tick", "--to", "2028-02-01T20:00Z", "--test-clock", tc, stdout=StringIO())
    job = Job.objects.filter(domain=tc, service="annual-return").order_by("opened_at").first()
    return {
        "test_clock": tc, "clock_id": tc,
        "subject_id": text.split("subject ")[1].split()[0],
        "subscription_id": text.split("subscription ")[1].split()[0],
        "job_id": job.id,
        "timer_id": Timer.objects.filter(domain=tc, status="fired").order_by("fired_at").first().id,
        "event_id": Event.objects.filter(domain=tc).order_by("seq").first().id,
    }


@schemathesis.hook
def before_call(ctx, case, kwargs):
    """Each Idempotency-Key sent made unique: a key drawn twice ("0") names another request the second time,
    which the API rightly refuses (400 idempotency_key_in_use); keys and their reuse are tests/services/test_customers.py's."""
    if case.headers and "Idempotency-Key" in case.headers:
        case.headers["Idempotency-Key"] = str(uuid.uuid4())


@schemathesis.check
def unknown_parameters_are_refused(ctx, response, case):
    """A request the API took (below 400), sent again with one more query parameter, is 400 parameter_unknown
    naming it: no operation ignores a name it does not know (the bodies' own extra properties are
    negative_data_rejection's, as the schema says additionalProperties: false)."""
    if response.status_code >= 400 or case.method.upper() != case.operation.method.upper():
        return None  # refused already, or another method's case (unsupported_method's)
    # The key the run sends, and a new Idempotency-Key (before_call).
    again = case.call(params={"kt_unknown_param": "1"},
                      headers={"Authorization": response.request.headers["Authorization"]})
    try:
        err = again.json()["error"]
    except (ValueError, KeyError, TypeError):
        err = {}
    if again.status_code != 400 or err.get("code") != "parameter_unknown" or err.get("param") != "kt_unknown_param":
        raise AssertionError(f"an unknown query parameter was not refused: {again.status_code} {again.text[:200]}")
    return None


@dataclass
class Run:
    cases: int = 0
    failures: list[str] = field(default_factory=list)  # one line each: operation, check, title, curl
    errors: list[str] = field(default_factory=list)
    ok: set[str] = field(default_factory=set)  # the operations that answered 200 at least once


def run_schemathesis(url: str, key: str, ids: dict[str, str]) -> Run:
    """Every phase, every default check, GETs given the example's ids."""
    config = schemathesis.Config.from_dict({
        "seed": SEED,
        "headers": {"Authorization": f"Bearer {key}"},
        # No NUL in generated strings: PostgreSQL stores none, so the API refuses one anywhere (400, as
        # tests/project/test_bad_input.py shows), and the schema says so for every string field (pattern); what
        # OpenAPI 3.0 cannot say is "no NUL in an object's keys" (data, keeps, input: no propertyNames).
        "generation": {"max-examples": MAX_EXAMPLES, "deterministic": True, "allow-x00": False},
        "workers": 1,
        # A request that never answers fails the run with its case, rather than holding CI until it is killed.
        "request-timeout": 60,
        # GET /clocks/{clock_id} is left to made-up ids: given a real clock, the stateful phase follows its
        # items to POST …/choose, whose options are the clock's own (unknown_option, a 400 the one schema
        # for every clock cannot foresee).
        "operations": [
            {"include-method": "GET", "exclude-path": "/clocks/{clock_id}", "parameters": ids},
            # A calendar's zone and holidays are enums of every IANA zone and every country and subdivision the
            # holidays package knows: the coverage phase would send each of them (3,300 requests, half the
            # run). Examples, fuzzing and the stateful phase still cover both operations.
            *({"include-name": name, "phases": {"coverage": {"enabled": False}}}
              for name in ("POST /calendars", "POST /calendars/{calendar_id}")),
            # An order's period is its Service's kind of period (annual-return's are tax years, 2027; estimate's
            # quarters, 2027-Q3) and its service one the registry holds: what one schema for every Service
            # cannot say, so a schema-valid order may be refused 400 (invalid_service, or its period's param).
            # Every other check still runs on it, and so does this one on every other operation.
            {"include-name": "POST /jobs", "checks": {"positive_data_acceptance": {"enabled": False}}},
        ],
    })
    schema = schemathesis.openapi.from_url(f"{url}/openapi.json", config=config)
    run = Run()
    failures, errors = run.failures, run.errors
    for event in engine.from_schema(schema).execute():
        if isinstance(event, events.ScenarioFinished | events.FuzzScenarioFinished):
            run.cases += len(event.recorder.cases)
            for interaction in event.recorder.interactions.values():
                if interaction.response is not None and interaction.response.status_code == 200:
                    run.ok.add(f"{interaction.request.method} {interaction.request.uri}")
            for case_id, checks in event.recorder.checks.items():
                for check in checks:
                    if check.failure_info is not None:
                        case = event.recorder.cases.get(case_id)
                        curl = case.value.as_curl_command() if case is not None else ""
                        failures.append(f"{event.recorder.label}: {check.name}: "
                                        f"{check.failure_info.failure.title} · {curl}")
        elif isinstance(event, events.NonFatalError):
            errors.append(f"{event.label}: {event.value!r}")
    return run


@pytest.fixture
def configured_services(monkeypatch):
    """apis.tax's Services, and only those (the run acts on Acme's ids): other tests load theirs into the one
    registry for the rest of the session, and the subscription input's schema is the union of the plans'
    declared fields, which a plan refuses where it does not read them (api.forsale's deal desk reads none)."""
    monkeypatch.setattr(registry, "_services", {})
    monkeypatch.setattr(registry, "_bundles", dict(registry._bundles))
    registry.load([path for path in settings.KEEPING_TIME_SERVICES if ".apis_tax." in path])


@pytest.fixture
def any_target(settings):
    """Every address allowed as a target: where an outside call may go depends on what a name resolves to,
    which no schema can say (a host of "6" is 0.0.0.6), so a schema-valid URL the rule refuses would read as
    a mismatch. The rule has its own tests (tests/timers/test_targets.py); this run checks the schema."""
    settings.KEEPING_TIME = {**settings.KEEPING_TIME, "ALLOW_TARGETS": ["0.0.0.0/0", "::/0"]}


@pytest.mark.usefixtures("any_target")
def test_schemathesis_finds_no_server_error_and_no_schema_mismatch(live_server, configured_services):
    ids = _acme()
    _, key = api_key_create(brand=Brand.objects.get(name="apis.tax"))
    started = time.monotonic()
    run = run_schemathesis(live_server.url, key, ids)
    took = time.monotonic() - started
    print(f"schemathesis: {run.cases} cases in {took:.0f}s, {len(run.failures)} failures, {len(run.errors)} errors")
    assert not run.errors, "\n".join(run.errors)
    assert not run.failures, f"{len(run.failures)} failures:\n" + "\n".join(sorted(set(run.failures)))
    # The run reached the API, and each read answered with the example's objects, checked against its schema.
    assert run.cases > 300, run.cases
    for path in (f"/subscriptions/{ids['subscription_id']}", f"/jobs/{ids['job_id']}", f"/timers/{ids['timer_id']}", f"/events/{ids['event_id']}", f"/test_clocks/{ids['test_clock']}",
                 f"/subjects/{ids['subject_id']}/calendar", "/subscriptions", "/jobs", "/timers", "/events"):
        assert any(f"GET {live_server.url}{path}" == ok.split("?")[0] for ok in run.ok), (path, sorted(run.ok)[:20])
