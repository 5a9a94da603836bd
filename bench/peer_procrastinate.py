"""Side by side: draining N owed noop timers with the tick, and N deferred noop jobs with Procrastinate 3.x.

    .venv/bin/pip install -e '.[bench]'   # procrastinate>=3,<4 (the `bench` extra)
    DATABASE_URL=postgres://postgres@127.0.0.1:5432/kt_bench12 \
    PEER_DATABASE_URL=postgres://postgres@127.0.0.1:5432/kt_bench12_peer \
        .venv/bin/python bench/peer_procrastinate.py [--n 10000] [--repeat 3] [--concurrency 1 10]

Both on the same PostgreSQL server, each in its own database, one after the other, never at once:

* ours: N "noop" timers owed over the hour before a test clock's frozen time are armed with one INSERT (not
  measured, bench/tick_throughput.py's ``arm``), then ``timers.advance.advance(clock, T0)`` drains them and
  is timed: a batch of up to ADVANCE_BATCH_SIZE claimed with one indexed query, fired in memory, the batch's timer
  rows, commits and ``timer.fired`` events written with set statements in one transaction;
* Procrastinate: N jobs of an ``async def noop()`` task are deferred with one ``batch_defer_async`` (not
  measured), then ``app.run_worker_async(wait=False, concurrency=C)`` drains them and is timed (its worker
  returns once the queue is empty): per job, ``procrastinate_fetch_job_v2`` (SKIP LOCKED) and
  ``procrastinate_finish_job_v1`` (the status, and its event rows by trigger), each its own transaction.
  Jobs are kept (``delete_jobs='never'``, the default), as the tick keeps its record.

Both are verified (N timers fired and N events, N jobs succeeded). Medians of ``--repeat`` runs; the ratio
is ours ÷ Procrastinate at each concurrency. Exit status: 0, 2 when not on PostgreSQL or without
Procrastinate, 3 when a verification fails.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import platform
import statistics
import sys
import time

from bench_django import setup_django

BRAND = "bench.peer_procrastinate"
PEER_DEFAULT = "postgres://postgres@127.0.0.1:5432/kt_bench12_peer"

SEMANTICS = """\
what each guarantees (the work compared is "an owed thing runs once and that it ran is written down"):
  ours          each timer fires once per key in its clock domain (the commit's unique constraint; a second
                wake is answered replayed), in one total order (owed time, place, opened, key); its status,
                its commit and its timer.fired event (the append-only record, hashed) are written in the
                batch's one transaction, so a crash loses the batch whole and the next tick fires it again.
                One worker per clock domain (an advisory lock): it scales across domains, not on one.
  Procrastinate each job runs at least once (claimed by fetch_job with SKIP LOCKED, status 'doing'; a worker
                that dies leaves it 'doing' until it is retried as stalled); no order beyond priority and id;
                one fetch transaction and one finish transaction per job, the job's events written by
                triggers; many workers and concurrency on one queue; queueing locks, locks, retries."""


# -- ours ---------------------------------------------------------------------------------------------
def drain_ours(n: int) -> float:
    from bench import tick_throughput as tt
    from timers import tenants
    from timers.advance import advance
    from timers.models import Event

    brand = tenants.brand_get_or_create(name=BRAND)
    tt.cleanup(brand)
    clock = tt.new_clock(brand, f"peer n={n}")
    tt.arm(clock.id, brand.id, n)
    tt.checkpoint()
    t = time.perf_counter()
    stats = advance(clock.id, tt.T0)
    seconds = time.perf_counter() - t
    events = Event.objects.filter(domain=clock.id, type="timer.fired").count()
    tt.cleanup(brand)
    if stats.fired != n or events != n:
        raise RuntimeError(f"ours: fired {stats.fired}, {events} events, of {n}")
    return seconds


# -- Procrastinate ------------------------------------------------------------------------------------
def make_app(conninfo: str):
    import procrastinate

    app = procrastinate.App(connector=procrastinate.PsycopgConnector(conninfo=conninfo))

    @app.task(name="noop", queue="bench")
    async def noop() -> None:
        return None

    return app, noop


def _maintain(conninfo: str, *statements: str) -> None:
    """Statements that cannot run in a transaction (VACUUM, CHECKPOINT), on a connection of their own."""
    import psycopg

    with psycopg.connect(conninfo, autocommit=True) as conn:
        for sql in statements:
            conn.execute(sql)


async def _peer_prepare(app, noop, conninfo: str, n: int) -> None:
    async with app.open_async():
        exists = await app.connector.execute_query_one_async(
            "SELECT to_regclass('procrastinate_jobs') IS NOT NULL AS ok")
        if not exists["ok"]:
            await app.schema_manager.apply_schema_async()
    _maintain(conninfo, "TRUNCATE procrastinate_jobs, procrastinate_events, procrastinate_workers "
              "RESTART IDENTITY CASCADE", "VACUUM ANALYZE procrastinate_jobs", "VACUUM ANALYZE procrastinate_events")
    async with app.open_async():
        for start in range(0, n, 5000):
            await noop.batch_defer_async(*({} for _ in range(min(5000, n - start))))
    _maintain(conninfo, "ANALYZE procrastinate_jobs", "CHECKPOINT")


async def _peer_drain(app, concurrency: int) -> float:
    async with app.open_async():
        t = time.perf_counter()
        await app.run_worker_async(queues=["bench"], wait=False, concurrency=concurrency,
                                   install_signal_handlers=False, delete_jobs="never")
        return time.perf_counter() - t


async def _peer_count(app) -> dict:
    async with app.open_async():
        rows = await app.connector.execute_query_all_async(
            "SELECT status::text AS status, count(*) AS n FROM procrastinate_jobs GROUP BY 1")
        return {r["status"]: r["n"] for r in rows}


def drain_peer(conninfo: str, n: int, concurrency: int) -> float:
    app, noop = make_app(conninfo)
    asyncio.run(_peer_prepare(app, noop, conninfo, n))
    seconds = asyncio.run(_peer_drain(app, concurrency))
    counts = asyncio.run(_peer_count(app))
    if counts.get("succeeded") != n or len(counts) != 1:
        raise RuntimeError(f"Procrastinate: {counts}, expected {n} succeeded")
    return seconds


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0])
    parser.add_argument("--n", type=int, default=10_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--concurrency", type=int, nargs="+", default=[1, 10],
                        help="Procrastinate worker concurrency (ours is always one worker on one domain)")
    args = parser.parse_args(argv)
    logging.getLogger("procrastinate").setLevel(logging.ERROR)  # its "App in the main module" note
    try:
        from importlib.metadata import version

        import procrastinate
    except ImportError:
        print("peer_procrastinate: needs procrastinate>=3,<4 (pip install -e '.[bench]')", file=sys.stderr)
        return 2
    setup_django()
    from django.conf import settings
    from django.core.management import call_command
    from django.db import connection

    if connection.vendor != "postgresql":
        print(f"peer_procrastinate: needs PostgreSQL (DATABASE_URL); this is {connection.vendor}", file=sys.stderr)
        return 2
    call_command("migrate", verbosity=0)
    peer = os.environ.get("PEER_DATABASE_URL", PEER_DEFAULT)
    print(f"# peer drain · N={args.n:,} · {os.cpu_count()} cores · {platform.processor() or platform.machine()} · "
          f"{platform.platform()} · Python {platform.python_version()} · PostgreSQL {connection.pg_version // 10000}"
          f" · procrastinate {version('procrastinate')} · our batch {settings.KEEPING_TIME.get('ADVANCE_BATCH_SIZE') or settings.KEEPING_TIME['BATCH_SIZE']} · "
          f"load average {os.getloadavg()[0]:.1f} at start")
    print("# noisy: a 2-core machine shared with other engineers' test suites; medians of the runs\n", flush=True)
    del procrastinate
    ours: list[float] = []
    peers: dict[int, list[float]] = {c: [] for c in args.concurrency}
    try:
        for i in range(args.repeat):
            ours.append(drain_ours(args.n))
            line = f"  run {i + 1}: ours {args.n / ours[-1]:8,.0f} timers/s ({ours[-1]:.2f}s)"
            for c in args.concurrency:
                peers[c].append(drain_peer(peer, args.n, c))
                line += f" · Procrastinate c={c} {args.n / peers[c][-1]:6,.0f} jobs/s ({peers[c][-1]:.1f}s)"
            print(line, flush=True)
    except RuntimeError as exc:
        print(f"verification failed: {exc}")
        return 3
    o = args.n / statistics.median(ours)
    print(f"\nN={args.n:,}, medians of {args.repeat}:")
    print(f"  ours (one worker, one domain)    {o:9,.0f} timers/s")
    for c, s in peers.items():
        p = args.n / statistics.median(s)
        per_run = statistics.median(b / a for a, b in zip(ours, s, strict=True))
        print(f"  Procrastinate, concurrency {c:<3}    {p:9,.0f} jobs/s   · ratio ours ÷ Procrastinate: {o / p:.1f}× "
              f"(of the medians; the median of the runs' own ratios: {per_run:.1f}×)")
    print("\n" + SEMANTICS)
    return 0


if __name__ == "__main__":
    sys.exit(main())
