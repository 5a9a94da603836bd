"""The floor under a feed poll: a WSGI app that answers every request 304 with no body, and reads nothing.

``bench/feed_latency.py`` serves it with the same ``gunicorn.conf.py`` as the feed (``gunicorn
bench.wsgi_floor:application`` in the project's folder: the same sync workers, the same access log and its
token filter), so what a stamped 304 costs above it is the app's own: Django, the probe's statement and its
backend. It imports nothing of the project.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

# What the feed's 304 carries that a floor can carry without work: a validator, no body.
HEADERS = [("ETag", '"floor"'), ("Content-Length", "0")]


def application(environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
    start_response("304 Not Modified", HEADERS)
    return [b""]
