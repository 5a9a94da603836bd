"""Logging filters: secrets that travel in URLs or headers never reach a log whole.

The webcal feed and the customer portal's one-time link open with ``?token=…``; a member's welcome link
carries its token in the path (each a bearer secret: whoever has it reads the calendar, or signs in).
runserver's access log (``django.server``), gunicorn's (gunicorn.conf.py) and ``django.request`` print the
request line or a URL, so a token in any would sit in every log file and terminal scrollback.

An API key is a secret too, and ``curl -u "$KEY:"`` (Stripe's way, the quickstart's) sends it as HTTP Basic's
user, which gunicorn's access log prints (``%(u)s``, in its default format). The filter cuts that atom to the
key's first 12 characters (``sk_test_Ab3d…``, the prefix the console shows for it), cuts any header atom that
carries a credential (``%({authorization}i)s``, cookies), and cuts a secret key or a webhook signing secret
written anywhere in a message or its arguments.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Mapping, MutableMapping

KEEP = 6  # enough of a token to tell two apart when reading a log, too little to open anything
# A query parameter named token or ending in it (token=, access_token=), up to the next separator.
_TOKEN = re.compile(r"(?P<name>[?&;][A-Za-z0-9_.-]*token=)(?P<value>[^&;#\s\"'<>]+)", re.IGNORECASE)


# A token in a path: the customer portal's sign-in link (/portal/customer/session/<token>) and a member's
# one-time welcome link (/portal/delivery/welcome/<uid>/<token>), an invite's (/portal/delivery/invite/<token>).
_PATH_TOKEN = re.compile(
    r"(?P<name>/portal/(?:customer/session|delivery/invite|delivery/welcome/[^/\s?#]+)/)(?P<value>[^/?#\s\"'<>]+)")


# A secret key (sk_test_…, sk_live_…) or a webhook signing secret (whsec_…) anywhere in a line.
_SECRET = re.compile(r"(?P<value>(?:sk_(?:test|live)_|whsec_)[A-Za-z0-9_-]+)")
KEY_KEPT = 12  # sk_test_ and 4 more: ApiKey.prefix, what the console shows to recognise a key
# gunicorn's atoms for headers that carry a credential: %({authorization}i)s and the like.
_CREDENTIAL_ATOMS = frozenset({"{authorization}i", "{proxy-authorization}i", "{cookie}i", "{set-cookie}o",
                               "{x-api-key}i"})


def _cut_secret(m: re.Match[str]) -> str:
    value = m["value"]
    return value[:KEY_KEPT] + "…" if len(value) > KEY_KEPT else value


def cut(value: str, keep: int = KEY_KEPT) -> str:
    return value[:keep] + "…" if len(value) > keep else value


def _cut(m: re.Match[str]) -> str:
    name, value = m["name"], m["value"]
    return name + (value[:KEEP] + "…" if len(value) > KEEP else value)


def redact(text: str) -> str:
    """``text`` with the value of every ``…token=`` query parameter, and of a portal link's token in its path,
    cut to its first characters and "…"."""
    if "/portal/" in text:
        text = _PATH_TOKEN.sub(_cut, text)
    if "sk_" in text or "whsec_" in text:
        text = _SECRET.sub(_cut_secret, text)
    if "token=" not in text.lower():  # most lines: no regex at all
        return text
    return _TOKEN.sub(_cut, text)


def _redact_atom(name: object, value: object) -> object:
    """A gunicorn access-log atom: Basic's user (``u``) and a credential header are cut whatever they hold."""
    if not isinstance(value, str) or value == "-":
        return _redact_arg(value)
    if name == "u":
        return cut(value)
    if name in _CREDENTIAL_ATOMS:
        scheme, sep, rest = value.partition(" ")
        if not (sep and scheme.isalpha()):
            return cut(value, KEEP)
        return f"{scheme} {cut(rest, KEY_KEPT if rest.startswith(('sk_', 'whsec_')) else KEEP)}"
    return _redact_arg(value)


def _redact_arg(value: object) -> object:
    if not isinstance(value, str):
        return value
    if "token=" in value.lower() and value[:1] not in "?&;/" and "://" not in value and " " not in value:
        return redact("?" + value)[1:]  # a bare query string (gunicorn's %(q)s atom): token=…&x=1
    return redact(value)


class RedactURLTokens(logging.Filter):
    """Every secret a log line may carry (URL tokens, API keys, credential headers) cut to its first
    characters. Rewrites a record's message and its arguments (``django.server`` logs ``'"%s" %s %s'`` with
    the request line as an argument), so every handler and formatter downstream sees only the prefix. Never
    drops a record."""

    def filter(self, record: logging.LogRecord) -> bool:
        if isinstance(record.msg, str):
            record.msg = redact(record.msg)
        args = record.args
        if isinstance(args, tuple):
            record.args = tuple(_redact_arg(a) for a in args)
        elif isinstance(args, MutableMapping):
            # In place: gunicorn's atoms are a dict of its own that answers "-" for a header not sent.
            for k in list(args):
                args[k] = _redact_atom(k, args[k])
        elif isinstance(args, Mapping):
            record.args = {k: _redact_atom(k, v) for k, v in args.items()}
        return True
