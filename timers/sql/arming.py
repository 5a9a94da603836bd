"""The statements of an arming outside the tick (timers/arming.py), beside their SQLite fallback.

The arming is the API's most frequent write: its INSERT and its look at history go as prepared statements
(timers/prepared.py), since the ORM's compiling of them cost more CPU than the database spent running them.
"""

from __future__ import annotations

import functools
from typing import Any

from django.db import connection

from ..history import LEFT
from ..models import Timer
from ..prepared import cursor
from ..rows import Plan, insert_one_sql, values_of
from . import one_row

# Whether the key is in history (fired or superseded): PostgreSQL keeps history apart from the armed table, so no
# one unique index spans both (params: domain, key).
IN_HISTORY = ("SELECT 1 FROM timers_timer WHERE domain = %s AND key = %s AND status IN ("
              + ", ".join(f"'{status}'" for status in LEFT) + ")")
# A brand's live clock named, once: the live loop runs the domains LiveClock names (params: domain).
NAME_LIVE_CLOCK = "INSERT INTO timers_liveclock (id, position) VALUES (%s, NULL) ON CONFLICT DO NOTHING"
@functools.cache
def _arm_sql() -> tuple[str, Plan, bool]:
    """The arming's INSERT: every column but ``moved_at``, whose default is the database's clock (read back, as
    ``Timer.objects.create`` does, where the database can return it)."""
    sql, plan = insert_one_sql(Timer, omit=frozenset({"moved_at"}))
    returning = connection.features.can_return_columns_from_insert
    return sql + (' RETURNING "moved_at"' if returning else ""), plan, returning


def arm_insert(timer: Timer) -> None:
    """``Timer.objects.create`` for the arming, one prepared statement; raises IntegrityError when armed."""
    sql, plan, returning = _arm_sql()
    with cursor() as cur:
        cur.execute(sql, values_of(timer, plan))
        if returning:
            timer.moved_at = cur.fetchone()[0]
    timer._state.adding = False
    timer._state.db = connection.alias


def arm_check(timer: Timer, *, name_live_clock: bool, notify: tuple[str, str] | None) -> bool:
    """Whether the armed key is in history; with the live clock named, and ``notify`` (channel, payload) sent, as
    asked. On PostgreSQL one statement: the LiveClock upsert rides in it as a CTE (run whatever the SELECT reads)
    and the NOTIFY in its row (undone with the transaction when the key is in history)."""
    domain, key = timer.domain, timer.key
    with cursor() as cur:
        if connection.vendor != "postgresql":
            cur.execute(IN_HISTORY + " LIMIT 1", [domain, key])
            found = cur.fetchone() is not None
            if name_live_clock and not found:
                cur.execute(NAME_LIVE_CLOCK, [domain])
            return found
        sql = f"SELECT EXISTS ({IN_HISTORY})"
        params: list[Any] = [domain, key]
        if name_live_clock:
            sql = f"WITH named AS ({NAME_LIVE_CLOCK}) {sql}"
            params.insert(0, domain)
        if notify is not None:
            sql += ", pg_notify(%s, %s)"
            params += list(notify)
        cur.execute(sql, params)
        in_history: bool = one_row(cur)[0]
        return in_history
