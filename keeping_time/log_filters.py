"""Logging filters: secrets that travel in URLs never reach a log whole.

The webcal feed and the customer portal open with ``?token=…`` (a bearer secret: whoever has it reads the
calendar). runserver's access log (``django.server``) prints the request line and ``django.request`` may
print a URL, so a token in either would sit in every log file and terminal scrollback.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Mapping

KEEP = 6  # enough of a token to tell two apart when reading a log, too little to open anything
# A query parameter named token or ending in it (token=, access_token=), up to the next separator.
_TOKEN = re.compile(r"(?P<name>[?&;][A-Za-z0-9_.-]*token=)(?P<value>[^&;#\s\"'<>]+)", re.IGNORECASE)


def redact(text: str) -> str:
    """``text`` with the value of every ``…token=`` query parameter cut to its first characters and "…"."""
    if "token=" not in text.lower():  # most lines: no regex at all
        return text
    return _TOKEN.sub(lambda m: m["name"] + (m["value"][:KEEP] + "…" if len(m["value"]) > KEEP else m["value"]),
                      text)


def _redact_arg(value: object) -> object:
    return redact(value) if isinstance(value, str) else value


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
