"""What one arming over the API costs, in process: ``POST /timers`` through Django's WSGI handler (as gunicorn
calls it, DEBUG off), no HTTP server, no client threads (issue 26).

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/kt_arm .venv/bin/python bench/arm_cost.py \
        [-n 2000] [--repeat 3] [--profile 30]

Prints, per round, the CPU ms an arming of this process and of its PostgreSQL backend (user+sys from
/proc), the statements an arming sends, and the wall ms. ``--profile N`` prints cProfile's top N functions
(cumulative) for one more round. Rate limits are on (the default 100/s per key is raised so that none is
refused: the throttle's own work is counted). PostgreSQL only.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import statistics
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


def one_round(app, key: str, n: int, tag: str, start_at: int) -> tuple[float, float, float]:
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
    print(f"{tag}: {n} armings · CPU ms an arming: api {api:.2f} + db {db:.2f} = {api + db:.2f} · "
          f"{statements / n:.2f} statements an arming · wall {wall:.2f} ms · load {os.getloadavg()[0]:.2f}",
          flush=True)
    return api, db, statements / n


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("-n", type=int, default=2000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--profile", type=int, default=0, help="print cProfile's top N (cumulative) for a round")
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
    one_round(app, key, 50, "warm-up", 10**7)
    rounds = [one_round(app, key, args.n, f"round {r + 1}", r * args.n) for r in range(args.repeat)]
    api = statistics.median(r[0] for r in rounds)
    db = statistics.median(r[1] for r in rounds)
    print(f"median: CPU ms an arming api {api:.2f} + db {db:.2f} = {api + db:.2f} · "
          f"{rounds[0][2]:.2f} statements an arming", flush=True)
    if args.profile:
        import cProfile
        import pstats

        prof = cProfile.Profile(time.process_time)
        prof.enable()
        one_round(app, key, args.n, "profiled", args.repeat * args.n)
        prof.disable()
        pstats.Stats(prof).sort_stats("cumulative").print_stats(args.profile)
        pstats.Stats(prof).sort_stats("tottime").print_stats(args.profile)
    Timer.objects.filter(domain=live_domain(brand.id)).delete()
    return 0


if __name__ == "__main__":
    sys.exit(main())
