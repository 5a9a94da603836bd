"""N worker processes over 200 brands' live clocks, against 1 worker in the same run.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/kt_bench .venv/bin/python bench/multi_worker.py \
        [--brands 200] [--per-brand 50] [--workers 4] [--repeat 3]

Each round arms ``brands × per-brand`` live timers (owed over the last hour, handler noop; written with one
bulk insert, not measured) across the brands' live clocks (live_<brand id>), while the workers — real
processes running `tick --forever`'s loop (timers.worker.Worker) — are already up; the round is timed from
that commit until every timer has fired. Rounds alternate: 1 worker, then ``--workers`` workers.

Checked after each round, from the database (the ratio is printed only when every check holds):

* every firing once: one commit per key, ``brands × per-brand`` of them, every timer fired with one wake;
* one holder at a time: each domain's lease terms (timers_leaseterm, a row per epoch) never overlap —
  every term was let go before the next was taken — and each commit's domain was held by the worker that
  counted it (the workers' own counts add up to the commits);
* the spread: fires per worker.

Exit status: 0, 2 when not on PostgreSQL, 3 when a check fails.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import signal
import statistics
import subprocess
import sys
import time
from pathlib import Path

from bench_django import setup_django

ROOT = Path(__file__).resolve().parent.parent
PREFIX = "bench.mw."


# -- a worker process ----------------------------------------------------------------------------------------
def worker_main() -> None:
    setup_django()
    from timers import lease
    from timers.clock import WallClock
    from timers.worker import Worker

    worker = Worker(WallClock(max_sleep=0.05), test_clocks=False)
    signal.signal(signal.SIGTERM, lambda *_: worker.stop.set())
    print(json.dumps({"ready": True}), flush=True)
    worker.run()
    print(json.dumps({"holder": lease.holder(), "fired": worker.fired, "domains": len(worker.turns),
                      "turns": sum(worker.turns.values()), "lost": len(worker.lost)}), flush=True)


def spawn(n: int) -> list[subprocess.Popen]:
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    procs = [subprocess.Popen([sys.executable, str(Path(__file__).resolve()), "--worker"], cwd=ROOT, env=env,
                              stdout=subprocess.PIPE, text=True) for _ in range(n)]
    for p in procs:
        assert json.loads(p.stdout.readline())["ready"]
    return procs


def stop(procs: list[subprocess.Popen]) -> list[dict]:
    for p in procs:
        p.send_signal(signal.SIGTERM)
    return [json.loads(p.communicate(timeout=120)[0].strip().splitlines()[-1]) for p in procs]


# -- the bench ------------------------------------------------------------------------------------------------
def brands(n: int) -> list:
    from timers.tenants import brand_get_or_create

    return [brand_get_or_create(name=f"{PREFIX}{i:03d}") for i in range(n)]


def clear(rows: list) -> None:
    from timers.models import Commit, Event, Lease, LeaseTerm, LiveClock, Timer, live_domain

    domains = [live_domain(b.id) for b in rows]
    for model in (Timer, Commit, Event, Lease, LeaseTerm):
        model.objects.filter(domain__in=domains).delete()
    LiveClock.objects.filter(id__in=domains).delete()


def arm(rows: list, per_brand: int, round_no: int) -> int:
    """Arm every brand's timers in one transaction; returns how many."""
    from datetime import timedelta

    from django.db import transaction

    from timers.clock import wall_now
    from timers.domains import domain_seed
    from timers.ids import new_id
    from timers.keys import parse
    from timers.models import LiveClock, Timer, live_domain

    now = wall_now()
    timers = []
    for b in rows:
        domain = live_domain(b.id)
        for i in range(per_brand):
            key = f"job_{round_no}x{i}:deadline:bench:1"
            k = parse(key)
            timers.append(Timer(id=new_id("tmr", seed=f"{domain_seed(domain)}|{key}"), domain=domain, brand=b,
                                key=key, owner=k.owner, kind=k.kind, place=k.place, handler="noop",
                                owed_at=now - timedelta(minutes=60 * (per_brand - i) / per_brand),
                                opened_at=now, armed_at=now))
    with transaction.atomic():
        LiveClock.objects.bulk_create([LiveClock(id=live_domain(b.id)) for b in rows], ignore_conflicts=True)
        Timer.objects.bulk_create(timers, batch_size=5000)
    return len(timers)


def wait_fired(rows: list, n: int, procs: list[subprocess.Popen], timeout: float = 600) -> float:
    from timers.models import Commit, live_domain

    domains = [live_domain(b.id) for b in rows]
    start = time.perf_counter()
    while Commit.objects.filter(domain__in=domains).count() < n:
        if time.perf_counter() - start > timeout or any(p.poll() is not None for p in procs):
            print("CHECK FAILED: a worker died, or the timers did not all fire in time")
            raise SystemExit(3)
        time.sleep(0.01)
    return time.perf_counter() - start


def check(rows: list, n: int, outs: list[dict]) -> list[str]:
    from django.db.models import Count

    from timers.models import Commit, LeaseTerm, Timer, live_domain

    problems = []
    domains = [live_domain(b.id) for b in rows]
    commits = Commit.objects.filter(domain__in=domains)
    if commits.count() != n or commits.values("domain", "key").annotate(c=Count("id")).filter(c__gt=1).exists():
        problems.append("a key committed twice or not at all")
    fired = Timer.objects.filter(domain__in=domains, status="fired")
    if fired.count() != n or fired.exclude(wakes=1).exists():
        problems.append("a timer not fired, or woken more than once")
    if sum(o["fired"] for o in outs) != n:
        problems.append(f"the workers counted {sum(o['fired'] for o in outs)} fires, not {n}")
    last: dict[str, object] = {}
    for t in LeaseTerm.objects.filter(domain__in=domains).order_by("domain", "epoch"):
        prev = last.get(t.domain)
        if prev is not None and (prev.released_at is None or prev.released_at > t.taken_at):
            problems.append(f"{t.domain}: epoch {t.epoch} taken before epoch {prev.epoch} was let go")
        last[t.domain] = t
    return problems


def one_round(rows: list, per_brand: int, workers: int, round_no: int) -> tuple[float, list[dict], int]:
    clear(rows)
    procs = spawn(workers)
    try:
        n = arm(rows, per_brand, round_no)
        seconds = wait_fired(rows, n, procs)
    finally:
        outs = stop(procs)
    from timers.models import LeaseTerm, live_domain

    terms = LeaseTerm.objects.filter(domain__in=[live_domain(b.id) for b in rows]).count()
    problems = check(rows, n, outs)
    if problems:
        print("CHECK FAILED:", *problems[:10], sep="\n  ")
        raise SystemExit(3)
    return n / seconds, outs, terms


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--brands", type=int, default=200)
    parser.add_argument("--per-brand", type=int, default=50)
    parser.add_argument("--workers", type=int, default=4)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    if args.worker:
        return worker_main()
    setup_django()
    from django.core.management import call_command
    from django.db import connection

    if connection.vendor != "postgresql":
        print("multi_worker: PostgreSQL only (real worker processes sharing leases)")
        raise SystemExit(2)
    call_command("migrate", verbosity=0)
    rows = brands(args.brands)
    print(f"# multi_worker · {args.brands} brands × {args.per_brand} live timers (noop) · {platform.node()} · "
          f"{os.cpu_count()} CPUs · Python {platform.python_version()}")
    rates: dict[int, list[float]] = {1: [], args.workers: []}
    round_no = 0
    for r in range(args.repeat):
        for workers in (1, args.workers):
            round_no += 1
            rate, outs, terms = one_round(rows, args.per_brand, workers, round_no)
            rates[workers].append(rate)
            spread = " ".join(f"{o['fired']}" for o in sorted(outs, key=lambda o: -o["fired"]))
            print(f"round {r + 1} · {workers} worker{'s' if workers > 1 else ''}: {rate:,.0f} fires/s · fires per "
                  f"worker {spread} · {terms} lease terms, none overlapping · every fire once")
    one, many = statistics.median(rates[1]), statistics.median(rates[args.workers])
    print(f"median: 1 worker {one:,.0f} fires/s · {args.workers} workers {many:,.0f} fires/s · "
          f"ratio {many / one:.2f}×")
    clear(rows)


if __name__ == "__main__":
    main()
