"""Logging filters: secrets that travel in URLs never reach a log whole.

The webcal feed and the customer portal's one-time link open with ``?token=…``; a member's welcome link
carries its token in the path (each a bearer secret: whoever has it reads the calendar, or signs in).
runserver's access log (``django.server``), gunicorn's (gunicorn.conf.py) and ``django.request`` print the
request line or a URL, so a token in any would sit in every log file and terminal scrollback.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Mapping

KEEP = 6  # enough of a token to tell two apart when reading a log, too little to open anything
# A query parameter named token or ending in it (token=, access_token=), up to the next separator.
_TOKEN = re.compile(r"(?P<name>[?&;][A-Za-z0-9_.-]*token=)(?P<value>[^&;#\s\"'<>]+)", re.IGNORECASE)


# A token in a path: the customer portal's sign-in link (/portal/customer/session/<token>) and a member's
# one-time welcome link (/portal/delivery/welcome/<uid>/<token>), an invite's (/portal/delivery/invite/<token>).
_PATH_TOKEN = re.compile(
    r"(?P<name>/portal/(?:customer/session|delivery/invite|delivery/welcome/[^/\s?#]+)/)(?P<value>[^/?#\s\"'<>]+)")


def _cut(m: re.Match[str]) -> str:
    name, value = m["name"], m["value"]
    return name + (value[:KEEP] + "…" if len(value) > KEEP else value)


def redact(text: str) -> str:
    """``text`` with the value of every ``…token=`` query parameter, and of a portal link's token in its path,
    cut to its first characters and "…"."""
    if "/portal/" in text:
        text = _PATH_TOKEN.sub(_cut, text)
    if "token=" not in text.lower():  # most lines: no regex at all
        return text
    return _TOKEN.sub(_cut, text)


def _redact_arg(value: object) -> object:
    if not isinstance(value, str):
        return value
    if "token=" in value.lower() and value[:1] not in "?&;/" and "://" not in value and " " not in value:
        return redact("?" + value)[1:]  # a bare query string (gunicorn's %(q)s atom): token=…&x=1
    return redact(value)


class RedactURLTokens(logging.Filter):
    """Rewrites a record's message and its arguments (``django.server`` logs ``'"%s" %s %s'`` with the request
    line as an argument), so every handler and formatter downstream sees only the prefix. Never drops a record."""

    def filter(self, record: logging.LogRecord) -> bool:
        if isinstance(record.msg, str):
            record.msg = redact(record.msg)
        args = record.args
        if isinstance(args, tuple):
            record.args = tuple(_redact_arg(a) for a in args)
        elif isinstance(args, Mapping):
            record.args = {k: _redact_arg(v) for k, v in args.items()}
        return True
