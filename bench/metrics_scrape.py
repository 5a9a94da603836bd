"""/metrics scrape time with many rows, against one plain scan of the timers table.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/kt_bench .venv/bin/python bench/metrics_scrape.py \
        [--n 10000 100000] [--repeat 5]

For each N, N timers are written with ``INSERT … SELECT FROM generate_series`` (not measured) across the live
domain and 50 test clocks of the brand ``bench.metrics_scrape``: 80% fired (each with its commit, 2% of them
refused, late_by 0–10 minutes), 19% armed, 1% held; and N/20 outbox rows (90% sent, the rest pending, sending
or in doubt). Then ``VACUUM ANALYZE``.

Timed, medians over ``--repeat``:

* scrape: ``generate_latest(timers.metrics.registry)``, every family, as /metrics answers it;
* each family's builder on its own;
* baseline: ``SELECT count(*) FROM timers_timer``, one full scan of the table, in the same process.

Prints the scrape in ms, the ratio scrape / baseline (how many table scans a scrape costs), each family,
and the plan of the index-backed queries (armed, held, outbox, lag). The bench's rows are deleted at the
start and the end. Exit status: 0, 2 when not on PostgreSQL, 3 when a check fails.
"""

from __future__ import annotations

import argparse
import importlib
import os
import platform
import statistics
import sys
import time
from datetime import timedelta

from bench_django import setup_django

BRAND = "bench.metrics_scrape"
CLOCKS = 50


def clean() -> None:
    from django.db import connection

    with connection.cursor() as cur:
        cur.execute("DELETE FROM timers_commit WHERE id LIKE 'cmt_bm%'")
        cur.execute("DELETE FROM timers_firetally WHERE domain LIKE 'tc_bm%' OR domain = 'live_bm'")
        cur.execute("DELETE FROM timers_liveclock WHERE id = 'live_bm'")
        cur.execute("DELETE FROM timers_outbox WHERE id LIKE 'sub_bm%'")
        cur.execute("DELETE FROM timers_timer WHERE id LIKE 'tmr_bm%'")
        cur.execute("DELETE FROM timers_testclock WHERE id LIKE 'tc_bm%'")


def fill(n: int) -> str:
    from django.db import connection

    from timers.clock import wall_now
    from timers.models import LATE_BUCKETS, Brand, LiveClock, TestClock

    now = wall_now()
    brand, _ = Brand.objects.get_or_create(name=BRAND, defaults={"created_at": now})
    LiveClock.objects.create(id="live_bm")  # the bench's live domain, as a brand's live_<brand> is
    TestClock.objects.bulk_create([TestClock(id=f"tc_bm{i}", brand=brand, frozen_time=now, created_at=now,
                                             name=f"bench {i}") for i in range(CLOCKS)])
    with connection.cursor() as cur:
        cur.execute(
            """
            INSERT INTO timers_timer (id, domain, brand_id, key, owner, kind, place, handler, status, owed_at,
                opened_at, armed_at, fired_at, late_by, attempt, wakes, version, superseded_by, "by", held_since,
                held_by, remaining, armed_by, tick_pass, data)
            SELECT 'tmr_bm' || i, d, %(brand)s, 'job_' || i || ':' || k || ':bench:' || i, 'job_' || i, k, 5,
                   'noop', st,
                   CASE WHEN st = 'armed' THEN %(t0)s + i * interval '1 minute' END, %(t0)s, %(t0)s,
                   CASE WHEN st = 'fired' THEN %(t0)s END,
                   CASE WHEN st = 'fired' THEN CASE WHEN d = 'live_bm' THEN (i %% 600) * interval '1 second'
                                                    ELSE interval '0' END END,
                   CASE WHEN st = 'fired' THEN 1 ELSE 0 END, CASE WHEN st = 'fired' THEN 1 ELSE 0 END,
                   '', '', '', CASE WHEN st = 'held' THEN %(t0)s END,
                   CASE WHEN st = 'held' THEN CASE WHEN i %% 2 = 0 THEN 'error' ELSE 'hold' END ELSE '' END,
                   CASE WHEN st = 'held' THEN interval '1 day' END, '', 1, '{}'::jsonb
            FROM (SELECT i,
                         CASE WHEN i %% 100 < 80 THEN 'fired' WHEN i %% 100 < 99 THEN 'armed' ELSE 'held' END AS st,
                         (ARRAY['cycle','schedule','ask','task','deadline','rung','due','window','money'])[1 + i %% 9]
                             AS k,
                         CASE WHEN i %% 10 = 0 THEN 'live_bm' ELSE 'tc_bm' || (i %% %(clocks)s) END AS d
                  FROM generate_series(1, %(n)s) AS i) AS s
            """,
            {"brand": brand.id, "t0": now.replace(microsecond=0) - timedelta(days=1),
             "n": n, "clocks": CLOCKS},
        )
        cur.execute(
            """
            INSERT INTO timers_commit (id, domain, key, timer_id, outcome, code, at)
            SELECT 'cmt_bm' || substr(id, 7), domain, key, id,
                   CASE WHEN substr(id, 7)::int % 50 = 0 THEN 'refused' ELSE 'committed' END, '', fired_at
            FROM timers_timer WHERE id LIKE 'tmr_bm%' AND status = 'fired'
            """
        )
        # What the batches would have added as they fired these (the migration's own count from the timers).
        importlib.import_module("timers.migrations.0014_fire_tally").tally_fired_timers(
            connection, "t.id LIKE 'tmr_bm%%'", buckets=LATE_BUCKETS)
        cur.execute(
            """
            INSERT INTO timers_outbox (id, domain, brand_id, key, attempt, seq, transport, payload, status,
                error, created_at, claimed_by, lease_until, tries)
            SELECT 'sub_bm' || i, CASE WHEN i %% 10 = 0 THEN 'live_bm' ELSE 'tc_bm' || (i %% %(clocks)s) END,
                   %(brand)s, 'job_' || i || ':ask:bench:' || i, 1, 0, 'bench', '{}'::jsonb,
                   CASE WHEN i %% 10 < 9 THEN 'sent' WHEN i %% 3 = 0 THEN 'pending' ELSE 'sending' END, '',
                   %(t0)s, CASE WHEN i %% 10 = 9 AND i %% 3 <> 0 THEN 'pg:1:1' ELSE '' END,
                   CASE WHEN i %% 10 = 9 AND i %% 3 = 1 THEN %(t0)s + interval '2 days' END, 0
            FROM generate_series(1, %(m)s) AS i
            """,
            {"brand": brand.id, "t0": now, "m": max(1, n // 20), "clocks": CLOCKS},
        )
        cur.execute("VACUUM ANALYZE timers_timer")
        cur.execute("VACUUM ANALYZE timers_commit")
        cur.execute("VACUUM ANALYZE timers_firetally")
        cur.execute("VACUUM ANALYZE timers_outbox")
        cur.execute("VACUUM ANALYZE timers_testclock")
    return brand.id


def median_ms(fn, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        fn()
        times.append((time.perf_counter() - started) * 1000)
    return statistics.median(times)


def plans() -> dict[str, str]:
    """The top plan node (and the index it reads) of the index-backed queries."""
    from django.db import connection
    from django.db.models import Count, OuterRef, Subquery

    from timers.models import LiveClock, Timer

    queries = {
        "armed": Timer.objects.filter(status="armed").order_by().values_list("domain").annotate(
            n=Count("*")).values_list("domain", "n"),
        "held": Timer.objects.filter(status="held").order_by().values_list("domain", "held_by").annotate(
            n=Count("*")).values_list("domain", "held_by", "n"),
        "live lag": LiveClock.objects.annotate(oldest=Subquery(
            Timer.objects.filter(domain=OuterRef("pk"), status="armed").order_by("owed_at").values("owed_at")[:1]))
            .filter(oldest__isnull=False).values_list("id", "oldest"),
    }
    out = {}
    for name, qs in queries.items():
        sql, params = qs.query.sql_with_params()
        with connection.cursor() as cur:
            cur.execute("EXPLAIN " + sql, params)
            lines = [r[0] for r in cur.fetchall()]
        out[name] = "; ".join(line.strip().split("  (")[0] for line in lines if "Scan" in line or "Aggregate" in line)
    with connection.cursor() as cur:
        cur.execute("EXPLAIN SELECT domain, count(*) FROM timers_outbox WHERE status IN ('pending', 'sending') "
                    "GROUP BY domain")
        out["outbox"] = "; ".join(r[0].strip().split("  (")[0] for r in cur.fetchall() if "Scan" in r[0])
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--n", type=int, nargs="+", default=[10000, 100000])
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    setup_django()
    from django.db import connection
    from prometheus_client import generate_latest
    from prometheus_client.parser import text_string_to_metric_families

    from timers import metrics

    try:
        connection.ensure_connection()
    except Exception as exc:  # noqa: BLE001 - one line, not a traceback
        print(f"cannot reach the database: {exc}")
        return 2
    if connection.vendor != "postgresql":
        print("metrics_scrape needs PostgreSQL (its plans and its scale are the point)")
        return 2
    from django.core.management import call_command

    call_command("migrate", verbosity=0)
    with connection.cursor() as cur:
        cur.execute("SHOW server_version")
        server = cur.fetchone()[0]
    print(f"machine: {os.cpu_count()} CPU, {platform.platform()}, Python {platform.python_version()}, "
          f"PostgreSQL {server}")
    status = 0
    try:
        for n in args.n:
            clean()
            fill(n)
            body = generate_latest(metrics.registry).decode()  # warm: the first scrape reads pages in
            fams = {f.name: f for f in text_string_to_metric_families(body)}
            fired = sum(s.value for s in fams["kt_timer_fires"].samples)
            armed = sum(s.value for s in fams["kt_timers_armed"].samples if s.labels["domain"].startswith("tc_bm")
                        or s.labels["domain"] == "live_bm")
            errors = sum(s.value for s in fams["kt_metrics_scrape_error"].samples)
            if errors or fired < n * 0.8 or armed < n * 0.19:
                print(f"check failed at N={n}: fires {fired}, armed {armed}, errors {errors}")
                status = 3
            scrape = median_ms(lambda: generate_latest(metrics.registry), args.repeat)

            def count_all() -> None:
                with connection.cursor() as cur:
                    cur.execute("SELECT count(*) FROM timers_timer")
                    cur.fetchone()

            base = median_ms(count_all, args.repeat)
            print(f"N={n:,} timers ({int(n * 0.8):,} commits, {max(1, n // 20):,} outbox rows): scrape "
                  f"{scrape:.1f} ms · one count(*) of timers_timer {base:.1f} ms · ratio {scrape / base:.2f}")
            for name, build in metrics.FAMILIES:
                print(f"    {name:<9} {median_ms(build, args.repeat):7.1f} ms")
            for name, plan in plans().items():
                print(f"    plan {name}: {plan}")
    finally:
        clean()
    return status


if __name__ == "__main__":
    sys.exit(main())
