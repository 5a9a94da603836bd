"""The outbox's statements, each beside its SQLite fallback: whether a claimer lives, which domains owe sends, a claim
(of any domain's owed rows, or of an ordered domain's head), a lease's renewal and a set of receipts.

timers/outbox.py calls these and holds the control flow. On PostgreSQL a sender is its database session (named
by timers/sql/sessions.py), so a claim can tell at once that a claimer is gone (``LIVE_SENDERS``); on SQLite,
one machine's file, it is a process of this host, alive while the process is. A claimed row comes back as ``(id, transport, payload, in doubt,
domain)``, in the order it is to be sent.
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
from collections.abc import Iterator
from datetime import datetime, timedelta
from typing import Any

from django.db import connection, transaction
from django.db.models import Q

from ..clock import wall_now
from ..models import Outbox
from . import one_row
from .sessions import LIVE_SESSIONS, SESSION_NAME, commit_unflushed, session_unflushed

Row = tuple[str, str, dict[str, Any], bool, str]  # a claimed row: id, transport, payload, in doubt, domain

# A claim's CTE of the senders alive now (their sessions, named as timers/sql/sessions.py names one): a row
# claimed by anyone else is in doubt.
LIVE_SENDERS = (f"live AS (SELECT {SESSION_NAME.format(a='a')} AS s FROM pg_stat_activity a "
                "WHERE a.pid IS NOT NULL AND a.backend_start IS NOT NULL)")

# A lease's end by the database's clock, ``secs`` from now (claim_ahead: sends written already claimed).
LEASE_END = "SELECT clock_timestamp() + make_interval(secs => %s)"

# The domains that owe sends, in order: a skip scan over outbox_owed_domain, one index probe per domain.
OWED_DOMAINS = """
    WITH RECURSIVE d(domain) AS (
        SELECT min(domain) FROM timers_outbox WHERE status IN ('pending', 'sending')
        UNION ALL
        SELECT (SELECT min(o.domain) FROM timers_outbox o
                WHERE o.status IN ('pending', 'sending') AND o.domain > d.domain)
        FROM d WHERE d.domain IS NOT NULL
    )
    SELECT domain FROM d WHERE domain IS NOT NULL
"""

# Claim a set of one domain's owed rows (params: me, domain, limit, me, lease seconds, domain). The UPDATE joins
# the picked rows on (id, domain) as the pick returned them, never on the domain as a constant: a domain whose
# rows are newer than the statistics (every new test clock's) is estimated at one row, and the planner then
# walked all of its rows once per picked row (0.5 to 2 s a claim instead of a few ms; tests/timers/test_query_plans.py,
# the state "new"). The domain again as a value the planner cannot see (as timers/store.py's _DOMAIN): a table
# split by domain reads one part at run time, and a domain newer than the statistics is no walk. A row this very
# session claimed is in doubt here, never held: a session claims only inside deliver and sends what it claimed
# before it claims again, so such a row is one a deliver left (it raised) or a batch wrote for it and it never
# sent (claim_ahead): asked first, then sent.
CLAIM = f"""
    WITH {LIVE_SENDERS}, c AS (
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
"""

# Claimers of one ordered domain take turns: a transaction-scoped advisory lock, tried (params: the lock's name).
ORDERED_TURN = "SELECT pg_try_advisory_xact_lock(hashtextextended(%s, 0))"

# An ordered domain's line in key order, each row with whether it and every row before it are free to send now
# (params: domain, transport, limit): a scan of outbox_owed_in_order that the LIMIT stops.
ORDERED_LINE = f"""
    WITH {LIVE_SENDERS}
    SELECT o.id, o.claimed_by,
           bool_and((o.next_try_at IS NULL OR o.next_try_at <= clock_timestamp())
                    AND (o.status = 'pending' OR o.lease_until IS NULL OR o.lease_until < clock_timestamp()
                         OR o.claimed_by NOT IN (SELECT s FROM live)))
               OVER (ORDER BY o.key, o.attempt, o.seq)
    FROM (SELECT id, key, attempt, seq, status, claimed_by, lease_until, next_try_at FROM timers_outbox
          WHERE domain = %s AND transport = %s AND status IN ('pending', 'sending')
          ORDER BY key, attempt, seq LIMIT %s) o
"""

# The line's free prefix taken, by primary key alone, as receipts are: with the domain beside it the planner,
# without fresh statistics, walks the domain's every owed row in outbox_owed_domain instead (params: me, lease
# seconds, ids).
ORDERED_TAKE = ("UPDATE timers_outbox SET status = 'sending', claimed_by = %s, "
                "lease_until = clock_timestamp() + make_interval(secs => %s) "
                "WHERE id = ANY(%s::varchar[]) AND status IN ('pending', 'sending') "
                "RETURNING id, transport, payload, key, attempt, seq, domain")

# Receipts in one statement, by id (docs/scaling.md says why not by domain yet): ``id = ANY(ids)`` beside the
# join hands the planner the primary key's index condition, so a set of receipts is an index lookup even while
# the table's statistics are missing or stale (params: ids, receipts as JSON text, ids).
RECORD = ("UPDATE timers_outbox o SET status = 'sent', receipt = v.r::jsonb, sent_at = clock_timestamp(), "
          "lease_until = NULL, next_try_at = NULL, error = '' "
          "FROM unnest(%s::varchar[], %s::text[]) AS v(id, r) "
          "WHERE o.id = ANY(%s::varchar[]) AND o.id = v.id AND o.status <> 'sent'")

# One email accepted by the mail server: its ref joins the row's receipt before the next is tried (params: the
# receipt as JSON, id). A row already settled keeps the receipt its settle wrote.
NOTE_RECEIPT = "UPDATE timers_outbox SET receipt = %s::jsonb WHERE id = %s AND status <> 'sent'"

# Renew the lease on the rows this sender claimed that no one has taken since (params: lease seconds, ids, me).
RENEW = ("UPDATE timers_outbox SET lease_until = clock_timestamp() + make_interval(secs => %s) "
         "WHERE id = ANY(%s) AND claimed_by = %s AND status = 'sending' RETURNING id")



def _pg() -> bool:
    return connection.vendor == "postgresql"


def _payload(raw: Any) -> dict[str, Any]:
    return raw if isinstance(raw, dict) else json.loads(raw)


# -- who is sending (a sender's name: timers/sql/sessions.py) -------------------------------------------------
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


def lease_end(cur: Any, lease: timedelta) -> datetime:
    """The end of a lease taken now, by the database's clock, on the caller's cursor (PostgreSQL)."""
    cur.execute(LEASE_END, [lease.total_seconds()])
    end: datetime = one_row(cur)[0]
    return end


# -- claiming ---------------------------------------------------------------------------------------------------
def owed_domains() -> list[str]:
    """The clock domains with sends owed, in order: one index probe per domain, never a read of every owed row,
    so the sweep costs the same with a backlog."""
    if _pg():
        with connection.cursor() as cur:
            cur.execute(OWED_DOMAINS)
            return [r[0] for r in cur.fetchall()]
    return list(Outbox.objects.filter(status__in=["pending", "sending"]).order_by("domain")
                .values_list("domain", flat=True).distinct())


def claim(domain: str, me: str, limit: int, lease: timedelta) -> list[Row]:
    """Claim a set of one domain's owed rows: one statement, on the domain's rows only (one shard when the
    tables are distributed by domain, docs/scaling.md), in outbox_owed_domain's order."""
    if _pg():
        with connection.cursor() as cur:
            cur.execute(CLAIM, [me, domain, limit, me, lease.total_seconds(), domain])
            rows = cur.fetchall()
        rows.sort(key=lambda r: (r[4], r[0]))
        return [(r[0], r[1], _payload(r[2]), bool(r[3]), r[5]) for r in rows]
    now = wall_now()
    with transaction.atomic():
        qs = Outbox.objects.filter(domain=domain, status__in=["pending", "sending"]).filter(
            Q(next_try_at__isnull=True) | Q(next_try_at__lte=now))
        picked: list[Row] = []
        for row in qs.order_by("created_at", "id").only("id", "domain", "transport", "payload", "status",
                                                         "claimed_by", "lease_until")[: limit * 4]:
            claimable = (row.status == "pending" or row.lease_until is None or row.lease_until < now
                         or (row.claimed_by != me and not _os_sender_alive(row.claimed_by)))
            if claimable:
                picked.append((row.id, row.transport, row.payload, bool(row.claimed_by), row.domain))
            if len(picked) == limit:
                break
        Outbox.objects.filter(pk__in=[r[0] for r in picked]).update(
            status="sending", claimed_by=me, lease_until=now + lease)
    return picked


def claim_ordered(domain: str, transport: str, me: str, limit: int, lease: timedelta) -> list[Row]:
    """Claim an ordered domain's head: its owed rows in key order, up to (not including) the first one that is
    not free to send now. Claimers of one domain take turns (an advisory lock on PostgreSQL, none now: another
    is claiming this line; SQLite writes one at a time): two claims computed side by side could each take a
    different part of the line and send them at once, out of order."""
    if _pg():
        with transaction.atomic(), connection.cursor() as cur:
            cur.execute(ORDERED_TURN, [f"kt.outbox.ordered:{domain}"])
            if not cur.fetchone()[0]:
                return []  # another sender is claiming this line right now: the head is its
            cur.execute(ORDERED_LINE, [domain, transport, limit])
            line = [(r[0], r[1]) for r in cur.fetchall() if r[2]]
            if not line:
                return []
            prev = dict(line)
            cur.execute(ORDERED_TAKE, [me, lease.total_seconds(), list(prev)])
            rows = [(r[0], r[1], r[2], prev[r[0]], r[3], r[4], r[5], r[6]) for r in cur.fetchall()]
        rows.sort(key=lambda r: (r[4], r[5], r[6]))
        return [(r[0], r[1], _payload(r[2]), bool(r[3]), r[7]) for r in rows]
    now = wall_now()
    picked: list[Row] = []
    with transaction.atomic():
        for row in (Outbox.objects.filter(domain=domain, transport=transport, status__in=["pending", "sending"])
                    .order_by("key", "attempt", "seq")
                    .only("id", "domain", "transport", "payload", "status", "claimed_by", "lease_until",
                          "next_try_at")[:limit]):
            free = ((row.next_try_at is None or row.next_try_at <= now)
                    and (row.status == "pending" or row.lease_until is None or row.lease_until < now
                         or (row.claimed_by != me and not _os_sender_alive(row.claimed_by))))
            if not free:
                break
            picked.append((row.id, row.transport, row.payload, bool(row.claimed_by), row.domain))
        Outbox.objects.filter(pk__in=[r[0] for r in picked]).update(
            status="sending", claimed_by=me, lease_until=now + lease)
    return picked


# -- while a claim is sent --------------------------------------------------------------------------------------
@contextlib.contextmanager
def unflushed(*, savepoint: bool = False) -> Iterator[None]:
    """Writes whose commit need not wait for its flush: outside a caller's transaction on PostgreSQL, in a
    transaction of their own with synchronous_commit off; inside one (or on SQLite), in a savepoint when
    ``savepoint``, else as they are. Visible at once all the same; only the server's own crash can lose them.
    In a session unflushed already (timers/sql/sessions.py, ``unflushed_session``), each as it is: its own
    commit skips the wait already."""
    if _pg() and not connection.in_atomic_block:
        if session_unflushed():
            yield
            return
        with transaction.atomic():
            commit_unflushed()
            yield
    elif savepoint:
        with transaction.atomic():
            yield
    else:
        yield


def record(receipts: list[tuple[str, dict[str, Any] | None]], *, relaxed: bool = False) -> None:
    """Write receipts in one statement. ``relaxed``: the transport's far end takes a send twice (webhooks: at
    least once, with the Idempotency-Key), so the receipts' commit need not wait for its flush (``unflushed``):
    a sender killed after it loses nothing (the server writes it); only the server's own crash can lose the last
    few, and then those rows are sent again, once."""
    if not receipts:
        return
    if _pg():
        ids = [r[0] for r in receipts]
        with unflushed() if relaxed else contextlib.nullcontext(), connection.cursor() as cur:
            cur.execute(RECORD, [ids, [json.dumps(r[1], default=str) for r in receipts], ids])
        return
    now = wall_now()
    Outbox.objects.bulk_update(
        [Outbox(id=sid, status="sent", receipt=receipt, sent_at=now, lease_until=None, next_try_at=None, error="")
         for sid, receipt in receipts],
        ["status", "receipt", "sent_at", "lease_until", "next_try_at", "error"], batch_size=500)


def receipts_of(ids: list[str]) -> dict[str, dict[str, Any]]:
    """The receipt each row carries already, {} for none (a send cut short: some of its emails went), in one read."""
    found = dict(Outbox.objects.filter(pk__in=ids, receipt__isnull=False).values_list("id", "receipt"))
    return {sid: r if isinstance(r := found.get(sid), dict) else {} for sid in ids}


def note_receipt(submission_id: str, receipt: dict[str, Any]) -> None:
    """Write one send's receipt so far, at once and on its own (autocommit): a sender killed after it finds it."""
    if _pg():
        with connection.cursor() as cur:
            cur.execute(NOTE_RECEIPT, [json.dumps(receipt), submission_id])
        return
    Outbox.objects.filter(pk=submission_id).exclude(status="sent").update(receipt=receipt)


def renew(me: str, ids: list[str], lease: timedelta) -> set[str]:
    """Renew the lease on the rows this sender claimed that no one has taken since: the ids it still holds.

    One conditional statement: a sender that took a row over (its lease had run out) wrote its own name on
    it, so the row no longer matches, and the row lock orders a renewal against a claim in flight."""
    if not ids:
        return set()
    if _pg():
        with connection.cursor() as cur:
            cur.execute(RENEW, [lease.total_seconds(), ids, me])
            return {r[0] for r in cur.fetchall()}
    with transaction.atomic():
        mine = Outbox.objects.select_for_update().filter(pk__in=ids, claimed_by=me, status="sending")
        held = set(mine.values_list("id", flat=True))
        Outbox.objects.filter(pk__in=held).update(lease_until=wall_now() + lease)
    return held


def owed_by_domain() -> list[tuple[str, int, int, int]]:
    """(domain, pending, sending under a live sender's lease, in doubt) for every domain that owes sends (/metrics).
    A sender is alive as the claim judges it: on PostgreSQL its session is too (timers/sql/sessions.py)."""
    if _pg():
        live = f"COALESCE(lease_until > clock_timestamp(), false) AND claimed_by IN ({LIVE_SESSIONS})"
        params: list[Any] = []
    else:
        live = "COALESCE(lease_until > %s, 0)"
        params = [connection.ops.adapt_datetimefield_value(wall_now())] * 2
    sql = (f"SELECT domain, count(*) FILTER (WHERE status = 'pending'), "
           f"count(*) FILTER (WHERE status = 'sending' AND {live}), "
           f"count(*) FILTER (WHERE status = 'sending' AND NOT ({live})) "
           f"FROM {Outbox._meta.db_table} WHERE status IN ('pending', 'sending') GROUP BY domain")
    with connection.cursor() as cur:
        cur.execute(sql, params)
        rows: list[tuple[str, int, int, int]] = cur.fetchall()
    return rows
