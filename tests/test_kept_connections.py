"""Schedules' HTTP calls on kept connections, several at once (timers/http.py send, timers/outbox.py
concurrent_sends), against a real far end on 127.0.0.1 that speaks HTTP/1.1 keep-alive as production servers do.
Counted at the far end: every call arrives, and none it answered is sent again, when the far end closes its
idle connections between calls and when it dies in the middle of a claim."""

from __future__ import annotations

import socket
import threading
import time
from collections import Counter
from collections.abc import Iterator
from datetime import timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from tests.conftest import T0
from timers import outbox
from timers.advance import advance
from timers.models import Outbox, ScheduleRun, ScheduleTick
from timers.schedule_targets import HTTP
from timers.schedules import schedule_create


class KeepAlive:
    """A far end that keeps connections open between requests. Per Idempotency-Key: ``got`` (requests read)
    and ``acked`` (answered 200, the answer written whole); ``connections`` it accepted. ``die_at=n``: on the
    n-th request it stops, that request unanswered: every connection closed, no new one answered."""

    def __init__(self, port: int = 0, *, die_at: int | None = None, host: str = "127.0.0.1",
                 linger: float = 0.0) -> None:
        self.got: Counter[str] = Counter()
        self.linger = linger  # seconds each request is held before its answer, so sends overlap
        self.peak = 0  # the most requests in the middle of being answered at once
        self.acked: Counter[str] = Counter()
        self.connections = 0
        self.die_at = die_at
        self.dead = False
        self.lock = threading.Lock()  # an answer is written whole or not at all before a death
        self.open: dict[socket.socket, bool] = {}  # connection -> in the middle of a request
        far = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            disable_nagle_algorithm = True

            def log_message(self, *args) -> None:
                pass

            def setup(self) -> None:
                super().setup()
                with far.lock:
                    far.connections += 1
                    far.open[self.connection] = False

            def finish(self) -> None:
                with far.lock:
                    far.open.pop(self.connection, None)
                try:
                    super().finish()
                except OSError:
                    pass

            def do_POST(self) -> None:  # noqa: N802 - http.server's name
                with far.lock:
                    far.open[self.connection] = True
                    far.peak = max(far.peak, sum(far.open.values()))
                self.rfile.read(int(self.headers["Content-Length"]))
                time.sleep(far.linger)
                key = self.headers["Idempotency-Key"]
                with far.lock:
                    if far.dead:
                        self.close_connection = True
                        return
                    far.got[key] += 1
                    if far.die_at is not None and sum(far.got.values()) >= far.die_at:
                        far._die()
                        self.close_connection = True
                        return
                    far.acked[key] += 1  # before the answer leaves: a sender that read it finds it counted
                    data = b'{"ok":true}'
                    self.send_response(200)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                    far.open[self.connection] = False

        self.server = ThreadingHTTPServer((host, port), Handler)
        self.server.daemon_threads = True
        self.port = self.server.server_address[1]
        self.url = f"http://{host}:{self.port}/fire"
        threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()

    def _die(self) -> None:
        # Called under the lock: every connection closed (idle ones and those mid-request, unanswered), and
        # the listening socket closed once its loop has stopped.
        self.dead = True
        for conn in list(self.open):
            with _quiet():
                conn.shutdown(socket.SHUT_RDWR)
        threading.Thread(target=self.close, daemon=True).start()

    def drop_idle(self) -> None:
        """Close every connection between requests (a server's idle timeout), and wait until they are gone."""
        with self.lock:
            idle = [c for c, busy in self.open.items() if not busy]
        for conn in idle:
            with _quiet():
                conn.shutdown(socket.SHUT_RDWR)
        deadline = time.monotonic() + 5
        while self.open and time.monotonic() < deadline:
            time.sleep(0.01)
        assert not self.open

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


class _quiet:
    def __enter__(self) -> None:
        pass

    def __exit__(self, kind, exc, tb) -> bool:
        return kind is not None and issubclass(kind, OSError)


@pytest.fixture
def far() -> Iterator[KeepAlive]:
    f = KeepAlive()
    yield f
    if not f.dead:
        f.close()


def _calls(clock_id: str) -> list[Outbox]:
    return list(Outbox.objects.filter(domain=clock_id, transport=HTTP))


def test_calls_go_on_kept_connections_and_a_far_end_closing_them_between_calls_costs_no_try(brand, clock, far):
    """Day one: 24 calls on fewer connections than calls (kept). The far end then closes every idle connection;
    day two's calls find them closed before asking anything (readable while idle) and open new ones: each call
    arrives once and none is a failed try."""
    sch = schedule_create(brand=brand, domain=clock.id, spec={"every": "1h"}, target={"url": far.url, "retries": 0})
    advance(clock.id, T0 + timedelta(days=1))
    first = far.connections
    assert len(far.acked) == 24 and first < 24, (len(far.acked), first)
    far.drop_idle()
    advance(clock.id, T0 + timedelta(days=2))
    rows = _calls(clock.id)
    assert len(rows) == 48
    assert [(r.status, r.tries, r.error) for r in rows if (r.status, r.tries, r.error) != ("sent", 0, "")] == []
    assert set(far.acked) == {r.id for r in rows} and set(far.acked.values()) == {1} and far.got == far.acked
    assert far.connections > first  # the closed ones were not used again: new connections carried day two
    assert set(ScheduleTick.objects.filter(schedule=sch).values_list("state", flat=True)) == {"succeeded"}


def test_a_far_end_that_dies_mid_claim_loses_nothing_and_gets_nothing_it_answered_twice(brand, clock):
    """48 calls in one claim, 8 at a time; the far end dies on its 20th request (that one and those in flight
    unanswered, the rest refused). What it answered is recorded sent and never sent again; every other call is
    a failed try, sent again once the far end is back, and answered then: nothing lost."""
    first = KeepAlive(die_at=20)
    sch = schedule_create(brand=brand, domain=clock.id, spec={"every": "1h"}, target={"url": first.url, "retries": 3})
    advance(clock.id, T0 + timedelta(days=2))
    assert first.dead and 0 < len(first.acked) < 20
    rows = {r.id: r for r in _calls(clock.id)}
    assert len(rows) == 48
    sent = {sid for sid, r in rows.items() if r.status == "sent"}
    assert sent == set(first.acked)  # answered: recorded sent; not answered: not
    assert all(r.status == "sending" and r.tries == 1 and r.error for sid, r in rows.items() if sid not in sent)
    second = KeepAlive(first.port)  # back, on the same port
    try:
        Outbox.objects.filter(domain=clock.id).update(next_try_at=None)  # the backoff is wall time: skip it
        outbox.deliver(clock.id)
    finally:
        second.close()
    assert set(first.acked) | set(second.acked) == set(rows)  # nothing lost
    assert not set(first.acked) & set(second.acked) and set((first.acked + second.acked).values()) == {1}
    assert set(Outbox.objects.filter(domain=clock.id).values_list("status", flat=True)) == {"sent"}
    assert set(ScheduleRun.objects.filter(schedule=sch).values_list("outcome", flat=True)) == {"http 200"}


def test_the_sends_in_flight_at_once_are_bounded_by_kt_send_threads(brand, clock, settings):
    """A claim's 24 calls against a far end that holds each for 30 ms: at most KT_SEND_THREADS arrive at once
    (2 here; the transport alone would allow 8)."""
    settings.KEEPING_TIME = {**settings.KEEPING_TIME, "SEND_THREADS": 2}
    far = KeepAlive(linger=0.03)
    try:
        schedule_create(brand=brand, domain=clock.id, spec={"every": "1h"}, target={"url": far.url})
        advance(clock.id, T0 + timedelta(days=1))
    finally:
        far.close()
    assert len(far.acked) == 24 and set(far.acked.values()) == {1}
    assert far.peak == 2
