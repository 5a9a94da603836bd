from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from timers import handlers
from timers.arming import timer_arm
from timers.tenants import api_key_create, brand_get_or_create
from timers.test_clocks import test_clock_create

T0 = datetime(2026, 11, 24, 9, 0, tzinfo=UTC)


def pytest_runtest_setup(item: pytest.Item) -> None:
    """``@pytest.mark.postgresql("why")``: the test needs PostgreSQL and is skipped, saying why, on any other
    database (checked before its fixtures run, so a skipped test sets nothing up)."""
    mark = item.get_closest_marker("postgresql")
    if mark is not None:
        from django.db import connection  # noqa: PLC0415 - read once the settings are loaded

        if connection.vendor != "postgresql":
            pytest.skip(mark.args[0] if mark.args else "PostgreSQL only")


def at(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


@pytest.fixture
def brand(db):
    return brand_get_or_create(name="apis.test")


@pytest.fixture
def clock(brand):
    return test_clock_create(brand=brand, frozen_time=T0, name="test")


@pytest.fixture
def arm(brand, clock):
    def arm_(key: str, owed, *, handler: str = "noop", data: dict | None = None, domain: str | None = None,
             opened_at=None):
        owed_at = at(owed) if isinstance(owed, str) else owed
        return timer_arm(brand=brand, key=key, owed_at=owed_at, domain=domain or clock.id, handler=handler,
                         data=data, opened_at=opened_at)

    return arm_


@pytest.fixture
def handler():
    """Register a handler for one test: ``handler("name", fn, atomic=False)``."""
    names: list[str] = []

    def register(name: str, fn, *, atomic: bool = False):
        handlers.register(name, fn, atomic=atomic, replace=True)
        names.append(name)
        return name

    yield register
    for name in names:
        handlers.unregister(name)


__all__ = ["T0", "at", "timedelta"]


@pytest.fixture
def far_end():
    """A real HTTP far end for the clocks' notices (tests/support/far_end.py), in place of the in-process one."""
    from tests.support.far_end import FarEnd
    from timers import transports

    saved = dict(transports.registry)
    with FarEnd() as far:
        transports.register("notices", transports.HttpTransport(far.url, timeout=5))
        yield far
    transports.registry.clear()
    transports.registry.update(saved)


def admin_url(obj, action: str = "change") -> str:
    """An object's admin page, its key quoted as the admin quotes it: a random id holding "_5F" or "_3A" is
    read back as "_" or ":" when written into the URL raw, and the page is then not found."""
    from django.contrib.admin.utils import quote
    from django.urls import reverse

    meta = obj._meta
    return reverse(f"admin:{meta.app_label}_{meta.model_name}_{action}", args=[quote(obj.pk)])


def _no_delay_for_live_servers() -> None:
    """The live server answers without Nagle's delay: wsgiref writes a response's headers and body in two sends,
    and on a kept-alive connection the body then waits for the client's delayed ACK (40 ms on Linux), so every
    request over real HTTP cost 40 ms more than it took (schemathesis's thousands of calls most of all)."""
    import socket

    from django.core.servers import basehttp

    original = basehttp.WSGIRequestHandler.setup

    def setup(self):
        original(self)
        try:
            self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        except OSError:  # not a TCP socket
            pass

    if getattr(basehttp.WSGIRequestHandler.setup, "__name__", "") != "setup_without_nagle":
        setup.__name__ = "setup_without_nagle"
        basehttp.WSGIRequestHandler.setup = setup


_no_delay_for_live_servers()


@pytest.fixture
def client_for(live_server, transactional_db):
    """``client_for("acme", live=False)``: the REST API over real HTTP with a new key of that brand."""
    from tests.support.api import Client

    def make(brand_name: str, *, live: bool = False) -> Client:
        brand = brand_get_or_create(name=brand_name)
        _, secret = api_key_create(brand=brand, live=live)
        return Client(live_server.url, secret)

    return make


@pytest.fixture
def api(brand):
    """A test key of ``brand`` on DRF's test client (in process; tests/support/api.py's Client goes over HTTP)."""
    from rest_framework.test import APIClient

    _, key = api_key_create(brand=brand)
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {key}")
    return client
