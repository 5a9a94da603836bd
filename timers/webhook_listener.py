"""A receiver on this machine for a brand's webhooks, as ``stripe listen`` is for Stripe's: ``manage.py webhooks
listen`` makes an endpoint at ``http://127.0.0.1:<port>/`` for the events asked for, prints each delivery as it
arrives (checking its signature with the endpoint's secret, and each event id once: a resend says so), answers
2xx, and removes the endpoint when it stops (SIGINT, SIGTERM, after ``count`` events, or at an event of the type
``until`` names).

For trying a brand out locally (the quickstart watches a test clock's events arrive with it). A brand's own
systems receive the same requests: verify ``Keeping-Time-Signature`` as ``timers.signing.verify`` does and
keep each ``Idempotency-Key`` (the event id) once.
"""

from __future__ import annotations

import json
import signal
import threading
from collections.abc import Callable, Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from .models import Brand
from .signing import SIGNATURE_HEADER, verify
from .webhooks import endpoint_create, endpoint_delete

MAX_BODY = 1 << 20


def describe(event: dict[str, Any]) -> str:
    """One line for a delivered event: when it was owed (UTC, Z), its type, what it is about."""
    owed = (event.get("owed_at") or "").replace(":00Z", "Z").replace("T", " ")
    parts = [owed or "-", f"{event.get('type', '?'):<18}", event.get("subject") or ""]
    return "  ".join(p for p in parts if p)


class _Receiver(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, port: int, secret: str, say: Callable[[str], None], on_event: Callable[[dict[str, Any]], None]):
        super().__init__(("127.0.0.1", port), _Handler)
        self.secret, self.say, self.on_event = secret, say, on_event
        self.seen: set[str] = set()
        self.lock = threading.Lock()


class _Handler(BaseHTTPRequestHandler):
    server: _Receiver

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - BaseHTTPRequestHandler's name
        pass  # one line per event is printed instead

    def _answer(self, status: int, text: str) -> None:
        body = text.encode()
        self.send_response(status)
        self.send_header("Content-Type", "text/plain; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_POST(self) -> None:  # noqa: N802 - BaseHTTPRequestHandler's name
        length = int(self.headers.get("Content-Length") or 0)
        if not 0 < length <= MAX_BODY:
            self._answer(400, "no body")
            return
        body = self.rfile.read(length)
        if not verify(self.server.secret, body, self.headers.get(SIGNATURE_HEADER, "")):
            self.server.say(f"refused a request whose {SIGNATURE_HEADER} does not match this endpoint's secret")
            self._answer(400, "bad signature")
            return
        try:
            event = json.loads(body)
        except ValueError:
            self._answer(400, "not JSON")
            return
        key = self.headers.get("Idempotency-Key", "") or event.get("id", "")
        with self.server.lock:
            again = key in self.server.seen
            self.server.seen.add(key)
        self.server.say(f"{describe(event)}  {event.get('id', '')}" + ("  (again: kept once)" if again else ""))
        self._answer(200, "ok")
        if not again:
            self.server.on_event(event)


def listen(*, brand: Brand, livemode: bool, events: Sequence[str], port: int, say: Callable[[str], None],
           count: int | None = None, until: str | None = None, keep: bool = False,
           ready: threading.Event | None = None) -> int:
    """Serve until stopped, ``count`` events have arrived, or one of type ``until`` (test_clock.ready: everything
    an advance recorded came before it, in record order); returns how many distinct events arrived."""
    endpoint = endpoint_create(brand=brand, livemode=livemode, url=f"http://127.0.0.1:{port}/", enabled_events=events,
                               description="manage.py webhooks listen")
    received = 0
    done = threading.Event()

    def on_event(event: dict[str, Any]) -> None:
        nonlocal received
        received += 1
        if (count is not None and received >= count) or (until is not None and event.get("type") == until):
            done.set()

    try:
        server = _Receiver(port, endpoint.secret, say, on_event)
    except OSError:
        endpoint_delete(endpoint=endpoint)
        raise
    previous = {}
    if threading.current_thread() is threading.main_thread():
        for sig in (signal.SIGINT, signal.SIGTERM):
            previous[sig] = signal.signal(sig, lambda *_: done.set())
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.1}, daemon=True)
    thread.start()
    endpoint_id = endpoint.id
    say(f"Listening on http://127.0.0.1:{port}/ for {', '.join(endpoint.enabled_events)} "
        f"({'live' if livemode else 'test clocks'}) · endpoint {endpoint.id} · secret {endpoint.secret}")
    if ready is not None:
        ready.set()
    try:
        done.wait()
    finally:
        server.shutdown()
        server.server_close()
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        if not keep:
            endpoint_delete(endpoint=endpoint)
    say(f"Stopped after {received} event{'s' if received != 1 else ''}"
        + ("" if keep else f"; endpoint {endpoint_id} removed"))
    return received
