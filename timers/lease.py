"""One worker holds a clock domain at a time: a session-level PostgreSQL advisory lock.

A session lock frees the moment its session ends, so a worker killed mid-advance never strands its clock.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

from django.db import connection


def _lock_key(domain: str) -> str:
    return f"keeping_time:{domain}"


@contextlib.contextmanager
def lease(domain: str, *, wait: bool = True) -> Iterator[bool]:
    """Hold the clock domain for the duration; with ``wait=False`` yields False if another holds it."""
    if connection.vendor != "postgresql":
        yield True  # SQLite has one writer at a time already
        return
    with connection.cursor() as cur:
        fn = "pg_advisory_lock" if wait else "pg_try_advisory_lock"
        cur.execute(f"SELECT {fn}(hashtextextended(%s, 7))", [_lock_key(domain)])
        got = True if wait else bool(cur.fetchone()[0])
    try:
        yield got
    finally:
        if got:
            with connection.cursor() as cur:
                cur.execute("SELECT pg_advisory_unlock(hashtextextended(%s, 7))", [_lock_key(domain)])
