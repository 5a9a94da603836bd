"""The tick at 10M fired timers against an empty database: its rate, and the armed table's size.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/kt_history_bench .venv/bin/python bench/history_growth.py \
        [--fired 10000000] [--n 10000] [--repeat 3]

Use a database of its own: it empties timers_timer at the start (TRUNCATE) and leaves its fired timers behind.
PostgreSQL only.

On PostgreSQL a timer that fires leaves the armed table for history (timers/history.py). Each repeat, in one
process: N noop timers owed over the hour before T0 are armed on a fresh test clock (bench/tick_throughput.py's
``arm``, not timed) and drained by ``timers.advance.advance`` (timed: wall seconds, and CPU seconds of this process
and of its PostgreSQL backend), first with no other timer in the database ("empty"), then after --fired fired
timers were written over 1,000 other clock domains (one ``INSERT … SELECT FROM generate_series`` per million,
not timed, then ``VACUUM ANALYZE``) ("full"). It prints both rates, their ratio, and the armed table's and
history's sizes (``pg_total_relation_size``) after each drain and ``VACUUM``.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.tick_throughput import T0  # noqa: E402 - the timers it arms are owed the hour before it

BRAND = "bench.history_growth"
FILL_DOMAINS = 1000

FILL_SQL = """
INSERT INTO timers_timer (id, domain, brand_id, key, owner, kind, place, handler, status, owed_at, opened_at,
                          armed_at, fired_at, late_by, attempt, wakes, version, superseded_by, "by", held_since,
                          held_by, remaining, armed_by, data)
SELECT 'tmr_h' || g, 'tc_hist' || (g %% %(domains)s), %(brand)s, 'job_h' || (g / 8) || ':rung:notice ' || (g %% 8)
       || 'd:2027', 'job_h' || (g / 8), 'rung', 4, 'noop', 'fired',
       %(t0)s::timestamptz - make_interval(mins => (g %% 500000)), %(t0)s::timestamptz - interval '400 days',
       %(t0)s::timestamptz - interval '400 days', %(t0)s::timestamptz - make_interval(mins => (g %% 500000)),
       interval '0', 1, 1, '', '', '', NULL, '', NULL, '', '{}'::jsonb
FROM generate_series(%(lo)s, %(hi)s) AS g
"""


def setup_django() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "keeping_time.settings")
    os.environ.setdefault("DEBUG", "1")
    import django

    django.setup()


def cpu_of(pid: int) -> float:
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def sizes() -> tuple[int, int]:
    from django.db import connection

    with connection.cursor() as cur:
        cur.execute("VACUUM timers_timer_armed")
        cur.execute("SELECT pg_total_relation_size('timers_timer_armed'), "
                    "(SELECT coalesce(sum(pg_total_relation_size(inhrelid)), 0) FROM pg_inherits i "
                    " JOIN pg_class c ON c.oid = i.inhparent WHERE c.relname = 'timers_timer_history')")
        armed, hist = cur.fetchone()
        return int(armed), int(hist)


def drain(brand, n: int) -> dict:
    from django.db import connection

    from bench.tick_throughput import arm
    from timers import test_clocks
    from timers.advance import advance

    clock = test_clocks.test_clock_create(brand=brand, frozen_time=T0, name="history bench")
    arm(clock.id, brand.id, n)
    with connection.cursor() as cur:
        cur.execute("SELECT pg_backend_pid()")
        backend = cur.fetchone()[0]
    cpu0, db0, t0 = time.process_time(), cpu_of(backend), time.perf_counter()
    stats = advance(clock.id, T0)
    seconds = time.perf_counter() - t0
    cpu, db = time.process_time() - cpu0, cpu_of(backend) - db0
    assert stats.fired == n, stats
    armed, hist = sizes()
    test_clocks.test_clock_delete(clock=clock)
    return {"seconds": seconds, "rate": n / seconds, "cpu": cpu + db, "armed": armed, "history": hist}


def fill(brand, fired: int) -> None:
    from django.db import connection, transaction

    step = 1_000_000
    for lo in range(0, fired, step):
        with transaction.atomic(), connection.cursor() as cur:
            cur.execute(FILL_SQL, {"domains": FILL_DOMAINS, "brand": brand.id, "t0": T0, "lo": lo,
                                   "hi": min(fired, lo + step) - 1})
        print(f"  filled {min(fired, lo + step):,} fired timers", flush=True)
    with connection.cursor() as cur:
        cur.execute("VACUUM ANALYZE timers_timer")


def filled(brand) -> int:
    from django.db import connection

    with connection.cursor() as cur:
        cur.execute("SELECT count(*) FROM timers_timer WHERE status = 'fired' AND domain LIKE 'tc_hist%%' "
                    "AND brand_id = %s", [brand.id])
        return cur.fetchone()[0]


def line(name: str, runs: list[dict]) -> dict:
    med = {k: statistics.median(r[k] for r in runs) for k in runs[0]}
    each = ", ".join(f"{r['rate']:,.0f}" for r in runs)
    print(f"  {name:>5}: {med['rate']:,.0f} timers/s (runs {each}) · "
          f"{med['cpu']:.2f} s CPU a drain (process + backend) · armed table {med['armed'] / 1e6:.1f} MB · "
          f"history {med['history'] / 1e6:,.0f} MB")
    return med


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0])
    parser.add_argument("--fired", type=int, default=10_000_000)
    parser.add_argument("--n", type=int, default=10_000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args(argv)
    setup_django()
    from django.core.management import call_command
    from django.db import connection

    if connection.vendor != "postgresql":
        print(f"history_growth: needs PostgreSQL; this is {connection.vendor}", file=sys.stderr)
        return 2
    call_command("migrate", verbosity=0)
    from timers import history, tenants

    if not history.partitioned():
        print("history_growth: timers_timer is not split (migration 0022)", file=sys.stderr)
        return 2
    brand = tenants.brand_get_or_create(name=BRAND)
    print(f"machine: nproc={os.cpu_count()} · load {os.getloadavg()[0]:.1f} · N={args.n:,} noop timers a drain, "
          f"median of {args.repeat}")
    with connection.cursor() as cur:
        cur.execute("TRUNCATE timers_timer")
        cur.execute("VACUUM ANALYZE timers_timer")
    empty = line("empty", [drain(brand, args.n) for _ in range(args.repeat)])
    print(f"writing {args.fired:,} fired timers over {FILL_DOMAINS} domains (not timed)…", flush=True)
    t = time.perf_counter()
    fill(brand, args.fired)
    print(f"  in {time.perf_counter() - t:.0f} s; {filled(brand):,} fired timers in history", flush=True)
    full = line("full", [drain(brand, args.n) for _ in range(args.repeat)])
    print(f"full / empty: rate {full['rate'] / empty['rate']:.2f}x · CPU {full['cpu'] / empty['cpu']:.2f}x · "
          f"armed table {full['armed'] / empty['armed']:.2f}x · load {os.getloadavg()[0]:.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
