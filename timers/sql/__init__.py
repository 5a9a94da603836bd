"""The runtime's SQL, one gateway module per concern: each named statement beside its SQLite fallback; and the
one thing they share, the row of a statement that always answers one (``one_row``)."""

from __future__ import annotations

from typing import Any

import psycopg
from django.db.backends.utils import CursorWrapper


def one_row(cur: psycopg.Cursor[Any] | CursorWrapper) -> Any:
    """The row a statement that always answers one row returns (an EXISTS, a setting, a sequence's value): the
    driver's cursor types it as maybe None, as it would be for a query that finds nothing."""
    row = cur.fetchone()
    assert row is not None, "the statement answers one row"
    return row
