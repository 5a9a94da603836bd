"""The Python client (keeping_time_client): generated from /openapi.json, so it cannot drift from the API, and
spoken over real HTTP to a live server, its errors raised with the API's code."""

from __future__ import annotations

import inspect
from datetime import UTC, datetime, timedelta

import httpx
import pytest

import keeping_time_client
from keeping_time_client import (
    OPERATIONS,
    AuthenticationError,
    ConflictError,
    InvalidRequestError,
    KeepingTime,
    NotFoundError,
    PermissionDeniedError,
)
from keeping_time_client.generate import COMMAND, OUTPUT, generate
from tests.conftest import T0
from timers import arming, tenants, test_clocks

REGENERATE = (f"keeping_time_client/_generated.py is not what /openapi.json makes: the API changed. Run "
              f"`{COMMAND}` (scripts/gen_client) and commit the result.")


def _operations(schema: dict) -> dict[str, tuple[str, str]]:
    return {op["operationId"]: (method.upper(), path) for path, item in schema["paths"].items()
            for method, op in item.items() if method in ("get", "post", "put", "patch", "delete")}


# -- it cannot drift -----------------------------------------------------------------------------------
def test_the_generated_client_is_what_the_served_schema_makes(client):
    schema = client.get("/openapi.json").json()
    assert OUTPUT.read_text() == generate(schema), REGENERATE


def test_every_operation_of_the_schema_has_its_method(client):
    schema = client.get("/openapi.json").json()
    ops = _operations(schema)
    missing = sorted(set(ops) - set(OPERATIONS))
    assert not missing, f"operations without a method: {missing}. {REGENERATE}"
    gone = sorted(set(OPERATIONS) - set(ops))
    assert not gone, f"methods for operations the API no longer has: {gone}. {REGENERATE}"
    kt = KeepingTime("sk_test_unused")
    for op_id, (method, path, resource, name) in OPERATIONS.items():
        assert ops[op_id] == (method, path), f"{op_id}: {REGENERATE}"
        bound = getattr(getattr(kt, resource), name)
        assert f"{method} {path}" in inspect.getdoc(bound)


def test_the_seed_calls_are_typed_methods():
    """``kt.timers.list(on=…)`` and ``kt.test_clocks.advance(…)``, with their parameters keyword-only and typed."""
    listed = inspect.signature(KeepingTime("sk_test_x").timers.list)
    assert {"on", "status", "test_clock", "limit", "starting_after"} <= set(listed.parameters)
    assert all(p.kind is p.KEYWORD_ONLY for p in listed.parameters.values())
    assert listed.return_annotation == "TimerList"
    advance = inspect.signature(KeepingTime("sk_test_x").test_clocks.advance)
    assert list(advance.parameters)[:2] == ["clock_id", "to"]
    assert "datetime" in advance.parameters["to"].annotation


def test_a_key_is_needed_and_said_so(monkeypatch):
    monkeypatch.delenv("KT_API_KEY", raising=False)
    with pytest.raises(ValueError, match="KT_API_KEY"):
        KeepingTime()
    monkeypatch.setenv("KT_API_KEY", "sk_test_from_env")
    assert KeepingTime().api_key == "sk_test_from_env"


# -- over real HTTP ------------------------------------------------------------------------------------
@pytest.fixture
def kt(live_server, transactional_db):
    brand = tenants.brand_get_or_create(name="apis.client")
    clock = test_clocks.test_clock_create(brand=brand, frozen_time=T0, name="client")
    for i in range(5):
        arming.timer_arm(brand=brand, key=f"job_c{i % 2}:task:call:{i}", owed_at=T0 + timedelta(days=i + 1),
                           domain=clock.id, handler="noop")
    _, secret = tenants.api_key_create(brand=brand)
    with KeepingTime(secret, base_url=live_server.url) as client:
        client.test_clock_id = clock.id
        yield client


def test_timers_list_reads_an_owners_timers_over_http(kt):
    page = kt.timers.list(on="job_c0", test_clock=kt.test_clock_id)
    assert page["object"] == "list" and not page["has_more"]
    # Armed at one instant (the test clock's frozen time), they list in id order: sort to compare.
    assert sorted(t["key"] for t in page["data"]) == [f"job_c0:task:call:{i}" for i in (0, 2, 4)]
    first = next(t for t in page["data"] if t["key"].endswith(":0"))
    one = kt.timers.retrieve(first["id"])
    assert one["key"] == "job_c0:task:call:0" and one["status"] == "armed" and one["test_clock"] == kt.test_clock_id
    # Every page, followed with starting_after.
    keys = [t["key"] for t in kt.paginate(kt.timers.list, test_clock=kt.test_clock_id, limit=2)]
    assert sorted(keys) == sorted(f"job_c{i % 2}:task:call:{i}" for i in range(5))


def test_test_clocks_advance_and_its_refusal_as_an_exception_with_the_apis_code(kt):
    with pytest.raises(ConflictError) as refused:
        kt.test_clocks.advance(kt.test_clock_id, to=T0 - timedelta(days=1))
    assert refused.value.code == "test_clock_backward" and refused.value.status == 409
    moved = kt.test_clocks.advance(kt.test_clock_id, to=datetime(2026, 12, 1, 9, tzinfo=UTC))
    assert moved["status"] == "advancing" and moved["id"] == kt.test_clock_id


def test_wait_for_test_clock_answers_once_the_worker_made_it_ready(kt):
    import threading

    from django.db import connection

    from timers.advance import run_requested_advances

    kt.test_clocks.advance(kt.test_clock_id, to=datetime(2026, 11, 27, 9, tzinfo=UTC))
    with pytest.raises(ConflictError) as waiting:  # no worker yet: still advancing
        kt.wait_for_test_clock(kt.test_clock_id, timeout=0.2, poll=0.05)
    assert waiting.value.code == "test_clock_advancing"
    def work():
        try:
            run_requested_advances()
        finally:
            connection.close()  # this thread's own connection, so the test database can be flushed

    worker = threading.Thread(target=work)
    worker.start()
    try:
        ready = kt.wait_for_test_clock(kt.test_clock_id, timeout=60, poll=0.05)
    finally:
        worker.join()
    assert ready["status"] == "ready" and ready["frozen_time"] == "2026-11-27T09:00:00Z"
    fired = kt.timers.list(test_clock=kt.test_clock_id, status="fired", limit=100)["data"]
    assert sorted(t["key"] for t in fired) == ["job_c0:task:call:0", "job_c0:task:call:2", "job_c1:task:call:1"]


def test_wait_for_test_clock_polls_through_a_busy_database():
    """503 database_busy (SQLite busy with the very advance being waited on) is a poll like any other; any other
    5xx is raised, and so is a 503 at the deadline."""
    answers = [(503, {"error": {"type": "api_error", "code": "database_busy", "message": "busy"}}),
               (200, {"id": "tc_x", "status": "advancing"}),
               (503, {"error": {"type": "api_error", "code": "database_busy", "message": "busy"}}),
               (200, {"id": "tc_x", "status": "ready"})]
    asked = []

    def answer(request: httpx.Request) -> httpx.Response:
        asked.append(request.url.path)
        status, body = answers.pop(0)
        return httpx.Response(status, json=body)

    kt = KeepingTime("sk_test_x", base_url="http://kt.test", http_client=httpx.Client(transport=httpx.MockTransport(answer)))
    assert kt.wait_for_test_clock("tc_x", timeout=5, poll=0.01)["status"] == "ready"
    assert asked == ["/test_clocks/tc_x"] * 4
    answers[:] = [(500, {"error": {"type": "api_error", "code": "internal_error", "message": "bug"}})]
    with pytest.raises(keeping_time_client.APIError) as bug:
        kt.wait_for_test_clock("tc_x", timeout=5, poll=0.01)
    assert bug.value.code == "internal_error"
    answers[:] = [(503, {"error": {"type": "api_error", "code": "database_busy", "message": "busy"}})]
    with pytest.raises(keeping_time_client.APIError) as late:
        kt.wait_for_test_clock("tc_x", timeout=0, poll=0.01)
    assert late.value.code == "database_busy"


def test_errors_carry_the_apis_code_status_and_param(kt, live_server):
    with pytest.raises(NotFoundError) as missing:
        kt.timers.retrieve("tmr_nope")
    assert (missing.value.code, missing.value.status) == ("resource_missing", 404)
    with pytest.raises(InvalidRequestError) as bad:
        kt.timers.list(status="ringing", test_clock=kt.test_clock_id)  # type: ignore[arg-type]
    assert (bad.value.code, bad.value.param) == ("invalid_request", "status")
    with pytest.raises(AuthenticationError) as no_key:
        KeepingTime("sk_test_not_a_key", base_url=live_server.url).timers.list()
    assert no_key.value.code == "invalid_api_key"
    with pytest.raises(PermissionDeniedError) as wrong_mode:  # a test key arms on a test clock only
        kt.timers.arm(key="job_c9:task:call:1", owed_at=T0, handler="noop")
    assert wrong_mode.value.code == "live_mode_only"
    assert isinstance(wrong_mode.value, keeping_time_client.KeepingTimeError)


def test_a_server_that_is_not_there_is_a_connection_error():
    down = KeepingTime("sk_test_x", base_url="http://127.0.0.1:9", http_client=httpx.Client(timeout=2))
    with pytest.raises(keeping_time_client.APIConnectionError) as exc:
        down.timers.list()
    assert exc.value.code == "connection_error"


def test_the_generated_annotations_resolve():
    """Every TypedDict and method annotation names something that exists (a generator bug would not)."""
    import typing

    from keeping_time_client import _generated

    names = vars(_generated)
    resolved = 0
    for obj in list(names.values()):
        if isinstance(obj, type) and typing.is_typeddict(obj):
            typing.get_type_hints(obj)
            resolved += 1
        elif isinstance(obj, type) and issubclass(obj, _generated.Resource) and obj is not _generated.Resource:
            for _, fn in inspect.getmembers(obj, inspect.isfunction):
                typing.get_type_hints(fn, globalns=names)
                resolved += 1
    assert resolved >= len(OPERATIONS)


def test_an_operation_named_off_its_path_is_refused_with_what_to_fix():
    from keeping_time_client.generate import SchemaError

    schema = {"paths": {"/timers": {"get": {"operationId": "list_all_timers", "responses": {}}}}}
    with pytest.raises(SchemaError, match=r"operation_id='timers_<verb>'"):
        generate(schema)


def test_the_client_does_not_drift_with_the_machines_zones_or_holidays(client):
    """Zones (tzdata) and holiday regions (holidays) are lists the installed packages hold: a machine with another
    tzdata generates the same client, so the drift test fails only when the API changes."""
    schema = client.get("/openapi.json").json()
    for name in ("ZoneEnum", "HolidaysEnum"):
        schema["components"]["schemas"][name]["enum"] = schema["components"]["schemas"][name]["enum"][1:]
    assert generate(schema) == OUTPUT.read_text()
