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
    return sum(1 for p in sent if len(p) > 3 and p[1] == "F" and p[3].split(" ")[0] in ("Query", "Sync")), got
