"""Outside sends, after the commit: one submission id per attempt, claimed with a lease, asked before resent.

A transport is registered by name with ``send(submission_id, payload) -> receipt`` and
``lookup(submission_id) -> receipt | None``; ``KEEPING_TIME["TRANSPORTS"]`` names them (``recording``: in
this process; ``http://…``: a submissions endpoint).

A sender claims owed rows in sets (one statement, SKIP LOCKED) under a lease: ``claimed_by`` names its
database session and ``lease_until`` bounds the claim. While the lease holds and the session lives, no
other sender touches the row, so a slow send is never sent twice by two workers. A row whose sender died
(its session is gone: kill -9) or whose lease ran out is *in doubt*: the next sender asks the outside
system about that submission and sends only if it never arrived. Receipts are recorded in sets.

A domain may be *ordered* (``order_domains``: a webhook endpoint's, timers/webhooks.py): its rows leave one
after another in key order, never past one still owed. Its claim takes the owed rows in key order up to the
first that is not free to send (held by a live sender, or waiting out a backoff), one claimer at a time; a
failed send puts the rest of its claim back; each receipt is written right after its send.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import json
import logging
import os
import queue
import socket
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Protocol

from django.conf import settings
from django.db import connection, transaction
from django.db.models import Q

from .clock import wall_now
from .http import Response, send
from .models import Outbox

log = logging.getLogger(__name__)

CLAIM = 200  # rows one claim takes
RECORD_EVERY = 0.5  # seconds between receipt writes (and lease renewals) while a claim is being sent
MAX_TRIES = 5  # sends that raised before a row is failed for good


class Transport(Protocol):
    def send(self, submission_id: str, payload: dict) -> dict: ...

    def lookup(self, submission_id: str) -> dict | None: ...


class PermanentFailure(Exception):
    """The outside system refused the submission for good (it will not be tried again)."""


class RecordingTransport:
    """An outside system in this process that remembers every submission it received (demos, --compare)."""

    def __init__(self) -> None:
        self.received: Counter[str] = Counter()
        self._lock = threading.Lock()

    def send(self, submission_id: str, payload: dict) -> dict:
        with self._lock:
            self.received[submission_id] += 1
        return {"received": submission_id}

    def lookup(self, submission_id: str) -> dict | None:
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

    def send(self, submission_id: str, payload: dict) -> dict:
        body = json.dumps({"id": submission_id, "payload": payload}).encode()
        got = send("POST", f"{self.url}/submissions", body=body, keep=None, timeout=self.timeout,
                   headers={"Content-Type": "application/json", "Idempotency-Key": submission_id})
        if 400 <= got.status < 500 and got.status not in (408, 409, 429):
            raise PermanentFailure(f"{got.status} {got.reason}")
        return _receipt(got)

    def lookup(self, submission_id: str) -> dict | None:
        got = send("GET", f"{self.url}/submissions/{submission_id}", keep=None, timeout=self.timeout)
        return None if got.status == 404 else _receipt(got)


class HTTPError(Exception):
    """A submissions endpoint answered neither 2xx nor a refusal for good: the try failed, and is tried again."""


def _receipt(got: Response) -> dict:
    if not 200 <= got.status < 300:
        raise HTTPError(f"HTTP Error {got.status}: {got.reason}")  # as urllib said it: a failed try's reason
    return json.loads(got.body or b"{}")


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

    def send(self, submission_id: str, payload: dict) -> dict:
        from django.core.mail import EmailMessage

        messages = payload.get("messages", [])
        done = list(self._receipt(submission_id).get("messages", []))
        host = self._host()
        for n, msg in enumerate(messages):
            ref = msg.get("ref") or str(n)
            if ref in done:
                continue
            EmailMessage(subject=msg.get("subject", ""), body=msg.get("body", ""), to=list(msg["to"]),
                         headers={"Message-ID": f"<{submission_id}.{n}@{host}>"}).send(fail_silently=False)
            done.append(ref)
            Outbox.objects.filter(pk=submission_id).exclude(status="sent").update(receipt={"messages": done})
        return {"messages": done, "emails": len(messages)}

    def lookup(self, submission_id: str) -> dict | None:
        row = Outbox.objects.filter(pk=submission_id).values("payload", "receipt").first()
        if row is None:
            return None
        refs = [m.get("ref") or str(n) for n, m in enumerate((row["payload"] or {}).get("messages", []))]
        receipt = row["receipt"] or {}
        return receipt if set(refs) <= set(receipt.get("messages", [])) else None

    @staticmethod
    def _receipt(submission_id: str) -> dict:
        row = Outbox.objects.filter(pk=submission_id).values_list("receipt", flat=True).first()
        return row if isinstance(row, dict) else {}

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


_transports: dict[str, Transport] = {}
# Called once a transport's submissions settle (sent, or failed for good): [(submission id, ok, receipt or error)].
_settled_hooks: dict[str, Callable[[list[tuple[str, bool, Any]]], None]] = {}
_capture: list[Transport] = []  # while set, every send goes here (a --compare way sends nothing outside)
# Ordered domains, by id prefix: the one transport their rows use, and whether a domain is held (nothing of it
# is claimed while so).
_ordered: dict[str, tuple[str, Callable[[str], bool]]] = {}


def register(name: str, transport: Transport) -> None:
    _transports[name] = transport


def on_settled(name: str, hook: Callable[[list[tuple[str, bool, Any]]], None]) -> None:
    """Hear when ``name``'s submissions settle (a schedule's HTTP call closes its Run, or dead-letters it)."""
    _settled_hooks[name] = hook


def order_domains(prefix: str, *, transport: str, held: Callable[[str], bool] | None = None) -> None:
    """Send the rows of every domain whose id starts with ``prefix`` (all of ``transport``) in key order, one
    at a time, never past one still owed (head of line); ``held(domain)`` true keeps a domain's rows where
    they are."""
    _ordered[prefix] = (transport, held or (lambda domain: False))


def _order_of(domain: str) -> tuple[str, Callable[[str], bool]] | None:
    for prefix, order in _ordered.items():
        if domain.startswith(prefix):
            return order
    return None


def _notify(settled: list[tuple[str, str, bool, Any]]) -> None:
    by: dict[str, list[tuple[str, bool, Any]]] = {}
    for name, sid, ok, detail in settled:
        if name in _settled_hooks:
            by.setdefault(name, []).append((sid, ok, detail))
    for name, results in by.items():
        try:
            _settled_hooks[name](results)
        except Exception:  # the sends stand; what hears them must not undo or block them
            log.exception("settled hook of %s failed", name)


def transport(name: str) -> Transport | None:
    if _capture:
        return _capture[-1]
    if name not in _transports:
        spec = settings.KEEPING_TIME.get("TRANSPORTS", {}).get(name)
        if spec is None:
            return None
        _transports[name] = from_spec(spec)
    return _transports[name]


@contextlib.contextmanager
def capture(into: Transport) -> Iterator[Transport]:
    """Route every send to ``into`` for the duration (a rolled-back --compare way must not reach outside)."""
    _capture.append(into)
    try:
        yield into
    finally:
        _capture.pop()


@dataclass
class DeliverStats:
    sent: int = 0  # sent now
    confirmed: int = 0  # in doubt, and the outside system had it: recorded without sending again
    failed: int = 0  # refused for good, or out of tries
    in_doubt: int = 0  # a send raised: kept, with its reason, for a later try that asks first
    held: int = 0  # left being sent by another live sender
    taken: int = 0  # claimed here, but taken over by another sender while this one was held up: not sent here

    def __iadd__(self, other: DeliverStats) -> DeliverStats:
        for f in ("sent", "confirmed", "failed", "in_doubt", "taken"):
            setattr(self, f, getattr(self, f) + getattr(other, f))
        self.held = other.held
        return self

    @property
    def done(self) -> int:
        return self.sent + self.confirmed + self.failed + self.in_doubt


@dataclass
class Claimed:
    id: str
    transport: str
    payload: dict
    in_doubt: bool  # someone claimed it before: ask the outside system first
    domain: str = ""  # its clock domain: every later write names it, so each stays on the domain's rows


@dataclass
class Taken:
    """A batch's own sends, written already claimed by this sender (``claim_ahead``): sent by ``deliver`` once
    the batch has committed, with no claim of their own."""

    rows: list[Claimed]
    sender: str
    claimed_at: float  # monotonic, no later than the lease's start


def claim_ahead(cur) -> tuple[str, datetime, float]:
    """For sends a transaction is about to write and this same session sends once it commits (a test clock's
    advance, batch by batch): this sender, the lease's end by the database's clock, and the monotonic instant
    the lease counts from (just before it was read). Written so, a row is written once before its receipt, where
    a claim wrote it a second time; a sender that dies before sending leaves it in doubt, as after a claim."""
    me = sender_id()
    at = time.monotonic()
    cur.execute("SELECT clock_timestamp() + make_interval(secs => %s)", [_lease().total_seconds()])
    return me, cur.fetchone()[0], at


def _lease() -> timedelta:
    return timedelta(seconds=float(settings.KEEPING_TIME.get("OUTBOX_LEASE_SECONDS", 30)))


def _backoff(tries: int) -> timedelta:
    return timedelta(seconds=min(300, 2 ** tries))


# -- who is sending: a database session (PostgreSQL), or a process on this host (SQLite) ---------------
_SENDER_SQL = "'pg:' || {a}.pid || ':' || floor(extract(epoch from {a}.backend_start) * 1000000)::bigint"


# A claim's CTE of the senders alive now (their sessions): a row claimed by anyone else is in doubt.
_LIVE_SENDERS = (f"live AS (SELECT {_SENDER_SQL.format(a='a')} AS s FROM pg_stat_activity a "
                 "WHERE a.pid IS NOT NULL AND a.backend_start IS NOT NULL)")


def sender_id() -> str:
    """This sender's name: its database session on PostgreSQL, so a killed sender's claims free at once."""
    connection.ensure_connection()
    if connection.vendor == "postgresql":
        raw = connection.connection
        cached = getattr(raw, "_kt_sender", None)
        if cached is None:
            with connection.cursor() as cur:
                cur.execute(f"SELECT {_SENDER_SQL.format(a='a')} FROM pg_stat_activity a WHERE a.pid = pg_backend_pid()")
                cached = cur.fetchone()[0]
            raw._kt_sender = cached
        return cached
    return f"os:{socket.gethostname()}:{os.getpid()}"


def _os_sender_alive(claimer: str) -> bool:
    # SQLite is one machine's file: a claimer is alive while its process is.
    parts = claimer.split(":")
    if len(parts) != 3 or parts[0] != "os" or parts[1] != socket.gethostname():
        return True  # not ours to judge: the lease decides
    try:
        os.kill(int(parts[2]), 0)
    except (ProcessLookupError, ValueError):
        return False
    except PermissionError:
        return True
    return True


# -- claiming and recording, in sets ----------------------------------------------------------------
def _owed_domains() -> list[str]:
    """The clock domains with sends owed, in order: one index probe per domain (a skip scan over
    outbox_owed_domain), never a read of every owed row, so the sweep costs the same with a backlog."""
    if connection.vendor == "postgresql":
        with connection.cursor() as cur:
            cur.execute(
                """
                WITH RECURSIVE d(domain) AS (
                    SELECT min(domain) FROM timers_outbox WHERE status IN ('pending', 'sending')
                    UNION ALL
                    SELECT (SELECT min(o.domain) FROM timers_outbox o
                            WHERE o.status IN ('pending', 'sending') AND o.domain > d.domain)
                    FROM d WHERE d.domain IS NOT NULL
                )
                SELECT domain FROM d WHERE domain IS NOT NULL
                """
            )
            return [r[0] for r in cur.fetchall()]
    return list(Outbox.objects.filter(status__in=["pending", "sending"]).order_by("domain")
                .values_list("domain", flat=True).distinct())


def _claim(domain: str, me: str, limit: int) -> list[Claimed]:
    """Claim a set of one domain's owed rows: one statement, on the domain's rows only (one shard when the
    tables are distributed by domain, docs/scaling.md), in outbox_owed_domain's order.

    The UPDATE joins the picked rows on (id, domain) as the pick returned them, never on the domain as a
    constant: a domain whose rows are newer than the statistics (every new test clock's) is estimated at one
    row, and the planner then walked all of its rows once per picked row (0.5 to 2 s a claim instead of a
    few ms; tests/test_query_plans.py, the state "new")."""
    order = _order_of(domain)
    if order is not None:
        return _claim_ordered(domain, order[0], me, limit)
    lease_s = _lease().total_seconds()
    if connection.vendor == "postgresql":
        # A row this very session claimed is in doubt here, never held: a session claims only inside deliver
        # and sends what it claimed before it claims again, so such a row is one a deliver left (it raised) or a
        # batch wrote for it and it never sent (claim_ahead): asked first, then sent.
        params: list = [me, domain, limit, me, lease_s]
        with connection.cursor() as cur:
            cur.execute(
                f"""
                WITH {_LIVE_SENDERS}, c AS (
                    SELECT o.id, o.domain, o.claimed_by AS prev FROM timers_outbox o
                    WHERE o.status IN ('pending', 'sending')
                      AND (o.next_try_at IS NULL OR o.next_try_at <= clock_timestamp())
                      AND (o.status = 'pending' OR o.lease_until IS NULL OR o.lease_until < clock_timestamp()
                           OR o.claimed_by NOT IN (SELECT s FROM live) OR o.claimed_by = %s)
                      AND o.domain = %s
                    ORDER BY o.created_at, o.id
                    LIMIT %s
                    FOR UPDATE OF o SKIP LOCKED
                )
                UPDATE timers_outbox o
                SET status = 'sending', claimed_by = %s,
                    lease_until = clock_timestamp() + make_interval(secs => %s)
                FROM c WHERE o.id = c.id AND o.domain = c.domain AND o.domain = (SELECT %s::varchar)
                RETURNING o.id, o.transport, o.payload, c.prev, o.created_at, o.domain
                """,
                # The domain again as a value the planner cannot see (as timers/store.py's _DOMAIN): a table split
                # by domain reads one part at run time, and a domain newer than the statistics is no walk.
                [*params, domain],
            )
            rows = cur.fetchall()
        rows.sort(key=lambda r: (r[4], r[0]))
        return [Claimed(r[0], r[1], r[2] if isinstance(r[2], dict) else json.loads(r[2]), bool(r[3]), r[5])
                for r in rows]
    now = wall_now()
    with transaction.atomic():
        qs = Outbox.objects.filter(domain=domain, status__in=["pending", "sending"]).filter(
            Q(next_try_at__isnull=True) | Q(next_try_at__lte=now))
        picked = []
        for row in qs.order_by("created_at", "id").only("id", "domain", "transport", "payload", "status",
                                                         "claimed_by", "lease_until")[: limit * 4]:
            claimable = (row.status == "pending" or row.lease_until is None or row.lease_until < now
                         or (row.claimed_by != me and not _os_sender_alive(row.claimed_by)))
            if claimable:
                picked.append(Claimed(row.id, row.transport, row.payload, bool(row.claimed_by), row.domain))
            if len(picked) == limit:
                break
        Outbox.objects.filter(pk__in=[c.id for c in picked]).update(
            status="sending", claimed_by=me, lease_until=now + _lease())
    return picked


def _claim_ordered(domain: str, transport_name: str, me: str, limit: int) -> list[Claimed]:
    """Claim an ordered domain's head: its owed rows in key order, up to (not including) the first one that is
    not free to send now, so nothing leaves while an earlier row is owed. Claimers of one domain take turns (a
    transaction-scoped advisory lock on PostgreSQL; SQLite writes one at a time): two claims computed side by
    side could each take a different part of the line and send them at once, out of order."""
    lease_s = _lease().total_seconds()
    if connection.vendor == "postgresql":
        with transaction.atomic(), connection.cursor() as cur:
            cur.execute("SELECT pg_try_advisory_xact_lock(hashtextextended(%s, 0))", [f"kt.outbox.ordered:{domain}"])
            if not cur.fetchone()[0]:
                return []  # another sender is claiming this line right now: the head is its
            # The line, read in key order (a scan of outbox_owed_in_order that the LIMIT stops); then the free
            # prefix taken by primary key alone, as receipts are: with the domain beside it the planner, without
            # fresh statistics, walks the domain's every owed row in outbox_owed_domain instead.
            cur.execute(
                f"""
                WITH {_LIVE_SENDERS}
                SELECT o.id, o.claimed_by,
                       bool_and((o.next_try_at IS NULL OR o.next_try_at <= clock_timestamp())
                                AND (o.status = 'pending' OR o.lease_until IS NULL OR o.lease_until < clock_timestamp()
                                     OR o.claimed_by NOT IN (SELECT s FROM live)))
                           OVER (ORDER BY o.key, o.attempt, o.seq)
                FROM (SELECT id, key, attempt, seq, status, claimed_by, lease_until, next_try_at FROM timers_outbox
                      WHERE domain = %s AND transport = %s AND status IN ('pending', 'sending')
                      ORDER BY key, attempt, seq LIMIT %s) o
                """,
                [domain, transport_name, limit],
            )
            line = [(r[0], r[1]) for r in cur.fetchall() if r[2]]
            if not line:
                return []
            prev = dict(line)
            ids = list(prev)
            cur.execute(
                "UPDATE timers_outbox SET status = 'sending', claimed_by = %s, "
                "lease_until = clock_timestamp() + make_interval(secs => %s) "
                "WHERE id = ANY(%s::varchar[]) AND status IN ('pending', 'sending') "
                "RETURNING id, transport, payload, key, attempt, seq, domain",
                [me, lease_s, ids],
            )
            rows = [(r[0], r[1], r[2], prev[r[0]], r[3], r[4], r[5], r[6]) for r in cur.fetchall()]
        rows.sort(key=lambda r: (r[4], r[5], r[6]))
        return [Claimed(r[0], r[1], r[2] if isinstance(r[2], dict) else json.loads(r[2]), bool(r[3]), r[7])
                for r in rows]
    now = wall_now()
    picked: list[Claimed] = []
    with transaction.atomic():
        for row in (Outbox.objects.filter(domain=domain, transport=transport_name, status__in=["pending", "sending"])
                    .order_by("key", "attempt", "seq")
                    .only("id", "domain", "transport", "payload", "status", "claimed_by", "lease_until",
                          "next_try_at")[:limit]):
            free = ((row.next_try_at is None or row.next_try_at <= now)
                    and (row.status == "pending" or row.lease_until is None or row.lease_until < now
                         or (row.claimed_by != me and not _os_sender_alive(row.claimed_by))))
            if not free:
                break
            picked.append(Claimed(row.id, row.transport, row.payload, bool(row.claimed_by), row.domain))
        Outbox.objects.filter(pk__in=[c.id for c in picked]).update(
            status="sending", claimed_by=me, lease_until=now + _lease())
    return picked


def _record(receipts: list[tuple[str, dict]], *, relaxed: bool = False) -> None:
    """Write receipts in one statement (by id: docs/scaling.md says why not by domain yet).

    ``id = ANY(ids)`` beside the join hands the planner the primary key's index condition, so a set of
    receipts is an index lookup even while the table's statistics are missing or stale. ``relaxed``: the
    transport's far end takes a send twice (webhooks: at least once, with the Idempotency-Key), so the
    receipt's commit need not wait for its flush; it is visible at once all the same, and a sender killed
    after it loses nothing (the server writes it). Only the server's own crash can lose the last few, and
    then those rows are sent again, once."""
    if not receipts:
        return
    if connection.vendor == "postgresql":
        ids = [r[0] for r in receipts]
        own = relaxed and not connection.in_atomic_block
        with transaction.atomic() if own else contextlib.nullcontext(), connection.cursor() as cur:
            if own:
                cur.execute("SET LOCAL synchronous_commit TO OFF")
            cur.execute(
                "UPDATE timers_outbox o SET status = 'sent', receipt = v.r::jsonb, sent_at = clock_timestamp(), "
                "lease_until = NULL, next_try_at = NULL, error = '' "
                "FROM unnest(%s::varchar[], %s::text[]) AS v(id, r) "
                "WHERE o.id = ANY(%s::varchar[]) AND o.id = v.id AND o.status <> 'sent'",
                [ids, [json.dumps(r[1], default=str) for r in receipts], ids],
            )
        return
    now = wall_now()
    Outbox.objects.bulk_update(
        [Outbox(id=sid, status="sent", receipt=receipt, sent_at=now, lease_until=None, next_try_at=None, error="")
         for sid, receipt in receipts],
        ["status", "receipt", "sent_at", "lease_until", "next_try_at", "error"], batch_size=500)


def _renew(me: str, ids: list[str]) -> set[str]:
    """Renew the lease on the rows this sender claimed that no one has taken since: the ids it still holds.

    One conditional statement: a sender that took a row over (its lease had run out) wrote its own name on
    it, so the row no longer matches, and the row lock orders a renewal against a claim in flight."""
    if not ids:
        return set()
    if connection.vendor == "postgresql":
        with connection.cursor() as cur:
            cur.execute(
                "UPDATE timers_outbox SET lease_until = clock_timestamp() + make_interval(secs => %s) "
                "WHERE id = ANY(%s) AND claimed_by = %s AND status = 'sending' RETURNING id",
                [_lease().total_seconds(), ids, me],
            )
            return {r[0] for r in cur.fetchall()}
    with transaction.atomic():
        mine = Outbox.objects.select_for_update().filter(pk__in=ids, claimed_by=me, status="sending")
        held = set(mine.values_list("id", flat=True))
        Outbox.objects.filter(pk__in=held).update(lease_until=wall_now() + _lease())
    return held


def _fail(sid: str, domain: str, error: str, *, permanent: bool, max_tries: int = MAX_TRIES,
          retry_after: Callable[[dict, int, datetime], timedelta | None] | None = None) -> bool:
    """A send that raised: in doubt (asked first next time, after a backoff), or failed for good. A transport
    with ``retry_after(payload, tries, created_at)`` decides the backoff itself (None: failed for good)."""
    row = Outbox.objects.filter(domain=domain, pk=sid).values("tries", "payload", "created_at").first()
    if row is None:
        return True
    tries = row["tries"] + 1
    if retry_after is not None:
        wait = None if permanent else retry_after(row["payload"], tries, row["created_at"])
        final = wait is None
    else:
        final = permanent or tries >= max_tries
        wait = _backoff(tries)
    # Never over a receipt, nor over a void (its endpoint or clock is gone): those stand.
    Outbox.objects.filter(domain=domain, pk=sid).exclude(status__in=["sent", "voided"]).update(
        status="failed" if final else "sending", error=error[:500], tries=tries, lease_until=None,
        next_try_at=None if final else wall_now() + wait)
    return final


def _release(ids: list[str], me: str, domains: list[str]) -> None:
    # Claimed but never attempted (stopping): back to pending, no doubt about them.
    if ids:
        Outbox.objects.filter(domain__in=domains, pk__in=ids, claimed_by=me, status="sending").update(
            status="pending", claimed_by="", lease_until=None)


def _send_claimed(rows: list[Claimed], me: str, stats: DeliverStats, stop: threading.Event | None,
                  claimed_at: float) -> None:
    settled: list[tuple[str, str, bool, Any]] = []
    try:
        _send_claimed_rows(rows, me, stats, stop, settled, claimed_at)
    finally:
        _notify(settled)


def _attempt(t: Transport | None, row: Claimed) -> tuple[dict | None, bool, Exception | None]:
    """One row's outside call: (receipt, confirmed without sending, or what it raised). The transport's ask and
    send only, nothing written here: a transport that allows it (``concurrent_sends``) runs this in a sender
    thread, and every write stays with the claim's own database connection."""
    try:
        if t is None:
            raise PermanentFailure(f"no transport {row.transport!r} is configured")
        receipt = t.lookup(row.id) if row.in_doubt else None
        if receipt is not None:
            return receipt, True, None
        return t.send(row.id, row.payload), False, None
    except Exception as exc:
        return None, False, exc


_senders: list[concurrent.futures.ThreadPoolExecutor] = []


def send_threads() -> int:
    """The most sends of one claim in flight at once (a transport's concurrent_sends, bounded): KT_SEND_THREADS."""
    return max(1, int(settings.KEEPING_TIME.get("SEND_THREADS", 4)))


def _sender_pool() -> concurrent.futures.ThreadPoolExecutor:
    if not _senders:
        _senders.append(concurrent.futures.ThreadPoolExecutor(send_threads(), thread_name_prefix="kt-send"))
    return _senders[0]


os.register_at_fork(after_in_child=_senders.clear)  # a forked worker makes its own threads


def _send_claimed_rows(rows: list[Claimed], me: str, stats: DeliverStats, stop: threading.Event | None,
                       settled: list[tuple[str, str, bool, Any]], claimed_at: float) -> None:
    """Send a claim's rows, writing receipts and renewing the lease as it goes.

    A row is sent only while at least half its lease is left, by this process's monotonic clock from just
    before the statement that claimed or renewed it: a sender that was frozen (a stop, a long pause, a
    swapped-out VM) renews before its next send and drops the rows another sender took meanwhile, instead
    of sending them a second time. What no sender can close is a freeze of more than half a lease between
    that check and the request leaving: the far end sees the same submission id twice, and a far end that
    keeps submissions by id answers the second with the first's receipt.

    The rows leave in order; a transport with ``concurrent_sends`` has up to that many (at most send_threads()) in
    flight at once, each started only after the checks above, and each outcome (a receipt, a failed try, a
    failure for good) is written here as it comes back, by this thread."""
    receipts: list[tuple[str, dict]] = []
    domains = sorted({r.domain for r in rows})
    # An ordered domain's claim (one domain) goes one row after another: each receipt written at once, and
    # nothing sent past a row that failed.
    ordered = len(domains) == 1 and _order_of(domains[0]) is not None
    half = _lease().total_seconds() / 2
    fresh_until = claimed_at + half
    taken: set[str] = set()
    names = sorted({r.transport for r in rows})
    # A transport may read what its sends need for the whole set at once (webhooks: events, endpoints, log).
    for name in names:
        prepare = getattr(transport(name), "prepare", None)
        if prepare is not None:
            prepare([(r.id, r.payload) for r in rows if r.transport == name])
    # Receipts of a far end that takes a send twice commit without waiting for their flush (_record).
    relaxed = all(getattr(transport(name), "relaxed_receipts", False) for name in names)
    width = 1 if ordered else max(1, min([send_threads(), *(getattr(transport(n), "concurrent_sends", 1)
                                                             for n in names)]))
    # The sends in flight, and where each comes back when done (a queue: no waiter per future and per wait).
    flying = 0
    back: queue.SimpleQueue = queue.SimpleQueue()

    def outcome(row: Claimed, t: Transport | None, result: tuple[dict | None, bool, Exception | None]) -> bool:
        """Write what one send came to; False when an ordered domain must stop behind it."""
        nonlocal receipts
        receipt, confirmed, exc = result
        if exc is None:
            if confirmed:
                stats.confirmed += 1
            else:
                stats.sent += 1
            receipts.append((row.id, receipt))
            settled.append((row.transport, row.id, True, receipt))
            if ordered:  # a kill -9 then leaves at most the one send in flight in doubt
                _record(receipts, relaxed=relaxed)
                receipts = []
            return True
        permanent = isinstance(exc, PermanentFailure)
        log.warning("send %s failed: %s", row.id, exc)
        _record(receipts, relaxed=relaxed)
        receipts = []
        tries = getattr(t, "max_tries", None)
        if _fail(row.id, row.domain, f"{type(exc).__name__}: {exc}", permanent=permanent,
                 max_tries=tries(row.payload) if tries is not None else MAX_TRIES,
                 retry_after=getattr(t, "retry_after", None)):
            settled.append((row.transport, row.id, False, f"{exc}"))
            stats.failed += 1
            return True
        stats.in_doubt += 1
        return not ordered

    def land(block: bool) -> None:
        # Write the outcome of one send that came back (of every one in flight, when ``block``).
        nonlocal flying
        while flying:
            row, t, result = back.get()
            flying -= 1
            outcome(row, t, result)
            if not block:
                return

    def fly(row: Claimed, t: Transport | None) -> None:
        result: tuple = (None, False, RuntimeError("the send's thread stopped before it finished"))
        try:
            result = _attempt(t, row)
        finally:  # always back: the claim's thread waits for every send it started
            back.put((row, t, result))

    last = time.monotonic()
    try:
        for n, row in enumerate(rows):
            if stop is not None and stop.is_set():
                land(True)
                _record(receipts, relaxed=relaxed)
                _release([r.id for r in rows[n:] if r.id not in taken], me, domains)
                return
            now = time.monotonic()
            if now >= fresh_until or (receipts and now - last >= RECORD_EVERY):
                _record(receipts, relaxed=relaxed)
                receipts, last = [], now
                rest = [r.id for r in rows[n:] if r.id not in taken]
                held = _renew(me, rest)
                fresh_until = now + half
                if len(held) < len(rest):
                    lost = set(rest) - held
                    taken |= lost
                    stats.taken += len(lost)
                    log.warning("%d claimed sends were taken over by another sender while this one was held up; "
                                "not sending them", len(lost))
            if row.id in taken:
                continue
            t = transport(row.transport)
            if width == 1:
                if not outcome(row, t, _attempt(t, row)):
                    # the rest waits behind it, in order: back to pending, never attempted here
                    _release([r.id for r in rows[n + 1:] if r.id not in taken], me, domains)
                    return
                continue
            while flying >= width:
                land(False)
            _sender_pool().submit(fly, row, t)
            flying += 1
        land(True)
    finally:
        if flying:  # an error here: the sends already out still land before the claim is left
            land(True)
    _record(receipts, relaxed=relaxed)


def deliver(domain: str | None, *, limit: int | None = None, stop: threading.Event | None = None,
            once: bool = False, taken: Taken | None = None) -> DeliverStats:
    """Send everything owed that no live sender holds (settling what is in doubt first); in sets.

    With no domain (the worker loop), every domain that owes sends, a set from each in turn: each claim
    stays on one domain's rows, and a domain with a backlog does not hold the others' sends back.

    ``once``: one claim, and no count of what other senders hold, for a caller that looks at what is left
    itself (a compare's pinned clock, timers/worker.py: its rows are uncommitted, no other sender sees them).
    ``taken``: a batch's sends written claimed by this sender (``claim_ahead``), sent first, CLAIM at a time, as
    claims are (a session that is not the one they name, after a reconnect, leaves them to the claims: in doubt)."""
    stats = DeliverStats()
    me = sender_id()
    if taken is not None and taken.sender == me:
        for n in range(0, len(taken.rows), CLAIM):
            rows = taken.rows[n:n + CLAIM]
            if stop is not None and stop.is_set():
                rest = taken.rows[n:]
                _release([r.id for r in rest], me, sorted({r.domain for r in rest}))
                break
            _send_claimed(rows, me, stats, stop, taken.claimed_at)
    active = [domain] if domain is not None else _owed_domains()
    while active:
        still = []
        for d in active:
            if (stop is not None and stop.is_set()) or (limit is not None and stats.done >= limit):
                active = []
                break
            order = _order_of(d)
            if order is not None and order[1](d):
                continue  # held (a disabled endpoint): its rows wait where they are
            claimed_at = time.monotonic()  # before the claim: the lease runs from no earlier than this
            rows = _claim(d, me, CLAIM if limit is None else min(CLAIM, limit - stats.done))
            if rows:
                _send_claimed(rows, me, stats, stop, claimed_at)
                still.append(d)
        else:
            active = [] if once else still
    if not once:
        stats.held = _held_elsewhere(domain, me)
    return stats


def _held_elsewhere(domain: str | None, me: str) -> int:
    qs = Outbox.objects.filter(status="sending", lease_until__gt=wall_now()).exclude(claimed_by=me)
    if domain is not None:
        qs = qs.filter(domain=domain)
    return qs.count()


def settle(domain: str, *, wait: float | None = None) -> DeliverStats:
    """Deliver what the domain owes and wait for sends other live senders hold, so that on return every
    owed send has been made, has failed, or is in doubt with its reason (``Outbox.error``)."""
    stats = deliver(domain)
    deadline = time.monotonic() + (wait if wait is not None else 2 * _lease().total_seconds())
    while stats.held and time.monotonic() < deadline:
        time.sleep(0.05)
        stats += deliver(domain)
    return stats


def owed(domain: str | None = None) -> dict[str, int]:
    """What the outbox still owes: pending, being sent (leased), in doubt (a send raised)."""
    qs = Outbox.objects.filter(status__in=["pending", "sending"])
    if domain is not None:
        qs = qs.filter(domain=domain)
    now: datetime = wall_now()
    return {
        "pending": qs.filter(status="pending").count(),
        "sending": qs.filter(status="sending", lease_until__gt=now).count(),
        "in_doubt": qs.filter(status="sending").filter(Q(lease_until__isnull=True) | Q(lease_until__lte=now)).count(),
    }


def void(domain: str) -> int:
    """A deleted test clock's sends that never left: voided, never sent."""
    return Outbox.objects.filter(domain=domain, status="pending").update(status="voided", error="test_clock.deleted")
