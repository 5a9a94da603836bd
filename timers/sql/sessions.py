"""Who is connected: a database session's name, the sessions alive now, and what a session can do here.

A sender of the outbox (timers/outbox.py) and a lease's holder (timers/lease.py) are named by their database
session on PostgreSQL (its backend's pid and start, so a reused pid differs): once the session ends, what it
claimed and held is free at once, whatever its expiry says. SQLite is one machine's file: a sender is its
process (host and pid), and a lease waits out its expiry. PostgreSQL also carries the workers' wakes
(LISTEN/NOTIFY, timers/wakes.py); on SQLite a worker polls.
"""

from __future__ import annotations

import contextlib
import os
import socket
import threading
from collections.abc import Iterator
from typing import Any

import psycopg
from django.db import DatabaseError, InterfaceError, OperationalError, connection

# A session's name, from pg_stat_activity's row ``{a}``: the claims' ``claimed_by`` and the lease's ``session``.
SESSION_NAME = "'pg:' || {a}.pid || ':' || floor(extract(epoch from {a}.backend_start) * 1000000)::bigint"
# The names of the sessions alive now.
LIVE_SESSIONS = (f"SELECT {SESSION_NAME.format(a='a')} FROM pg_stat_activity a "
                 "WHERE a.pid IS NOT NULL AND a.backend_start IS NOT NULL")
# This session's own name.
OWN_NAME = f"SELECT {SESSION_NAME.format(a='a')} FROM pg_stat_activity a WHERE a.pid = pg_backend_pid()"


def named() -> bool:
    """Whether the database names its sessions, so a dead one's claims and leases free at once (PostgreSQL)."""
    return connection.vendor == "postgresql"


def sender_id() -> str:
    """This sender's name: its database session on PostgreSQL, so a killed sender's claims free at once."""
    connection.ensure_connection()
    if named():
        raw = connection.connection
        cached: str | None = getattr(raw, "_kt_sender", None)  # kept on the session it names
        if cached is None:
            with connection.cursor() as cur:
                cur.execute(OWN_NAME)
                cached = cur.fetchone()[0]
            raw._kt_sender = cached
        return cached
    return f"os:{socket.gethostname()}:{os.getpid()}"


def lease_session() -> str:
    """What a lease's holder writes into its row as its session: its name where sessions are named, else ""
    (SQLite: one machine, one writer; the expiry frees a dead holder's lease)."""
    return sender_id() if named() else ""


def threads_send_apart() -> bool:
    """Whether a thread's sends are claimed under a name of its own (PostgreSQL: its session), so a sender
    thread beside the firing claims apart from it; SQLite names the process (``sender_id``)."""
    return named()


def hears_wakes() -> bool:
    """Whether a worker can sleep until a wake names its domain (LISTEN/NOTIFY: PostgreSQL); else it polls."""
    return named()


def listen(channel: str) -> psycopg.Connection:
    """LISTEN on ``channel`` in this thread's session; the connection whose ``notifies()`` yields the notes."""
    conn = session()
    conn.execute(f"LISTEN {channel}")
    return conn


def connection_lost(exc: BaseException) -> bool:
    """Whether ``exc`` says this thread's database session is gone (the server restarted, its backend was
    terminated, the network dropped, or it could not connect), not that a statement failed on a session that
    stands (a lock's timeout, a cancelled statement, a constraint): the one is waited out and reconnected, the
    other is the caller's. Told by the error itself, PostgreSQL's code for it (none: the socket closed; 08…:
    the connection; 57P0…: the server shutting the session down), since whatever ran after it (a lease's release
    in a ``finally``) may have connected again already; else by the state of the session it left."""
    if not isinstance(exc, OperationalError | InterfaceError | psycopg.OperationalError | psycopg.InterfaceError):
        return False
    cause = exc if isinstance(exc, psycopg.Error) else exc.__cause__
    if isinstance(cause, psycopg.Error):
        code = cause.sqlstate
        if code is None or code.startswith(("08", "57P0")):
            return True
    raw = connection.connection
    return raw is None or bool(getattr(raw, "closed", False)) or bool(getattr(raw, "broken", False))


def database_busy(exc: BaseException) -> bool:
    """Whether ``exc`` is SQLite's "could not take the lock": another connection was writing past the busy timeout,
    or held a shared-cache table lock (which never waits). What the statement's transaction did is rolled back and
    the same work can be asked again; it says nothing about the work."""
    return isinstance(exc, OperationalError) and ("database is locked" in str(exc)
                                                  or "database table is locked" in str(exc))


def session() -> psycopg.Connection:
    """This thread's database session, connected."""
    connection.ensure_connection()
    conn: psycopg.Connection[Any] = connection.connection
    return conn


# A worker's sessions (`tick --forever`) carry this application_name, or one that begins with it, so /metrics
# can say whether any worker is connected (timers/metrics.py) and an operator can find them in pg_stat_activity.
WORKER_NAME = "kt-worker"
# The database sessions of workers connected now (param: the LIKE pattern of their application_name).
WORKER_SESSIONS = ("SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
                   "AND application_name LIKE %s")


def name_worker_sessions() -> None:
    """The sessions this process opens from now on say they are a worker's (``WORKER_NAME``, before whatever
    application_name the settings give); one open already is closed, to open again under the name."""
    if not named():
        return
    options = connection.settings_dict.setdefault("OPTIONS", {})  # every thread's connection reads this dict
    given = str(options.get("application_name") or "")
    if not given.startswith(WORKER_NAME):
        options["application_name"] = f"{WORKER_NAME} {given}".strip()
        connection.close()


def worker_sessions() -> int | None:
    """How many database sessions of workers are connected now; None where the database cannot say (SQLite)."""
    if not named():
        return None
    with connection.cursor() as cur:
        cur.execute(WORKER_SESSIONS, [WORKER_NAME + "%"])
        return int(cur.fetchone()[0])


# Wake whoever LISTENs on the channel, at the commit (params: channel, payload).
NOTIFY = "SELECT pg_notify(%s, %s)"
# This transaction's commit does not wait for its WAL flush (a write lost only with the server itself).
UNFLUSHED = "SET LOCAL synchronous_commit TO OFF"
# Every commit of this session from now on, each statement's own in autocommit, skips the wait; and back.
SESSION_UNFLUSHED = "SET synchronous_commit TO OFF"
SESSION_FLUSHED = "RESET synchronous_commit"
# The transaction reads one snapshot throughout (its first statement: before it reads anything).
ONE_SNAPSHOT = "SET TRANSACTION ISOLATION LEVEL REPEATABLE READ"


def notify(channel: str, payload: str) -> None:
    """NOTIFY ``channel`` at the commit (PostgreSQL); nothing on SQLite, whose workers poll."""
    if named():
        with connection.cursor() as cur:
            cur.execute(NOTIFY, [channel, payload])


def commit_unflushed() -> None:
    """The transaction under way commits without waiting for its WAL flush (PostgreSQL; SQLite: as it is)."""
    if named():
        with connection.cursor() as cur:
            cur.execute(UNFLUSHED)


_session = threading.local()  # Django's connection is the thread's: so is whether its session is unflushed


def session_unflushed() -> bool:
    """Whether this thread's session commits without waiting for its flush (``unflushed_session``)."""
    return bool(getattr(_session, "on", False))


@contextlib.contextmanager
def unflushed_session() -> Iterator[None]:
    """For the block, every commit of this session skips its flush wait, a statement's own in autocommit too:
    a write that is one statement then costs that statement alone, not BEGIN, ``UNFLUSHED``, it and COMMIT
    (an ordered webhook line's receipt, one a delivery). PostgreSQL, outside a caller's transaction (whose
    commit is the caller's to judge); otherwise, and on SQLite, nothing changes. The setting is reset at the
    end whatever happened; a session that cannot be reset is closed, so no later write of it goes unflushed."""
    if not named() or connection.in_atomic_block or session_unflushed():
        yield
        return
    with connection.cursor() as cur:
        cur.execute(SESSION_UNFLUSHED)
    _session.on = True
    try:
        yield
    finally:
        _session.on = False
        try:
            with connection.cursor() as cur:
                cur.execute(SESSION_FLUSHED)
        except DatabaseError:
            connection.close()


def one_snapshot() -> None:
    """The transaction just begun reads one snapshot throughout (PostgreSQL's REPEATABLE READ: call it before
    the transaction's first read; SQLite's one writer gives a transaction a consistent view already)."""
    if named():
        with connection.cursor() as cur:
            cur.execute(ONE_SNAPSHOT)
