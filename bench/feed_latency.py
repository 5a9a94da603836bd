"""Feed latency: a subject's calendar.ics under 8 concurrent calendar apps, stamped against built each time.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/kt_feed_bench .venv/bin/python bench/feed_latency.py \
        [--requests 400] [--clients 8] [--workers 4] [--repeat 3]

Seeds Acme Robotics as ``loadexample apis_tax --reset`` makes it and ticks its year (the Tax Plan's
subject: the 2027 return's clocks, their rungs, the plan's schedules and renewals), issues a feed token,
and serves the app with gunicorn (sync workers) on two free local ports, from the same database:

* stamped: the feed as it is (KT_FEED_STAMP on): a conditional request is answered from the change stamp
  without building; a 200 at an unchanged stamp comes from each worker's cache;
* baseline: KT_FEED_STAMP=0, the feed as it was: every request builds the calendar and hashes the body to
  compare the ETag.

For each server and each path, ``--clients`` threads (one http.client connection per request: gunicorn's
sync workers close after each response) send ``--requests`` GETs in all: the 200 path without a
validator, the 304 path with If-None-Match set to the feed's ETag. Each response is verified (status, the
same body on both servers, an empty 304). Warm-up requests (not measured) come first. Rounds alternate
baseline and stamped; the figures are medians over ``--repeat`` rounds. Prints p50/p95/p99 in ms, the
ratios, and a verdict against the targets (stamped p95: 304 < 50 ms, 200 < 150 ms).

Exit status: 0 when both targets are met, 1 when not, 2 when not on PostgreSQL, 3 when a check fails.
"""

from __future__ import annotations

import argparse
import http.client
import os
import platform
import re
import socket
import statistics
import subprocess
import sys
import threading
import time
from io import StringIO
from pathlib import Path

from bench_django import setup_django

ROOT = Path(__file__).resolve().parent.parent
TARGET_304_P95_MS = 50.0
TARGET_200_P95_MS = 150.0


def seed() -> tuple[str, str]:
    """Acme on its test clock with its year ticked; the subject's id and a fresh feed token."""
    from django.core.management import call_command
    from django.db import connection

    from calendars.models import Subject
    from calendars.services import subject_feed_rotate

    out = StringIO()
    call_command("migrate", "--noinput", verbosity=0)
    call_command("loadexample", "apis_tax", "--reset", stdout=out)
    text = out.getvalue()
    clock = re.search(r"^test clock (tc_\S+)", text, re.M).group(1)
    subject_id = re.search(r"^subject (sbj_\S+)", text, re.M).group(1)
    call_command("tick", "1y", "--test-clock", clock, stdout=StringIO())
    token = subject_feed_rotate(subject=Subject.objects.get(pk=subject_id))
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE")  # the planner's statistics, as autovacuum keeps them in production
    return subject_id, token


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Server:
    """gunicorn serving keeping_time.wsgi on a free local port, in its own process group."""

    def __init__(self, name: str, env: dict[str, str], workers: int):
        self.name, self.port = name, free_port()
        self.proc = subprocess.Popen(
            [str(Path(sys.executable).with_name("gunicorn")), "keeping_time.wsgi:application",
             "--bind", f"127.0.0.1:{self.port}", "--workers", str(workers), "--worker-class", "sync",
             "--log-level", "warning"],
            cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True)

    def wait(self, path: str, timeout: float = 60.0) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise SystemExit(f"{self.name}: gunicorn exited: {self.proc.stderr.read().decode()[-2000:]}")
            try:
                status, _, _ = request(self.port, path)
                if status == 200:
                    return
            except OSError:
                pass
            time.sleep(0.2)
        raise SystemExit(f"{self.name}: gunicorn did not answer in {timeout:.0f}s")

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


def request(port: int, path: str, headers: dict[str, str] | None = None) -> tuple[int, dict[str, str], bytes]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    try:
        conn.request("GET", path, headers=headers or {})
        r = conn.getresponse()
        return r.status, {k.lower(): v for k, v in r.getheaders()}, r.read()
    finally:
        conn.close()


class Failed(Exception):
    pass


def load(port: int, path: str, *, n: int, clients: int, headers: dict[str, str], status: int,
         body: bytes | None) -> list[float]:
    """``n`` GETs from ``clients`` threads; each latency in ms, each response checked."""
    latencies: list[float] = []
    errors: list[str] = []
    lock = threading.Lock()
    counter = iter(range(n))

    def client() -> None:
        while True:
            with lock:
                if next(counter, None) is None:
                    return
            t = time.perf_counter()
            try:
                got, _, content = request(port, path, headers)
            except OSError as exc:
                with lock:
                    errors.append(repr(exc))
                continue
            ms = (time.perf_counter() - t) * 1000
            ok = got == status and (content == b"" if status == 304 else content == body)
            with lock:
                latencies.append(ms)
                if not ok:
                    errors.append(f"status {got}, {len(content)} bytes")

    threads = [threading.Thread(target=client) for _ in range(clients)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    if errors:
        raise Failed(f"{len(errors)} bad responses, e.g. {errors[0]}")
    return latencies


def pct(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(p / 100 * len(ordered) + 0.5) - 1))]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--requests", type=int, default=400, help="GETs per path per round")
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--workers", type=int, default=4, help="gunicorn sync workers per server")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()

    setup_django()
    from django.conf import settings
    from django.db import connection

    if connection.vendor != "postgresql":
        print("feed_latency: needs PostgreSQL (DATABASE_URL=postgres://…)", file=sys.stderr)
        return 2
    subject_id, token = seed()
    connection.close()
    path = f"/subjects/{subject_id}/calendar.ics?token={token}"

    url = os.environ["DATABASE_URL"]
    # Both servers keep their database connections between requests, as a production deploy would.
    url += ("&" if "?" in url else "?") + "conn_max_age=600" if "conn_max_age" not in url else ""
    base_env = {**os.environ, "DATABASE_URL": url, "DJANGO_SETTINGS_MODULE": "keeping_time.settings",
                "SECRET_KEY": settings.SECRET_KEY, "DEBUG": "0", "PYTHONPATH": str(ROOT)}
    servers = {
        "baseline": Server("baseline", {**base_env, "KT_FEED_STAMP": "0"}, args.workers),
        "stamped": Server("stamped", {**base_env, "KT_FEED_STAMP": "1"}, args.workers),
    }
    results: dict[tuple[str, str], list[tuple[float, float, float]]] = {}
    try:
        for s in servers.values():
            s.wait(path)
        _, base_headers, body = request(servers["baseline"].port, path)
        _, stamped_headers, stamped_body = request(servers["stamped"].port, path)
        if stamped_body != body:
            raise Failed("the stamped server's body is not the baseline's")
        tags = {"baseline": base_headers["etag"], "stamped": stamped_headers["etag"]}
        print(f"subject {subject_id}: {len(body):,} bytes, {body.count(b'BEGIN:VEVENT')} events; "
              f"{args.requests} GETs per path per round from {args.clients} clients; gunicorn "
              f"{args.workers} sync workers per server; {args.repeat} rounds")
        for s in servers.values():  # warm-up: every worker's connection, imports and cache
            load(s.port, path, n=args.workers * 10, clients=args.clients, headers={}, status=200, body=body)
        for _ in range(args.repeat):
            for name, s in servers.items():
                for kind, headers, status in (("200", {}, 200), ("304", {"If-None-Match": tags[name]}, 304)):
                    lat = load(s.port, path, n=args.requests, clients=args.clients, headers=headers,
                               status=status, body=body)
                    results.setdefault((name, kind), []).append((pct(lat, 50), pct(lat, 95), pct(lat, 99)))
    except Failed as exc:
        print(f"feed_latency: check failed: {exc}", file=sys.stderr)
        return 3
    finally:
        for s in servers.values():
            s.stop()

    def med(name: str, kind: str, i: int) -> float:
        return statistics.median(r[i] for r in results[(name, kind)])

    print(f"\n{'path':<6}{'server':<10}{'p50 ms':>9}{'p95 ms':>9}{'p99 ms':>9}   rounds (p95)")
    for kind in ("200", "304"):
        for name in servers:
            rounds = ", ".join(f"{r[1]:.1f}" for r in results[(name, kind)])
            print(f"{kind:<6}{name:<10}{med(name, kind, 0):>9.1f}{med(name, kind, 1):>9.1f}"
                  f"{med(name, kind, 2):>9.1f}   {rounds}")
    print()
    for kind in ("200", "304"):
        print(f"{kind}: baseline/stamped p50 {med('baseline', kind, 0) / med('stamped', kind, 0):.1f}x, "
              f"p95 {med('baseline', kind, 1) / med('stamped', kind, 1):.1f}x")
    ok_304 = med("stamped", "304", 1) < TARGET_304_P95_MS
    ok_200 = med("stamped", "200", 1) < TARGET_200_P95_MS
    print(f"\nverdict: 304 p95 {med('stamped', '304', 1):.1f} ms < {TARGET_304_P95_MS:.0f} ms: "
          f"{'met' if ok_304 else 'NOT met'}; 200 p95 {med('stamped', '200', 1):.1f} ms < "
          f"{TARGET_200_P95_MS:.0f} ms: {'met' if ok_200 else 'NOT met'}")
    print(f"machine: {platform.platform()}, {os.cpu_count()} CPUs, python {platform.python_version()}")
    return 0 if ok_304 and ok_200 else 1


if __name__ == "__main__":
    sys.exit(main())
