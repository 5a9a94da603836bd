"""The outbox claim with a backlog and no statistics: the indexes and statements of 0008 against 0009's.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/kt_scale_bench .venv/bin/python bench/outbox_claim_plans.py \
        [--pending 100000] [--sent 100000] [--domains 41] [--calls 7] [--repeat 3]

Use a database of its own: it empties timers_outbox. For each way, the table is emptied, the way's claim
indexes are built on the empty table (as `migrate` leaves them), then --pending owed and --sent sent rows
over --domains clock domains are written in one statement and never analyzed. Timed, each call in a
transaction that is rolled back (so every call sees the same backlog):

* a domain's claim of a set (200 rows): ``deliver(domain)`` (`tick`, settle, an advance);
* the worker loop's sweep: before, one claim over every domain in created_at order; now, the owing
  domains found with a skip scan, then a domain's claim.

Each is timed twice: the pick alone (the claim's row choice, rows locked and nothing rewritten: what the
plan costs) and the whole claim (with the UPDATE of 200 rows, whose writes are most of its time). Then
ANALYZE, and the same again. Prints the median ms per call (median over --repeat runs of the median of
--calls), the ratio 0008/0009 and the plan's top node; at the end it puts back the migration's indexes.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import time

from bench_django import setup_django

# The claim statement and index of 0008, the baseline (timers/outbox.py and timers/models.py, as they were before 0009).
OLD_INDEXES = ["CREATE INDEX outbox_pending ON timers_outbox (created_at) WHERE status IN ('pending', 'sending')"]
NEW_INDEXES = ["CREATE INDEX outbox_owed_domain ON timers_outbox (domain, created_at, id) "
               "WHERE status IN ('pending', 'sending')"]
OLD_CLAIM = """
WITH live AS (
    SELECT {sender} AS s FROM pg_stat_activity a WHERE a.pid IS NOT NULL AND a.backend_start IS NOT NULL
), c AS (
    SELECT o.id, o.claimed_by AS prev FROM timers_outbox o
    WHERE o.status IN ('pending', 'sending')
      AND (o.next_try_at IS NULL OR o.next_try_at <= clock_timestamp())
      AND (o.status = 'pending' OR o.lease_until IS NULL OR o.lease_until < clock_timestamp()
           OR o.claimed_by NOT IN (SELECT s FROM live))
      {where}
    ORDER BY o.created_at, o.id
    LIMIT %s
    FOR UPDATE OF o SKIP LOCKED
)
UPDATE timers_outbox o SET status = 'sending', claimed_by = %s, lease_until = clock_timestamp() + make_interval(secs => 30)
FROM c WHERE o.id = c.id
RETURNING o.id
"""


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--pending", type=int, default=100_000)
    parser.add_argument("--sent", type=int, default=100_000)
    parser.add_argument("--domains", type=int, default=41)
    parser.add_argument("--calls", type=int, default=7)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    setup_django()
    from django.core.management import call_command
    from django.db import connection, transaction

    from timers import outbox
    from timers.sql import outbox as outbox_sql
    from timers.sql import sessions

    if connection.vendor != "postgresql":
        print("outbox_claim_plans: PostgreSQL only (set DATABASE_URL)")
        return 2
    call_command("migrate", verbosity=0)
    me = sessions.sender_id()
    hot = "tc_7"

    def sql(q: str, params=None):
        with connection.cursor() as cur:
            cur.execute(q, params or [])
            return cur.fetchall() if cur.description else None

    def old_claim(domain: str | None) -> int:
        text = OLD_CLAIM.format(sender=sessions.SESSION_NAME.format(a="a"), where="AND o.domain = %s" if domain else "")
        return len(sql(text, [*([domain] if domain else []), outbox.CLAIM, me]))

    def new_sweep() -> int:
        return len(outbox._claim(outbox_sql.owed_domains()[0], me, outbox.CLAIM))

    def pick(domain: str | None) -> int:
        # The claim's choice of rows alone (its CTE c, rows locked, nothing rewritten): the plan's own cost.
        text = OLD_CLAIM.format(sender=sessions.SESSION_NAME.format(a="a"), where="AND o.domain = %s" if domain else "")
        select = "WITH live AS" + text.split("WITH live AS", 1)[1].split(")\nUPDATE", 1)[0] + ")\nSELECT id FROM c"
        return len(sql(select, [*([domain] if domain else []), outbox.CLAIM]))

    ways = {
        "0008": (OLD_INDEXES, {"domain pick": lambda: pick(hot), "sweep pick": lambda: pick(None),
                               "domain claim": lambda: old_claim(hot), "sweep claim": lambda: old_claim(None)}),
        "0009": (NEW_INDEXES, {"domain pick": lambda: pick(hot),
                               "sweep pick": lambda: pick(outbox_sql.owed_domains()[0]),
                               "domain claim": lambda: len(outbox._claim(hot, me, outbox.CLAIM)),
                               "sweep claim": new_sweep}),
    }

    def timed(fn) -> float:
        times = []
        for _ in range(args.calls):
            with transaction.atomic():
                t = time.perf_counter()
                assert fn() == outbox.CLAIM
                times.append((time.perf_counter() - t) * 1000)
                transaction.set_rollback(True)
        return statistics.median(times)

    print(f"# outbox claim plans · {platform.processor() or platform.machine()} · {os.cpu_count()} cores · "
          f"PostgreSQL {connection.pg_version // 10000} · {args.pending:,} owed + {args.sent:,} sent rows over "
          f"{args.domains} domains")
    results: dict[tuple[str, str, str], list[float]] = {}
    plans: dict[tuple[str, str], str] = {}
    try:
        for _ in range(args.repeat):
            for way, (indexes, calls) in ways.items():
                sql("TRUNCATE timers_outbox")
                for name in ("outbox_pending", "outbox_owed_domain"):
                    sql(f"DROP INDEX IF EXISTS {name}")
                for ddl in indexes:
                    sql(ddl)  # on the empty table, as migrate builds it
                sql("""INSERT INTO timers_outbox (id, domain, key, attempt, seq, transport, payload, status, error,
                           created_at, claimed_by, tries)
                       SELECT 'sub_' || g, 'tc_' || (g %% %(d)s), 'k' || g, 1, 0, 'bench', '{}',
                              CASE WHEN g * %(p)s / %(t)s > (g - 1) * %(p)s / %(t)s THEN 'pending' ELSE 'sent' END,
                              '', now() - make_interval(secs => 1e7 - g), '', 0
                       FROM generate_series(1::bigint, %(t)s) g""",  # owed rows spread evenly among the sent
                    {"d": args.domains, "p": args.pending, "t": args.pending + args.sent})
                for stats in ("never analyzed", "analyzed"):
                    if stats == "analyzed":
                        sql("ANALYZE timers_outbox")
                    for name, fn in calls.items():
                        results.setdefault((stats, name, way), []).append(timed(fn))
                        if name == "domain claim":
                            plan = "\n".join(r[0] for r in sql(
                                "EXPLAIN " + OLD_CLAIM.format(sender="'x'", where="AND o.domain = %s"),
                                [hot, outbox.CLAIM, me]))
                            plans[(stats, way)] = "sorts every owed row" if "Sort" in plan else "index order"
        for stats in ("never analyzed", "analyzed"):
            for name in ("domain pick", "sweep pick", "domain claim", "sweep claim"):
                old, new = (statistics.median(results[(stats, name, w)]) for w in ("0008", "0009"))
                print(f"{stats:<15} {name:<13} 0008 {old:7.1f} ms · 0009 {new:6.1f} ms · ratio {old / new:5.1f}× "
                      f"(median of {args.repeat})")
            print(f"{stats:<15} domain claim plan: 0008 {plans[(stats, '0008')]}, 0009 {plans[(stats, '0009')]}")
    finally:
        sql("TRUNCATE timers_outbox")
        for name in ("outbox_pending", "outbox_owed_domain"):
            sql(f"DROP INDEX IF EXISTS {name}")
        sql(NEW_INDEXES[0])
    return 0


if __name__ == "__main__":
    sys.exit(main())
