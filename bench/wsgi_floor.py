"""The floor under a request: a WSGI app that answers a GET 304 with no body, reading nothing, and a POST 201
with a small JSON body once it has read the request's body.

``bench/feed_latency.py`` (the GET: a feed poll's floor) and ``bench/live.py`` (the POST: an arming's floor) serve
it with the same ``gunicorn.conf.py`` as the project (``gunicorn bench.wsgi_floor:application`` in the project's
folder: the same sync workers, the same access log and its token filter), so what a stamped 304 or a
``POST /timers`` costs above it is the app's own: Django, its statements and their backend. It imports nothing
of the project.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

# What the feed's 304 carries that a floor can carry without work: a validator, no body.
HEADERS = [("ETag", '"floor"'), ("Content-Length", "0")]
# What an arming's 201 carries, in size: a timer's JSON (its key, owed time, status, handler).
ARMED = (b'{"key": "job_floor:task:tick:0", "owed_at": "2099-01-01T00:00:00Z", "status": "armed", '
         b'"handler": "noop", "domain": "live_floor", "attempt": 0}')
ARMED_HEADERS = [("Content-Type", "application/json"), ("Content-Length", str(len(ARMED)))]


def application(environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
    if environ["REQUEST_METHOD"] == "POST":
        environ["wsgi.input"].read(int(environ.get("CONTENT_LENGTH") or 0))
        start_response("201 Created", ARMED_HEADERS)
        return [ARMED]
    start_response("304 Not Modified", HEADERS)
    return [b""]
