from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from timers import handlers
from timers.arming import timer_arm
from timers.tenants import brand_get_or_create
from timers.test_clocks import test_clock_create

T0 = datetime(2026, 11, 24, 9, 0, tzinfo=UTC)


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
    """A real HTTP far end for the clocks' notices (tests/far_end.py), in place of the in-process one."""
    from tests.far_end import FarEnd
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
