"""Fixed statements the API sends on every request (a key's lookup, an arming's writes), prepared once per
PostgreSQL connection.

Planning is most of what such a statement costs the server: a partitioned table's INSERT or look-up is planned
across its partitions every time it comes as text. Prepared, an arming's statements cost its backend about a
third of the CPU (bench/README.md, ``live.py``). The cursor is psycopg's own (server-side binding), kept per
connection, and wrapped as Django wraps its cursors: errors are Django's (IntegrityError) and the statements
are counted and logged like any other. KEEPING_TIME["API_PREPARE"] off (``KT_API_PREPARE=0``: a pooler in
transaction mode, which cannot keep a session's prepared statements) and other databases take Django's cursor.
"""

from __future__ import annotations

import weakref

import psycopg
from django.conf import settings
from django.db import connection
from django.db.backends.utils import CursorDebugWrapper, CursorWrapper

# Never reached: with it set, psycopg prepares what a cursor asks it to (Django leaves prepare_threshold
# None, which turns preparing off); Django's own cursors bind on the client and never prepare.
_ONLY_WHEN_ASKED = 2**31 - 1


class _PreparingCursor(psycopg.Cursor):
    def execute(self, query, params=None, **kwargs):
        return super().execute(query, params, prepare=True, **kwargs)


_KEPT: weakref.WeakKeyDictionary[psycopg.Connection, _PreparingCursor] = weakref.WeakKeyDictionary()


def cursor() -> CursorWrapper:
    """A cursor for statements of fixed text with ``%s`` parameters: prepared on PostgreSQL, Django's
    elsewhere. Use it as a context manager, as Django's."""
    if connection.vendor != "postgresql" or not settings.KEEPING_TIME.get("API_PREPARE", True):
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

    def execute(self, sql, params=None):
        with self.debug_sql(sql, params):
            return CursorWrapper.execute(self, sql, params)


class _Kept:
    """The kept cursor, wrapped for one use: leaving the block does not close it (Django's wrapper would)."""

    def __init__(self, raw: _PreparingCursor, db, wrapper: type[CursorWrapper]) -> None:
        self.wrapped = wrapper(raw, db)

    def __enter__(self) -> CursorWrapper:
        return self.wrapped

    def __exit__(self, *exc) -> None:
        return None
