"""Where the outbox's sends go: transports, registered by name, each with ``send(submission_id, payload) ->
receipt`` and ``lookup(submission_id) -> receipt | None``.

``KEEPING_TIME["TRANSPORTS"]`` names them: ``recording`` (an outside system in this process), ``django-email``
(Django's email backend), ``http(s)://…`` (a submissions endpoint, through timers/http.py). Others register
their own (webhooks, schedules' HTTP targets). timers/outbox.py claims, sends through the one a row names and
records; ``capture`` sends every row to one transport for a while (a rolled-back --compare way reaches nothing
outside).
"""

from __future__ import annotations

import contextlib
import json
import threading
from collections import Counter
from collections.abc import Iterator, Sequence
from typing import Any, Protocol, TypeVar

from django.conf import settings
from django.core.mail import EmailMessage, get_connection

from .http import Response, send
from .models import Outbox
from .sql import outbox as sql_outbox


class Transport(Protocol):
    def send(self, submission_id: str, payload: dict[str, Any]) -> dict[str, Any]: ...

    def lookup(self, submission_id: str) -> dict[str, Any] | None: ...


T = TypeVar("T", bound=Transport)


class PermanentFailure(Exception):
    """The outside system refused the submission for good (it will not be tried again)."""


class RecordingTransport:
    """An outside system in this process that remembers every submission it received (demos, --compare)."""

    def __init__(self) -> None:
        self.received: Counter[str] = Counter()
        self._lock = threading.Lock()

    def send(self, submission_id: str, payload: dict[str, Any]) -> dict[str, Any]:
        with self._lock:
            self.received[submission_id] += 1
        return {"received": submission_id}

    def lookup(self, submission_id: str) -> dict[str, Any] | None:
        return {"received": submission_id} if self.received[submission_id] else None

    def sent_twice(self) -> int:
        return sum(1 for n in self.received.values() if n > 1)


class HttpTransport:
    """A submissions endpoint: ``POST {url}/submissions`` with the submission id (also as Idempotency-Key),
    and ``GET {url}/submissions/{id}`` to ask whether one arrived (200 with its receipt, 404 if not). Its host
    is held to timers/targets.py's rule (KT_ALLOW_TARGETS names a private one) on the address connected to:
    a refused one (TargetRefused) is a failed try, retried and then failed as any other."""

    def __init__(self, url: str, *, timeout: float = 10.0):
        self.url = url.rstrip("/")
        self.timeout = timeout

    def send(self, submission_id: str, payload: dict[str, Any]) -> dict[str, Any]:
        body = json.dumps({"id": submission_id, "payload": payload}).encode()
        got = send("POST", f"{self.url}/submissions", body=body, keep=None, timeout=self.timeout,
                   headers={"Content-Type": "application/json", "Idempotency-Key": submission_id})
        if 400 <= got.status < 500 and got.status not in (408, 409, 429):
            raise PermanentFailure(f"{got.status} {got.reason}")
        return _receipt(got)

    def lookup(self, submission_id: str) -> dict[str, Any] | None:
        got = send("GET", f"{self.url}/submissions/{submission_id}", keep=None, timeout=self.timeout)
        return None if got.status == 404 else _receipt(got)


class HTTPError(Exception):
    """A submissions endpoint answered neither 2xx nor a refusal for good: the try failed, and is tried again."""


def _receipt(got: Response) -> dict[str, Any]:
    if not 200 <= got.status < 300:
        raise HTTPError(f"HTTP Error {got.status}: {got.reason}")  # as urllib said it: a failed try's reason
    receipt: dict[str, Any] = json.loads(got.body or b"{}")
    return receipt


class DjangoEmailTransport:
    """Email through Django's email backend (SMTP from EMAIL_URL; the console in the demo, locmem in tests).

    A submission's payload is ``{"messages": [{"to": [address], "subject", "body", "ref"}, …]}``: a firing has
    one submission per attempt, so the notifications one firing raises travel together, one email each. The
    n-th message of submission ``sub_…`` carries the Message-ID ``<sub_….n@host>``, the same on every try.

    In doubt, for email: SMTP cannot be asked whether a message arrived, so this transport keeps its own
    answer on the Outbox row: the moment the backend accepts a message, its ref is added to the row's
    receipt (one statement, before the next message is tried). ``lookup`` reads that receipt: a submission
    whose every message is in it is settled without sending; one cut short mid-way is resent, and ``send``
    skips the messages already on the receipt. What is left in doubt is the instant between the backend
    accepting a message and that write (a sender killed exactly there). We choose to send again then: a
    lapse must never be silent, so at least once beats at most once; the copy has the same Message-ID, which
    lets a receiving server or mail client recognise it as the same email.
    """

    def __init__(self) -> None:
        # Per sending thread: the receipts the claim's rows carry, read as one set (prepare), and one mail
        # connection for the claim's emails (an SMTP session, not one a message).
        self._local = threading.local()

    def prepare(self, sends: Sequence[tuple[str, dict[str, Any]]]) -> None:
        """Before a claim's sends: the receipts its rows carry, in one read, and a fresh mail connection."""
        self._local.receipts = sql_outbox.receipts_of([sid for sid, _ in sends])
        self._close()

    def send(self, submission_id: str, payload: dict[str, Any]) -> dict[str, Any]:
        messages = payload.get("messages", [])
        known = getattr(self._local, "receipts", {}).pop(submission_id, None)
        if known is None:  # sent without a claim's prepare (a direct call)
            known = sql_outbox.receipts_of([submission_id])[submission_id]
        done = list(known.get("messages", []))
        host = self._host()
        for n, msg in enumerate(messages):
            ref = msg.get("ref") or str(n)
            if ref in done:
                continue
            try:
                EmailMessage(subject=msg.get("subject", ""), body=msg.get("body", ""), to=list(msg["to"]),
                             headers={"Message-ID": f"<{submission_id}.{n}@{host}>"},
                             connection=self._connection()).send(fail_silently=False)
            except Exception:
                self._close()  # a broken session is not used again
                raise
            done.append(ref)
            sql_outbox.note_receipt(submission_id, {"messages": done})
        return {"messages": done, "emails": len(messages)}

    def _connection(self) -> Any:
        conn = getattr(self._local, "conn", None)
        if conn is None:
            conn = self._local.conn = get_connection(fail_silently=False)
            conn.open()  # opened here, so each send leaves it open for the next: closed by the next claim
        return conn

    def _close(self) -> None:
        conn, self._local.conn = getattr(self._local, "conn", None), None
        if conn is not None:
            with contextlib.suppress(Exception):  # a session the server already dropped has nothing to close
                conn.close()

    def lookup(self, submission_id: str) -> dict[str, Any] | None:
        row = Outbox.objects.filter(pk=submission_id).values("payload", "receipt").first()
        if row is None:
            return None
        refs = [m.get("ref") or str(n) for n, m in enumerate((row["payload"] or {}).get("messages", []))]
        receipt = row["receipt"] or {}
        return receipt if set(refs) <= set(receipt.get("messages", [])) else None

    @staticmethod
    def _host() -> str:
        # Fixed by the settings, not this machine's name: a resend from another host names the same Message-ID.
        sender = settings.DEFAULT_FROM_EMAIL
        return sender.rsplit("@", 1)[1].strip("> ") if "@" in sender else "keeping-time"


def from_spec(spec: str) -> Transport:
    if spec == "recording":
        return RecordingTransport()
    if spec == "django-email":
        return DjangoEmailTransport()
    if spec.startswith(("http://", "https://")):
        return HttpTransport(spec)
    raise ValueError(f"unknown transport {spec!r}: use 'recording', 'django-email' or an http(s):// submissions URL")


# The transports by name: registered (``register``), or made from KEEPING_TIME["TRANSPORTS"] on first use.
registry: dict[str, Transport] = {}
_capture: list[Transport] = []  # while set, every send goes here (a --compare way sends nothing outside)


def register(name: str, transport: Transport) -> None:
    registry[name] = transport


def transport(name: str) -> Transport | None:
    if _capture:
        return _capture[-1]
    if name not in registry:
        spec = settings.KEEPING_TIME.get("TRANSPORTS", {}).get(name)
        if spec is None:
            return None
        registry[name] = from_spec(spec)
    return registry[name]


@contextlib.contextmanager
def capture(into: T) -> Iterator[T]:
    """Route every send to ``into`` for the duration (a rolled-back --compare way must not reach outside)."""
    _capture.append(into)
    try:
        yield into
    finally:
        _capture.pop()
