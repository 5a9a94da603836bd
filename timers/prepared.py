"""A connection's kept cursors: fixed statements the API sends on every request (a key's lookup, an arming's
writes) and the tick's statements of a small batch, prepared once per PostgreSQL connection.

Planning is most of what such a statement costs the server: a partitioned table's INSERT or look-up is planned
across its partitions every time it comes as text. Prepared, an arming's statements cost its backend about a
third of the CPU (bench/README.md, ``live.py``). The cursor is psycopg's own (server-side binding), kept per
connection, and wrapped as Django wraps its cursors: errors are Django's (IntegrityError) and the statements
are counted and logged like any other. KEEPING_TIME["API_PREPARE"] off (``KT_API_PREPARE=0``: a pooler in
transaction mode, which cannot keep a session's prepared statements) and other databases take Django's cursor.
The tick's two kept cursors (``kept_cursors``) are psycopg's own with binary parameters, in Django's transaction;
they sit here, below the tick's store, the lease and the schedules, which all send on them.
"""

from __future__ import annotations

import contextlib
import functools
import weakref
from collections.abc import Iterator
from contextvars import ContextVar
from typing import Any, Self

import psycopg
from django.conf import settings
from django.db import DEFAULT_DB_ALIAS, connection, connections
from django.db.backends.base.base import BaseDatabaseWrapper
from django.db.backends.utils import CursorDebugWrapper, CursorWrapper
from psycopg.abc import Buffer
from psycopg.types.json import JsonbBinaryDumper, JsonbBinaryLoader

# Never reached: with it set, psycopg prepares what a cursor asks it to (Django leaves prepare_threshold
# None, which turns preparing off); Django's own cursors bind on the client and never prepare.
_ONLY_WHEN_ASKED = 2**31 - 1


class _PreparingCursor(psycopg.Cursor[tuple[Any, ...]]):
    def execute(self, query: Any, params: Any = None, **kwargs: Any) -> Self:
        return super().execute(query, params, prepare=True, **kwargs)


_KEPT: weakref.WeakKeyDictionary[psycopg.Connection, _PreparingCursor] = weakref.WeakKeyDictionary()


def cursor(setting: str = "API_PREPARE") -> contextlib.AbstractContextManager[CursorWrapper]:
    """A cursor for statements of fixed text with ``%s`` parameters: prepared on PostgreSQL, Django's
    elsewhere, or where KEEPING_TIME[``setting``] is off (the API's, or the tick's TICK_PREPARE). Use it as a
    context manager, as Django's."""
    if connection.vendor != "postgresql" or not settings.KEEPING_TIME.get(setting, True):
        return connection.cursor()
    connection.ensure_connection()
    raw = connection.connection
    kept = _KEPT.get(raw)
    if kept is None or kept.closed:
        if raw.prepare_threshold is None:
            raw.prepare_threshold = _ONLY_WHEN_ASKED
        kept = _KEPT[raw] = _PreparingCursor(raw)
    return _Kept(kept, connection, _Logged if connection.queries_logged else CursorWrapper)


class _Logged(CursorDebugWrapper):
    """Logs the statement's text as sent (``%s`` for its parameters): Django reads a server-bound cursor's
    last query back as None."""

    def execute(self, sql: Any, params: Any = None) -> Any:
        with self.debug_sql(sql, params):
            return CursorWrapper.execute(self, sql, params)


class _Kept:
    """The kept cursor, wrapped for one use: leaving the block does not close it (Django's wrapper would)."""

    def __init__(self, raw: _PreparingCursor, db: BaseDatabaseWrapper, wrapper: type[CursorWrapper]) -> None:
        self.wrapped = wrapper(raw, db)

    def __enter__(self) -> CursorWrapper:
        return self.wrapped

    def __exit__(self, *exc: object) -> None:
        return None


TickCursor = psycopg.Cursor[tuple[Any, ...]]  # rows as tuples: Django leaves psycopg's row factory as it is

# Each connection's two cursors of the tick's one-by-one regime: a cursor made per statement built its adapters
# (and looked up its dumpers) anew each time, a fixed cost a batch of one paid four times. Two, because a
# statement's results are read after the pipeline that sent it, where the other cursor sent more.
_TICK_KEPT: weakref.WeakKeyDictionary[psycopg.Connection, tuple[TickCursor, TickCursor]] = (
    weakref.WeakKeyDictionary())


def new_cursor() -> TickCursor:
    """A cursor of psycopg's own (binary parameters, server-side binding) on this thread's connection, in
    Django's transaction."""
    connection.ensure_connection()
    cur = psycopg.Cursor(connection.connection)
    cur.adapters.register_loader("jsonb", _JsonbIn)
    cur.adapters.register_dumper(None, _JsonbOut)  # a COPY's column typed jsonb (rows.copy_in)
    return cur


# Most timers' data, and most events', is {}: json.loads and json.dumps of it (their Python around the C codec)
# were a tenth of a noop fire's Python, once as the claim's rows are read and once as the events are copied in.
_EMPTY = b"\x01{}"  # binary jsonb: its version, then the text


class _JsonbIn(JsonbBinaryLoader):
    def load(self, data: Buffer) -> Any:
        return {} if data == _EMPTY else super().load(data)


class _JsonbOut(JsonbBinaryDumper):
    def dump(self, obj: Any) -> Buffer | None:
        return _EMPTY if type(obj) is dict and not obj else super().dump(obj)


def kept_cursors() -> tuple[TickCursor, TickCursor, bool]:
    """This thread's connection's kept cursors (binary parameters: pass ``binary=True``), and whether the small
    batch's statements are prepared (KT_TICK_PREPARE=0 for a pooler in transaction mode). Preparing needs a
    threshold on the connection (Django leaves it None, which turns preparing off), one never reached, so
    psycopg prepares only what is asked (as calendars/feed_stamp.py does). Called a few times a batch: the
    connection is looked up once."""
    db = connections[DEFAULT_DB_ALIAS]
    db.ensure_connection()
    conn = db.connection
    got = _TICK_KEPT.get(conn)
    if got is None or got[0].closed:
        got = _TICK_KEPT[conn] = (new_cursor(), new_cursor())
    if not settings.KEEPING_TIME.get("TICK_PREPARE", True):
        return got[0], got[1], False
    if conn.prepare_threshold is None:
        conn.prepare_threshold = _ONLY_WHEN_ASKED
    return got[0], got[1], True


@functools.lru_cache(maxsize=256)
def together(statements: tuple[str, ...]) -> str:
    """Statements as one: each but the last a data-modifying WITH, which runs once and to completion whether or
    not anything reads it; the last writes or reads. Each writes a table of its own (a statement may not change
    a row twice)."""
    if len(statements) == 1:
        return statements[0]
    return "WITH " + ", ".join(f"w{n} AS ({sql})" for n, sql in enumerate(statements[:-1])) + " " + statements[-1]


# The statement a small batch's write is building (timers/store.py): a write whose answer nobody reads, sent while it
# is open, goes into it as one more data-modifying WITH (``carried``), where it was a statement of its own.
_carrying: ContextVar[list[tuple[str, list[Any]]] | None] = ContextVar("kt_carrying", default=None)


@contextlib.contextmanager
def carrying(parts: list[tuple[str, list[Any]]]) -> Iterator[None]:
    """Writes ``carried`` inside go into ``parts`` (each writing a table none of the others writes)."""
    token = _carrying.set(parts)
    try:
        yield
    finally:
        _carrying.reset(token)


def carried(sql: str, params: list[Any]) -> bool:
    """Add a write (``%b`` parameters, no answer read) to the statement being built, if one is (``carrying``):
    the batch's position goes with the batch's rows, one statement, where it was two on the server and the
    client. False: send it yourself."""
    parts = _carrying.get()
    if parts is None:
        return False
    parts.append((sql, params))
    return True
