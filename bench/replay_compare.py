"""Replay compare: ``tick 1y --compare --redeliver`` on the Tax Plan's clock, PostgreSQL against SQLite.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/kt_replay_bench .venv/bin/python bench/replay_compare.py \
        [--sqlite /tmp/kt_replay_bench.sqlite3] [--span 1y] [--repeat 3]

Each database gets Acme as ``loadexample apis_tax --reset`` makes it, then the four-way compare of the span
on its test clock (one advance, daily advances, the live loop on wall time, one advance with every wake
delivered twice), ``--repeat`` times, in a child process of its own per database, rounds alternating. Each
compare is checked (the four ways agree, and on the same hash on both databases). Prints per database the
median wall seconds, the process's CPU seconds (user + sys), PostgreSQL's backend CPU seconds (from /proc),
the statements sent (at psycopg's or sqlite3's level, so the engine's raw statements count), and the ratio
PostgreSQL / SQLite; with the load average, since the machine is shared.

Exit status: 0 when PostgreSQL's median wall time is no more than SQLite's, 1 when it is more, 2 when
DATABASE_URL is not PostgreSQL, 3 when a check fails.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from pathlib import Path

from bench_django import setup_django

ROOT = Path(__file__).resolve().parent.parent


def backend_cpu(connection) -> float:
    if connection.vendor != "postgresql":
        return 0.0
    pid = connection.connection.info.backend_pid
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return float("nan")  # the server runs elsewhere
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def count_statements(connection) -> list[int]:
    """A counter of every statement the process sends, below Django's cursor wrapper."""
    counter = [0]
    if connection.vendor == "postgresql":
        import psycopg

        for name in ("execute", "executemany", "copy"):
            original = getattr(psycopg.Cursor, name)

            def counted(self, *args, _original=original, **kwargs):
                counter[0] += 1
                return _original(self, *args, **kwargs)

            setattr(psycopg.Cursor, name, counted)
    else:
        connection.ensure_connection()
        raw = connection.connection

        def trace(sql: str) -> None:
            counter[0] += 1

        raw.set_trace_callback(trace)
    return counter


def child(span: str, repeat: int) -> None:
    """Seed, then ``repeat`` compares: one JSON line each."""
    import re
    from io import StringIO

    setup_django()
    from django.core.management import call_command
    from django.db import connection

    from timers.compare import compare
    from timers.models import TestClock
    from timers.timeutil import after_span, parse_span

    call_command("migrate", "--noinput", verbosity=0)
    out = StringIO()
    call_command("loadexample", "apis_tax", "--reset", stdout=out)
    clock_id = re.search(r"^test clock (tc_\S+)", out.getvalue(), re.M).group(1)
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("ANALYZE")
    clock = TestClock.objects.get(pk=clock_id)
    to = after_span(clock.frozen_time, parse_span(span), text=span)
    counter = count_statements(connection)
    for _ in range(repeat):
        counter[0] = 0
        cpu0, backend0, wall0 = time.process_time(), backend_cpu(connection), time.perf_counter()
        ways = compare(clock_id, to, redeliver=True)
        wall = time.perf_counter() - wall0
        print(json.dumps({"wall": wall, "cpu": time.process_time() - cpu0,
                          "backend": backend_cpu(connection) - backend0, "statements": counter[0],
                          "hashes": sorted({w.sha256 for w in ways}), "events": [w.events for w in ways]}),
              flush=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sqlite", default="/tmp/kt_replay_bench.sqlite3")
    parser.add_argument("--span", default="1y")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.span, 1)
        return 0
    url = os.environ.get("DATABASE_URL", "")
    if not url.startswith(("postgres://", "postgresql://")):
        print("replay_compare: DATABASE_URL must name a PostgreSQL database", file=sys.stderr)
        return 2
    urls = {"postgresql": url, "sqlite": f"sqlite:///{args.sqlite}"}
    samples: dict[str, list[dict]] = {name: [] for name in urls}
    loads = [os.getloadavg()]
    for _ in range(args.repeat):
        for name, db in urls.items():
            env = {**os.environ, "DATABASE_URL": db, "DEBUG": "0"}
            done = subprocess.run([sys.executable, __file__, "--child", "--span", args.span], env=env, cwd=ROOT,
                                  capture_output=True, text=True)
            if done.returncode != 0:
                print(f"replay_compare: {name} failed:\n{done.stderr[-3000:]}", file=sys.stderr)
                return 3
            samples[name].append(json.loads(done.stdout.strip().splitlines()[-1]))
        loads.append(os.getloadavg())
    hashes = {h for s in samples.values() for r in s for h in r["hashes"]}
    if len(hashes) != 1:
        print(f"replay_compare: the ways or the databases disagree: {sorted(hashes)}", file=sys.stderr)
        return 3

    def med(name: str, key: str) -> float:
        return statistics.median(r[key] for r in samples[name])

    print(f"tick {args.span} --compare --redeliver on the Tax Plan's clock (loadexample apis_tax): 4 ways, "
          f"{samples['sqlite'][0]['events']} events each, one hash ({hashes.pop()[:16]}…); {args.repeat} rounds")
    print(f"{'database':<12}{'wall s':>9}{'CPU s':>9}{'backend s':>11}{'statements':>12}   rounds (wall s)")
    for name in urls:
        rounds = ", ".join(f"{r['wall']:.2f}" for r in samples[name])
        print(f"{name:<12}{med(name, 'wall'):>9.2f}{med(name, 'cpu'):>9.2f}{med(name, 'backend'):>11.2f}"
              f"{med(name, 'statements'):>12,.0f}   {rounds}")
    ratio = med("postgresql", "wall") / med("sqlite", "wall")
    cpu_ratio = (med("postgresql", "cpu") + med("postgresql", "backend")) / med("sqlite", "cpu")
    print(f"ratio PostgreSQL / SQLite: wall {ratio:.2f}x, CPU (process + backend) {cpu_ratio:.2f}x")
    print("load average (1, 5, 15 min) at the start and after each round: "
          + "; ".join(" ".join(f"{x:.1f}" for x in la) for la in loads))
    print(f"machine: {platform.platform()}, {os.cpu_count()} CPUs, python {platform.python_version()}")
    return 0 if ratio <= 1.0 else 1


if __name__ == "__main__":
    sys.exit(main())
