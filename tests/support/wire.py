"""Round trips to PostgreSQL counted on the wire: libpq's trace of this thread's connection, whatever cursor
sent the statements (Django's, or psycopg's own kept ones, which Django's query log never sees)."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable
from typing import Any

from django.db import connection


def traced(run: Callable[[], Any]) -> tuple[int, Any]:
    """(round trips, what ``run`` returned): each simple Query and each Sync the client sends waits for the
    server once."""
    sent, got = messages(run)
    return sent.count("Query") + sent.count("Sync"), got


def statements(run: Callable[[], Any]) -> tuple[int, Any]:
    """(statements the server ran, what ``run`` returned): each simple Query, and each Execute of a bound
    statement (a pipeline's statements go in one round trip, each still run on its own)."""
    sent, got = messages(run)
    return sent.count("Query") + sent.count("Execute"), got


def messages(run: Callable[[], Any]) -> tuple[list[str], Any]:
    """(the type of each message the client sent, in order, what ``run`` returned)."""
    connection.ensure_connection()
    pgconn = connection.connection.pgconn
    with tempfile.TemporaryFile("w+") as f:
        pgconn.trace(f.fileno())
        try:
            got = run()
        finally:
            pgconn.untrace()
        f.flush()
        os.fsync(f.fileno())
        f.seek(0)
        sent = [line.split("\t") for line in f.read().splitlines()]
    return [p[3].split(" ")[0] for p in sent if len(p) > 3 and p[1] == "F"], got
