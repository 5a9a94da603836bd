"""The fire tally's statements (``FireTally``): a batch adds its fires to it (timers/store.py), a deleted test
clock's rows are folded into one retired set (timers/test_clocks.py), and /metrics reads it (timers/metrics.py),
so no one ever counts the fired timers themselves.
"""

from __future__ import annotations

import functools

from django.db import connection

from ..models import FireTally

# FireTally's rows added to, not replaced: the head and the tail of every insert into the tally.
TALLY_INSERT = "INSERT INTO timers_firetally (domain, kind, outcome, bucket, fires, late_seconds) "
TALLY_ADD = (" ON CONFLICT (domain, kind, outcome, bucket) DO UPDATE SET fires = timers_firetally.fires + excluded.fires,"
             " late_seconds = timers_firetally.late_seconds + excluded.late_seconds")
# The tally summed by whether the domain is live (its id starts with the given prefix), kind, outcome and bucket.
FIRES_BY_CLOCK = (f"SELECT domain LIKE %s, kind, outcome, bucket, sum(fires), sum(late_seconds) "
                  f"FROM {FireTally._meta.db_table} GROUP BY 1, 2, 3, 4")


@functools.lru_cache(maxsize=64)
def tally_sql(n: int, mark: str) -> str:
    """Add n FireTally rows to their (domain, kind, outcome, bucket) counts: one multi-row VALUES, all of one
    domain (routed to one shard where tables are distributed by domain). ``mark``: the driver's placeholder."""
    row = "(" + ", ".join([mark] * 6) + ")"
    return TALLY_INSERT + "VALUES " + ", ".join([row] * n) + TALLY_ADD


def retire(domains: list[str], *, into: str = FireTally.RETIRED) -> None:
    """Fold the tally of ``domains`` into the retired rows (``FireTally.RETIRED``; a deleted brand's live clock
    into ``FireTally.LIVE_RETIRED``) and drop theirs. Rows are taken in key order, so two retirements at once
    lock them in the same order."""
    with connection.cursor() as cur:
        cur.execute(
            TALLY_INSERT + "SELECT %s, kind, outcome, bucket, sum(fires), sum(late_seconds) FROM timers_firetally "
            "WHERE domain IN (" + ", ".join(["%s"] * len(domains)) + ") "
            "GROUP BY kind, outcome, bucket ORDER BY kind, outcome, bucket" + TALLY_ADD,
            [into, *domains],
        )
    FireTally.objects.filter(domain__in=domains).delete()


def fires_by_clock(live_prefix: str) -> list[tuple[bool, str, str, int, int, float | None]]:
    """(live, kind, outcome, bucket, fires, late seconds) summed over every domain, live or test."""
    with connection.cursor() as cur:
        cur.execute(FIRES_BY_CLOCK, [f"{live_prefix}%"])
        rows: list[tuple[bool, str, str, int, int, float | None]] = cur.fetchall()
    return rows
