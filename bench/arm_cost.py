"""What one arming costs in process: ``POST /timers`` through Django's WSGI handler, against ``timer_arm`` alone.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/kt_arm .venv/bin/python bench/arm_cost.py \
        [-n 2000] [--repeat 3] [--lane both|wsgi|direct] [--profile 30] [--json]

Two lanes, alternated round by round over the same N (issue 26, issue 39):

* **wsgi**: ``POST /timers`` through Django's WSGI handler (as gunicorn calls it, DEBUG off), no HTTP server,
  no client threads: the API's own Python (middleware, DRF's request, authentication, throttle, parsing, the
  answer's JSON) around the arming. Rate limits are on (the default 100/s per key is raised so that none is
  refused: the throttle's own work is counted).
* **direct**: ``timers.arming.timer_arm`` called in a loop, the same keys, owed time and handler: the arming
  itself, its three statements and their backend. This is the "in process" figure bench/live.py divides
  arming over the API by (it runs ``--lane direct --json`` in a process of its own, over the API round's N).

Prints first the ratio wsgi ÷ direct of CPU ms an arming (this process's user+sys and its PostgreSQL
backend's, from /proc), each split, and the load; then each round: the CPU split, the statements an arming
sends, the wall ms. ``--profile N`` prints cProfile's top N functions (cumulative) for one more wsgi round.
``--json``: the report is one JSON line ({lane: {"api", "db", "statements", "wall"}}: medians, ms an arming).
Each arming is owed an hour ahead on the brand's live clock: nothing fires, no worker is woken. PostgreSQL only.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

from bench_django import setup_django

TICKS = os.sysconf("SC_CLK_TCK")
BRAND = "bench.arm_cost"


def proc_cpu(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICKS


def environ_for(body: bytes, key: str) -> dict:
    return {
        "REQUEST_METHOD": "POST", "PATH_INFO": "/timers", "QUERY_STRING": "", "SCRIPT_NAME": "",
        "SERVER_NAME": "127.0.0.1", "SERVER_PORT": "8000", "SERVER_PROTOCOL": "HTTP/1.1",
        "REMOTE_ADDR": "127.0.0.1", "HTTP_HOST": "127.0.0.1:8000", "CONTENT_TYPE": "application/json",
        "CONTENT_LENGTH": str(len(body)), "HTTP_AUTHORIZATION": f"Bearer {key}",
        "wsgi.input": io.BytesIO(body), "wsgi.url_scheme": "http", "wsgi.errors": sys.stderr,
        "wsgi.version": (1, 0), "wsgi.multithread": False, "wsgi.multiprocess": True, "wsgi.run_once": False,
    }


def say(text: str) -> None:
    """A round's line: progress, on stderr (stdout is the report, ratio first)."""
    print(text, file=sys.stderr, flush=True)


def one_round(app, key: str, n: int, tag: str, start_at: int) -> tuple[float, float, float, float]:
    """``n`` POST /timers through Django's WSGI handler: (API ms, backend ms, statements, wall ms) an arming."""
    from datetime import timedelta

    from django.db import connection

    from timers.clock import wall_now
    from timers.timeutil import iso_z

    owed = iso_z(wall_now() + timedelta(hours=1))
    bodies = [json.dumps({"key": f"job_cost:task:tick:{start_at + i}", "owed_at": owed, "handler": "noop"}).encode()
              for i in range(n)]
    statements = 0

    def count(execute, sql, params, many, context):
        nonlocal statements
        statements += 1
        return execute(sql, params, many, context)

    def status_of(status, headers, exc_info=None):
        if not status.startswith("201"):
            raise SystemExit(f"arm_cost: {status}")

    connection.ensure_connection()
    backend = connection.connection.info.backend_pid
    with connection.execute_wrapper(count):
        cpu0, db0, wall0 = time.process_time(), proc_cpu(backend), time.perf_counter()
        for body in bodies:
            b"".join(app(environ_for(body, key), status_of))
        cpu1, db1, wall1 = time.process_time(), proc_cpu(backend), time.perf_counter()
    if connection.connection is None or connection.connection.info.backend_pid != backend:
        raise SystemExit("arm_cost: the connection was not kept across requests (conn_max_age)")
    api, db, wall = (cpu1 - cpu0) / n * 1000, (db1 - db0) / n * 1000, (wall1 - wall0) / n * 1000
    say(f"{tag} wsgi: {n} armings · CPU ms an arming: api {api:.2f} + db {db:.2f} = {api + db:.2f} · "
        f"{statements / n:.2f} statements an arming · wall {wall:.2f} ms · load {os.getloadavg()[0]:.2f}")
    return api, db, statements / n, wall


def direct_round(brand, n: int, tag: str, start_at: int) -> tuple[float, float, float, float]:
    """``n`` calls of timers.arming.timer_arm, the keys, owed time and handler the wsgi lane's bodies carry:
    (process ms, backend ms, statements, wall ms) an arming."""
    from datetime import timedelta

    from django.db import connection

    from timers.arming import timer_arm
    from timers.clock import wall_now

    owed = wall_now() + timedelta(hours=1)
    keys = [f"job_cost:task:tick:{start_at + i}" for i in range(n)]
    statements = 0

    def count(execute, sql, params, many, context):
        nonlocal statements
        statements += 1
        return execute(sql, params, many, context)

    connection.ensure_connection()
    backend = connection.connection.info.backend_pid
    with connection.execute_wrapper(count):
        cpu0, db0, wall0 = time.process_time(), proc_cpu(backend), time.perf_counter()
        for key in keys:
            timer_arm(brand=brand, key=key, owed_at=owed, domain=None, handler="noop", data={})
        cpu1, db1, wall1 = time.process_time(), proc_cpu(backend), time.perf_counter()
    api, db, wall = (cpu1 - cpu0) / n * 1000, (db1 - db0) / n * 1000, (wall1 - wall0) / n * 1000
    say(f"{tag} direct: {n} armings · CPU ms an arming: process {api:.2f} + db {db:.2f} = {api + db:.2f} · "
        f"{statements / n:.2f} statements an arming · wall {wall:.2f} ms · load {os.getloadavg()[0]:.2f}")
    return api, db, statements / n, wall


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("-n", type=int, default=2000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--lane", choices=["both", "wsgi", "direct"], default="both")
    parser.add_argument("--profile", type=int, default=0, help="print cProfile's top N (cumulative) for a round")
    parser.add_argument("--json", action="store_true", help="the report as one JSON line of medians")
    args = parser.parse_args()

    url = os.environ.get("DATABASE_URL", "")
    if "conn_max_age" not in url:  # as gunicorn serves it (bench/live.py): one session kept across requests
        os.environ["DATABASE_URL"] = url + ("&" if "?" in url else "?") + "conn_max_age=600"
    os.environ.setdefault("KT_RATE_LIMIT", "100000/s")
    setup_django()
    from django.core.handlers.wsgi import WSGIHandler
    from django.core.management import call_command
    from django.db import connection

    from timers.models import ApiKey, Brand, Timer, live_domain
    from timers.tenants import api_key_create, brand_get_or_create

    if connection.vendor != "postgresql":
        print("arm_cost: PostgreSQL only (DATABASE_URL=postgres://…)", file=sys.stderr)
        return 2
    call_command("migrate", verbosity=0)
    old = Brand.objects.filter(name=BRAND).first()
    if old is not None:
        Timer.objects.filter(domain=live_domain(old.id)).delete()
        ApiKey.objects.filter(brand=old).delete()
    brand = brand_get_or_create(name=BRAND)
    _, key = api_key_create(brand=brand, name="cost", live=True)
    app = WSGIHandler()
    lanes = ["wsgi", "direct"] if args.lane == "both" else [args.lane]
    run = {"wsgi": lambda n, tag, at: one_round(app, key, n, tag, at),
           "direct": lambda n, tag, at: direct_round(brand, n, tag, at)}
    loads = [os.getloadavg()]
    for lane in lanes:  # warm-up: imports, the prepared statements, the key's lookup
        run[lane](50, "warm-up", 10**7 + lanes.index(lane) * 100)
    rounds: dict[str, list[tuple[float, float, float, float]]] = {lane: [] for lane in lanes}
    at = 0
    for r in range(args.repeat):
        for lane in lanes:
            rounds[lane].append(run[lane](args.n, f"round {r + 1}", at))
            at += args.n
        loads.append(os.getloadavg())
    med = {lane: {name: statistics.median(x[i] for x in rounds[lane])
                  for i, name in enumerate(("api", "db", "statements", "wall"))} for lane in lanes}
    if args.json:
        print(json.dumps({**med, "n": args.n, "repeat": args.repeat, "load": loads}), flush=True)
    else:
        report(med, args, loads)
    if args.profile:
        import cProfile
        import pstats

        prof = cProfile.Profile(time.process_time)
        prof.enable()
        one_round(app, key, args.n, "profiled", at)
        prof.disable()
        pstats.Stats(prof).sort_stats("cumulative").print_stats(args.profile)
        pstats.Stats(prof).sort_stats("tottime").print_stats(args.profile)
    Timer.objects.filter(domain=live_domain(brand.id)).delete()
    return 0


def report(med: dict[str, dict[str, float]], args: argparse.Namespace, loads: list[tuple[float, ...]]) -> None:
    """The ratio first (the API's handler around an arming ÷ the arming alone), then each lane's medians."""
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=Path(__file__).resolve().parent,
                            capture_output=True, text=True).stdout.strip() or "?"

    def total(lane: str) -> float:
        return med[lane]["api"] + med[lane]["db"]

    def split(lane: str) -> str:
        who = "api" if lane == "wsgi" else "process"
        return f"{total(lane):.2f} ms ({who} {med[lane]['api']:.2f} + backend {med[lane]['db']:.2f})"

    print(f"arm_cost · N={args.n} armings a round, medians of {args.repeat} round{'s' if args.repeat != 1 else ''}"
          f" · commit {commit} · load (1, 5, 15 min) at the start and after each round: "
          + "; ".join(" ".join(f"{x:.1f}" for x in la) for la in loads))
    if len(med) == 2:
        print(f"  POST /timers through Django's handler ÷ timer_arm alone, CPU an arming: "
              f"{total('wsgi') / max(total('direct'), 1e-9):.2f}x ({split('wsgi')} ÷ {split('direct')})")
    for lane in med:
        print(f"  {lane}: CPU an arming {split(lane)} · {med[lane]['statements']:.2f} statements an arming · "
              f"wall {med[lane]['wall']:.2f} ms")


if __name__ == "__main__":
    sys.exit(main())
