"""Where a timer goes when it leaves: the armed table holds only what is armed; the rest is history.

On PostgreSQL ``timers_timer`` is partitioned by status (migration 0022):

- ``timers_timer_armed`` holds the armed and held timers: the tick's claim, the live loop's next owed
  instant and every re-arm read it, and it stays the size of what is owed, however many timers fired.
- ``timers_timer_history`` holds the fired and superseded ones, partitioned by the month (wall time) they
  left in (``moved_at``): a month is one table to keep, archive or drop.

A timer that fires or is superseded moves in the statement that changes its status, so in the batch's own
transaction (PostgreSQL moves a row whose partition key changes). Readers that want both read
``timers_timer`` as before: a key, an owner or an id is one index probe per partition, and a test clock's
history lies in the month it ran. SQLite (the embedded default) keeps one plain table with the same
columns.

The month partitions are made ahead (this month and the next ``AHEAD``) by the migration and by every worker
as it starts and once an hour (``ensure_partitions``); a row whose month has no partition yet lands in the
DEFAULT partition, so a fire never fails for want of one. A month that already has rows in the default
partition is left there (PostgreSQL would refuse the new partition).

Keys stay unique per domain in the armed table (its unique index). Across the two, arming a key that is
in history is refused by the arming paths (``timers.arming.timer_arm``, the tick's own read of its keys);
exactly once is the commit table's constraint either way (``commit_key_once_per_domain``).
"""

from __future__ import annotations

import logging
from datetime import date

from django.db import connection, transaction
from django.db.backends.base.base import BaseDatabaseWrapper

log = logging.getLogger(__name__)

ARMED = "timers_timer_armed"
HISTORY = "timers_timer_history"
AHEAD = 2  # months made ahead of the current one
LEFT = ("fired", "superseded")  # the statuses that live in history


def month_table(month: date) -> str:
    return f"{HISTORY}_{month.year:04d}_{month.month:02d}"


def _next_month(month: date) -> date:
    return date(month.year + (month.month == 12), month.month % 12 + 1, 1)


def partitioned(conn: BaseDatabaseWrapper | None = None) -> bool:
    """True where timers_timer is split (PostgreSQL after migration 0022)."""
    conn = conn or connection
    if conn.vendor != "postgresql":
        return False
    with conn.cursor() as cur:
        cur.execute("SELECT 1 FROM pg_partitioned_table p JOIN pg_class c ON c.oid = p.partrelid "
                    "WHERE c.relname = 'timers_timer' AND c.relnamespace = 'public'::regnamespace")
        return cur.fetchone() is not None


def ensure_partitions(conn: BaseDatabaseWrapper | None = None, *, ahead: int = AHEAD) -> list[str]:
    """Make this month's history partition and the next ``ahead``, each in its own short transaction (a
    partition's creation locks the history table for a moment). Returns the tables made. Safe to call from
    any number of workers at once: a table that exists, or a month already in the default partition, is
    skipped; a lock not had within two seconds is left for the next call."""
    conn = conn or connection
    if not partitioned(conn):
        return []
    made = []
    with conn.cursor() as cur:
        cur.execute("SELECT date_trunc('month', now() AT TIME ZONE 'UTC')::date")
        month = cur.fetchone()[0]
    for _ in range(ahead + 1):
        table = month_table(month)
        end = _next_month(month)
        try:
            with conn.cursor() as cur:
                cur.execute("SELECT to_regclass(%s) IS NOT NULL", [table])
                if cur.fetchone()[0]:
                    month = end
                    continue
                with transaction.atomic(using=conn.alias):
                    cur.execute("SET LOCAL lock_timeout = '2s'")
                    cur.execute(f"SELECT 1 FROM {HISTORY}_default WHERE moved_at >= %s AND moved_at < %s LIMIT 1",
                                [f"{month.isoformat()} 00:00Z", f"{end.isoformat()} 00:00Z"])
                    if cur.fetchone() is None:
                        cur.execute(f"CREATE TABLE IF NOT EXISTS {table} PARTITION OF {HISTORY} FOR VALUES FROM "
                                    f"('{month.isoformat()} 00:00+00') TO ('{end.isoformat()} 00:00+00')")
                        made.append(table)
        except Exception as exc:  # noqa: BLE001 - a partition made later is as good; the default partition holds
            log.warning("history partition %s not made now: %s", table, exc)
        month = end
    return made


# The split, for migration 0022 (and its reverse). The indexes the armed table had keep their names on the
# armed partition, so plans and docs that name them stay true; history has its own, made on each month.
SPLIT = [
    # A table with deferred foreign-key checks pending takes no ALTER or DROP: check them now (a migration
    # run inside a transaction that wrote timers: the tests' step back and forth), and add the new table's
    # own foreign key last, once its rows are in; Django's deferral comes back at the end.
    "SET CONSTRAINTS ALL IMMEDIATE",
    "ALTER TABLE timers_timer RENAME TO timers_timer_unsplit",
    "ALTER TABLE timers_timer_unsplit RENAME CONSTRAINT timers_timer_pkey TO timers_timer_unsplit_pkey",
    "ALTER TABLE timers_timer_unsplit RENAME CONSTRAINT timer_key_unique_per_domain TO timer_key_unique_unsplit",
    "ALTER INDEX timer_tick_order RENAME TO timer_tick_order_unsplit",
    "ALTER INDEX timer_domain_owner RENAME TO timer_domain_owner_unsplit",
    "ALTER INDEX timer_held RENAME TO timer_held_unsplit",
    "ALTER INDEX timer_late RENAME TO timer_late_unsplit",
    "CREATE TABLE timers_timer (LIKE timers_timer_unsplit INCLUDING DEFAULTS INCLUDING CONSTRAINTS) "
    "PARTITION BY LIST (status)",
    f"CREATE TABLE {ARMED} PARTITION OF timers_timer FOR VALUES IN ('armed', 'held')",
    f"CREATE TABLE {HISTORY} PARTITION OF timers_timer FOR VALUES IN ('fired', 'superseded') "
    "PARTITION BY RANGE (moved_at)",
    f"CREATE TABLE {HISTORY}_default PARTITION OF {HISTORY} DEFAULT",
]
# Then the months ahead are made (ensure_partitions), so the rows moved now land in their month, not the default.
SPLIT_ROWS = [
    "INSERT INTO timers_timer SELECT * FROM timers_timer_unsplit",
    "DROP TABLE timers_timer_unsplit",
    # The armed table: the claim (store.fetch, live.next_owed), a key, an owner, the held.
    f"ALTER TABLE {ARMED} ADD CONSTRAINT timers_timer_pkey PRIMARY KEY (id)",
    f"ALTER TABLE {ARMED} ADD CONSTRAINT timer_key_unique_per_domain UNIQUE (domain, key)",
    f"CREATE INDEX timer_tick_order ON {ARMED} (domain, owed_at, place, opened_at, key) WHERE status = 'armed'",
    f"CREATE INDEX timer_domain_owner ON {ARMED} (domain, owner)",
    f"CREATE INDEX timer_held ON {ARMED} (domain, held_by) WHERE status = 'held'",
    f"CREATE INDEX timer_armed_brand ON {ARMED} (brand_id)",
    # History, on every month: an id (GET /timers/<id>, a wake), a key (a replay's arm, a lookup), an
    # owner (timers list --on, the tick's owner reads), the late list (the owner console), a brand's delete.
    f"CREATE INDEX timer_history_id ON {HISTORY} (id)",
    f"CREATE INDEX timer_history_key ON {HISTORY} (domain, key)",
    f"CREATE INDEX timer_history_owner ON {HISTORY} (domain, owner)",
    f"CREATE INDEX timer_late ON {HISTORY} (late_by) WHERE late_by > interval '5 minutes'",
    f"CREATE INDEX timer_history_brand ON {HISTORY} (brand_id)",
    "ALTER TABLE timers_timer ADD CONSTRAINT timers_timer_brand_id_fk_timers_brand_id FOREIGN KEY (brand_id) "
    "REFERENCES timers_brand(id) DEFERRABLE INITIALLY DEFERRED",
    "SET CONSTRAINTS ALL DEFERRED",
]

UNSPLIT = [
    "SET CONSTRAINTS ALL IMMEDIATE",
    "ALTER TABLE timers_timer RENAME TO timers_timer_split",
    "CREATE TABLE timers_timer (LIKE timers_timer_split INCLUDING DEFAULTS INCLUDING CONSTRAINTS)",
    "INSERT INTO timers_timer SELECT * FROM timers_timer_split",
    "DROP TABLE timers_timer_split CASCADE",
    "ALTER TABLE timers_timer ADD CONSTRAINT timers_timer_pkey PRIMARY KEY (id)",
    "ALTER TABLE timers_timer ADD CONSTRAINT timer_key_unique_per_domain UNIQUE (domain, key)",
    "CREATE INDEX timer_tick_order ON timers_timer (domain, owed_at, place, opened_at, key) WHERE status = 'armed'",
    "CREATE INDEX timer_domain_owner ON timers_timer (domain, owner)",
    "CREATE INDEX timer_held ON timers_timer (domain, held_by) WHERE status = 'held'",
    "CREATE INDEX timer_late ON timers_timer (late_by) WHERE late_by > interval '5 minutes'",
    "CREATE INDEX timers_timer_brand_id_531cdfa7 ON timers_timer (brand_id)",
    "ALTER TABLE timers_timer ADD CONSTRAINT timers_timer_brand_id_531cdfa7_fk_timers_brand_id FOREIGN KEY "
    "(brand_id) REFERENCES timers_brand(id) DEFERRABLE INITIALLY DEFERRED",
    "SET CONSTRAINTS ALL DEFERRED",
]
