"""Feed latency: a subject's calendar.ics polled by 8 and 32 calendar apps, against its floors on the same gunicorn.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/kt_feed_bench .venv/bin/python bench/feed_latency.py \
        [--requests 300] [--clients 8 32] [--workers N] [--repeat 3] [--before DIR] [--no-baseline]

What it prints first (issue 39): the stamped 304's CPU per request and its latency p50/p95/p99 as ratios of two
floors served side by side in the same rounds, each with the CPU split (the gunicorn workers', their PostgreSQL
backends') and the load average:

* **the bare WSGI app** (``bench/wsgi_floor.py``: a 304 with no body, nothing read), under the same
  ``gunicorn.conf.py`` (the same sync workers, access log and token filter): what gunicorn costs a request
  whatever the app. Target: the 304 <= 3x it.
* **Django's own 404**: a GET of a path the project does not route (``/bench-not-routed``), through
  ``keeping_time.wsgi`` on the stamped server itself (Django's handler, middleware, URL resolver, the
  project's 404 view and the ``django.request`` warning it logs). Target: the 304 <= 1.5x it.

The ratios are of CPU per request (what no queueing inflates; the headline, and the exit status) and of each
latency percentile. The absolute p95 targets of issue 26 (304 < 20 ms, cached 200 < 50 ms at 32 clients) are
printed after them as context.

Seeds Acme Robotics as ``loadexample apis_tax --reset`` makes it and ticks its year (the Tax Plan's
subject: the 2027 return's clocks, their rungs, the plan's schedules and renewals), issues a feed token,
and serves the app as the README says, ``gunicorn keeping_time.wsgi`` in the project's folder (so
gunicorn.conf.py: 2 x cores + 1 sync workers, unless ``--workers`` sets WEB_CONCURRENCY), on free local
ports (GUNICORN_BIND), from the same database:

* stamped: the feed as it is (KT_FEED_STAMP on): a poll is the probe's one statement (the token's lookup
  and the change stamp), a 304, or a 200 from each worker's cache at an unchanged stamp; and Django's 404;
* floor: ``gunicorn bench.wsgi_floor:application``, the same configuration;
* baseline: KT_FEED_STAMP=0, the feed as it was: every request builds the calendar and hashes the body to
  compare the ETag (``--no-baseline`` leaves it out: it costs about 60 ms of CPU a request);
* before (``--before DIR``): the stamped feed served from another checkout's code, e.g. a worktree at the
  commit before a change (``git worktree add --detach DIR <commit>``), for a before/after in the same rounds.

For each client count, server and path, that many threads (one http.client connection per request:
gunicorn's sync workers close after each response whatever the client asks, so a keep-alive client would
change nothing here) send ``--requests`` GETs in all: the 200 path without a validator, the 304 path with
If-None-Match set to the feed's ETag, the floor's 304, Django's 404. The client's own CPU is printed ("bench
ms/req", about 0.5 ms): it shares the two cores with the servers, so it is part of the queue, not of the
server's CPU figure. Each response is verified (status, the same body from every server, an empty 304, the
same 404 page). Warm-up requests (not measured) come first. Each round runs the lanes in turn; the figures are
medians over ``--repeat`` rounds. On a shared 2-core machine the clients' queue is most of a p95: with C
clients on K cores each request waits about C x (CPU per request) / K.

Exit status: 0 when both ratio targets are met (at 32 clients, or the most asked), 1 when not, 2 when not on
PostgreSQL, 3 when a check fails.
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
import tempfile
import threading
import time
from io import StringIO
from pathlib import Path

from bench_django import setup_django

ROOT = Path(__file__).resolve().parent.parent
TARGET_304_P95_MS = 20.0
TARGET_200_P95_MS = 50.0
TARGET_CLIENTS = 32
TARGET_VS_FLOOR = 3.0  # issue 39: a stamped 304's CPU a request <= 3x a bare WSGI app's on the same gunicorn
TARGET_VS_404 = 1.5  # ... and <= 1.5x Django's own 404's
NOT_ROUTED = "/bench-not-routed"  # a path no URL pattern of the project matches: Django's own 404


def seed() -> tuple[str, str]:
    """Acme on its test clock with its year ticked; the subject's id and a fresh feed token."""
    from django.core.management import call_command
    from django.db import connection

    from calendars.feed_tokens import subject_feed_rotate
    from calendars.models import Subject

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
    """The README's command, ``gunicorn keeping_time.wsgi`` in the project's folder (``root``: this checkout,
    or another one's code for a before/after), on a free local port, in its own process group. ``app``: another
    WSGI app under the same gunicorn.conf.py (the floor)."""

    def __init__(self, name: str, env: dict[str, str], workers: int | None, root: Path = ROOT,
                 app: str = "keeping_time.wsgi"):
        self.name, self.port = name, free_port()
        env = {**env, "GUNICORN_BIND": f"127.0.0.1:{self.port}", "PYTHONPATH": str(root)}
        if workers:
            env["WEB_CONCURRENCY"] = str(workers)
        # Its output goes to a file, never a pipe nobody reads: a server that logs each request would fill the
        # pipe and block its workers mid-measurement.
        self.log = tempfile.TemporaryFile()
        self.proc = subprocess.Popen(
            [str(Path(sys.executable).with_name("gunicorn")), app],
            cwd=root, env=env, stdout=self.log, stderr=subprocess.STDOUT, start_new_session=True)

    def said(self) -> str:
        self.log.seek(0)
        return self.log.read().decode(errors="replace")[-2000:]

    def workers(self) -> list[int]:
        try:
            return [int(p) for p in Path(f"/proc/{self.proc.pid}/task/{self.proc.pid}/children").read_text().split()]
        except OSError:
            return []

    def wait(self, path: str, timeout: float = 60.0, ok: int = 200) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise SystemExit(f"{self.name}: gunicorn exited: {self.said()}")
            try:
                status, _, _ = request(self.port, path)
                if status == ok:
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
            ok = got == status and content == (b"" if status == 304 else body)
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


def cpu_seconds(pids: list[int]) -> float:
    """user + sys CPU of these processes so far (from /proc; a process gone counts nothing)."""
    total = 0
    for pid in pids:
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        total += int(fields[11]) + int(fields[12])
    return total / os.sysconf("SC_CLK_TCK")


def backends(dbname: str) -> list[int]:
    """The PostgreSQL backends serving the bench's database (the servers' workers: the bench's own
    connection is closed while it measures)."""
    out = subprocess.run(["psql", "-U", "postgres", "-h", "127.0.0.1", "-d", dbname, "-Atc",
                          "SELECT pid FROM pg_stat_activity WHERE datname = current_database() "
                          "AND pid <> pg_backend_pid()"], capture_output=True, text=True)
    return [int(x) for x in out.stdout.split()] if out.returncode == 0 else []


class Lane:
    """One kind of request to one server: what is sent, what must come back."""

    def __init__(self, server: str, kind: str, path: str, headers: dict[str, str], status: int):
        self.server, self.kind, self.path, self.headers, self.status = server, kind, path, headers, status
        self.body = b""  # what every response must carry (a 304's is empty): set once the servers answer


def lanes_of(servers: list[str], path: str) -> list[Lane]:
    """Each feed server's 200 and 304, the floor's 304, and Django's 404 on the stamped server."""
    lanes: list[Lane] = []
    for name in servers:
        if name == "floor":
            lanes.append(Lane(name, "304", path, {}, 304))
            continue
        lanes += [Lane(name, "200", path, {}, 200), Lane(name, "304", path, {}, 304)]
        if name == "stamped":
            lanes.append(Lane(name, "404", NOT_ROUTED, {}, 404))
    return lanes


def commit() -> str:
    return subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True,
                          text=True).stdout.strip() or "?"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--requests", type=int, default=300, help="GETs per path per round")
    parser.add_argument("--clients", type=int, nargs="+", default=[8, TARGET_CLIENTS])
    parser.add_argument("--workers", type=int, default=None,
                        help="gunicorn sync workers per server (default: gunicorn.conf.py's, 2 x cores + 1)")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--before", type=Path, default=None, metavar="DIR",
                        help="also serve another checkout's code (a worktree at an older commit), stamped, as "
                             "server 'before', in the same rounds")
    parser.add_argument("--no-baseline", action="store_true",
                        help="leave out the server that builds every request (about 60 ms of CPU each)")
    args = parser.parse_args()

    setup_django()
    from django.conf import settings
    from django.db import connection

    if connection.vendor != "postgresql":
        print("feed_latency: needs PostgreSQL (DATABASE_URL=postgres://…)", file=sys.stderr)
        return 2
    subject_id, token = seed()
    dbname = connection.settings_dict["NAME"]
    connection.close()
    path = f"/subjects/{subject_id}/calendar.ics?token={token}"

    url = os.environ["DATABASE_URL"]
    # Both servers keep their database connections between requests, as the README's DATABASE_URL does.
    url += ("&" if "?" in url else "?") + "conn_max_age=600" if "conn_max_age" not in url else ""
    base_env = {**os.environ, "DATABASE_URL": url, "DJANGO_SETTINGS_MODULE": "keeping_time.settings",
                "SECRET_KEY": settings.SECRET_KEY, "DEBUG": "0", "PYTHONPATH": str(ROOT)}
    servers = {}
    if not args.no_baseline:
        servers["baseline"] = Server("baseline", {**base_env, "KT_FEED_STAMP": "0"}, args.workers)
    if args.before:
        servers["before"] = Server("before", {**base_env, "KT_FEED_STAMP": "1"}, args.workers,
                                   args.before.resolve())
    servers["stamped"] = Server("stamped", {**base_env, "KT_FEED_STAMP": "1"}, args.workers)
    # The floor: the same gunicorn.conf.py (it is read from the project's folder), a WSGI app that does nothing.
    servers["floor"] = Server("floor", base_env, args.workers, app="bench.wsgi_floor:application")
    lanes = lanes_of(list(servers), path)
    # (clients, server, path) -> per round (p50, p95, p99, workers' CPU ms, backends' CPU ms, client CPU ms) a request
    results: dict[tuple[int, str, str], list[tuple[float, ...]]] = {}
    loads = [os.getloadavg()]
    try:
        for name, s in servers.items():
            s.wait(path, ok=304 if name == "floor" else 200)
        tags, bodies = {}, {}
        for name, s in servers.items():
            if name != "floor":
                _, headers, bodies[name] = request(s.port, path)
                tags[name] = headers["etag"]
        body = bodies["stamped"]
        if any(b != body for b in bodies.values()):
            raise Failed("the servers' bodies differ")
        status, _, page = request(servers["stamped"].port, NOT_ROUTED)
        if status != 404:
            raise Failed(f"{NOT_ROUTED} answered {status}, not Django's 404")
        for lane in lanes:
            if lane.kind == "304" and lane.server != "floor":
                lane.headers = {"If-None-Match": tags[lane.server]}
            lane.body = {"200": body, "404": page}.get(lane.kind, b"")
        workers = len(servers["stamped"].workers())
        header = (f"subject {subject_id}: {len(body):,} bytes, {body.count(b'BEGIN:VEVENT')} events; "
                  f"{args.requests} GETs per path per round from {', '.join(map(str, args.clients))} clients; "
                  f"`gunicorn keeping_time.wsgi`, {workers} sync workers per server; {args.repeat} "
                  f"round{'s' if args.repeat != 1 else ''}")
        for lane in lanes:  # warm-up: every worker's connection, imports and cache
            load(servers[lane.server].port, lane.path, n=workers * 10, clients=max(args.clients),
                 headers=lane.headers, status=lane.status, body=lane.body)
        for _ in range(args.repeat):
            for clients in args.clients:
                for lane in lanes:
                    s = servers[lane.server]
                    procs, dbs = s.workers(), backends(dbname)
                    procs0, db0, client0 = cpu_seconds(procs), cpu_seconds(dbs), time.process_time()
                    lat = load(s.port, lane.path, n=args.requests, clients=clients, headers=lane.headers,
                               status=lane.status, body=lane.body)
                    per = [1000 * (cpu_seconds(procs) - procs0) / args.requests,
                           1000 * (cpu_seconds(dbs) - db0) / args.requests,
                           1000 * (time.process_time() - client0) / args.requests]
                    results.setdefault((clients, lane.server, lane.kind), []).append(
                        (pct(lat, 50), pct(lat, 95), pct(lat, 99), *per))
            loads.append(os.getloadavg())
    except Failed as exc:
        print(f"feed_latency: check failed: {exc}", file=sys.stderr)
        return 3
    finally:
        for s in servers.values():
            s.stop()

    return report(results, list(servers), args, loads, workers, header)


def report(results: dict[tuple[int, str, str], list[tuple[float, ...]]], servers: list[str], args: argparse.Namespace,
           loads: list[tuple[float, float, float]], workers: int, header: str) -> int:
    """The ratios first (the stamped 304 against its floors), then every lane's figures; the exit status."""

    def med(clients: int, name: str, kind: str, i: int) -> float:
        return statistics.median(r[i] for r in results[(clients, name, kind)])

    def cpu(clients: int, name: str, kind: str) -> float:
        return med(clients, name, kind, 3) + med(clients, name, kind, 4)

    def split(clients: int, name: str, kind: str) -> str:
        return (f"{cpu(clients, name, kind):.2f} ms (workers {med(clients, name, kind, 3):.2f} + backends "
                f"{med(clients, name, kind, 4):.2f})")

    def met(ratio: float, target: float) -> str:
        return f"target <= {target:g}x: {'met' if ratio <= target else 'NOT met'}"

    target = TARGET_CLIENTS if TARGET_CLIENTS in args.clients else max(args.clients)
    verdicts: dict[str, float] = {}
    # First: the stamped 304 against its two floors (issue 39), CPU split and the load.
    print(f"feed · the stamped 304 against its floors, side by side on the same gunicorn.conf.py ({workers} sync "
          f"workers each), medians of {args.repeat} round{'s' if args.repeat != 1 else ''} of {args.requests} GETs; "
          f"CPU a request = the gunicorn workers' + their PostgreSQL backends' (/proc) · commit {commit()}")
    for clients in args.clients:
        mine = cpu(clients, "stamped", "304")
        vs_floor = mine / max(cpu(clients, "floor", "304"), 1e-9)
        vs_404 = mine / max(cpu(clients, "stamped", "404"), 1e-9)
        if clients == target:
            verdicts = {"floor": vs_floor, "404": vs_404}
        print(f"  {clients} clients · CPU a request: the 304 {split(clients, 'stamped', '304')}"
              f"\n      = {vs_floor:.2f}x the bare WSGI app's {split(clients, 'floor', '304')} "
              f"[{met(vs_floor, TARGET_VS_FLOOR)}]"
              f"\n      = {vs_404:.2f}x Django's 404's {split(clients, 'stamped', '404')} "
              f"[{met(vs_404, TARGET_VS_404)}]")
        lat = [med(clients, "stamped", "304", i) for i in range(3)]
        print(f"    latency p50/p95/p99: the 304 {'/'.join(f'{x:.1f}' for x in lat)} ms = "
              + "/".join(f"{x / med(clients, 'floor', '304', i):.2f}" for i, x in enumerate(lat))
              + "x the bare WSGI app's, "
              + "/".join(f"{x / med(clients, 'stamped', '404', i):.2f}" for i, x in enumerate(lat))
              + "x Django's 404's")
    print("  load average (1, 5, 15 min) at the start and after each round: "
          + "; ".join(" ".join(f"{x:.1f}" for x in la) for la in loads))
    print(f"  machine: {platform.platform()}, {os.cpu_count()} CPUs, python {platform.python_version()}")

    print(f"\n{header}")
    print(f"\n{'clients':<9}{'path':<6}{'server':<10}{'p50 ms':>9}{'p95 ms':>9}{'p99 ms':>9}"
          f"{'CPU ms/req':>12}{'workers':>9}{'backends':>10}{'bench ms/req':>14}   rounds (p95)")
    for clients in args.clients:
        for kind in ("304", "200", "404"):
            for name in servers:
                if (clients, name, kind) not in results:
                    continue
                rounds = ", ".join(f"{r[1]:.1f}" for r in results[(clients, name, kind)])
                print(f"{clients:<9}{kind:<6}{name:<10}" + "".join(
                    f"{med(clients, name, kind, i):>9.1f}" for i in range(3))
                    + f"{cpu(clients, name, kind):>12.2f}{med(clients, name, kind, 3):>9.2f}"
                    + f"{med(clients, name, kind, 4):>10.2f}{med(clients, name, kind, 5):>14.2f}   {rounds}")
    print()
    for clients in args.clients:
        for kind in ("304", "200"):
            for other in (n for n in servers if n not in ("stamped", "floor")):
                print(f"{clients} clients, {kind}: {other}/stamped p50 "
                      f"{med(clients, other, kind, 0) / med(clients, 'stamped', kind, 0):.2f}x, p95 "
                      f"{med(clients, other, kind, 1) / med(clients, 'stamped', kind, 1):.2f}x, server CPU "
                      f"{cpu(clients, other, kind) / max(cpu(clients, 'stamped', kind), 1e-9):.2f}x")
    p95_304, p95_200 = med(target, "stamped", "304", 1), med(target, "stamped", "200", 1)
    print(f"context (issue 26's absolute targets, not issue 39's) at {target} clients: 304 p95 {p95_304:.1f} ms "
          f"(< {TARGET_304_P95_MS:.0f} ms: {'met' if p95_304 < TARGET_304_P95_MS else 'not met'}); cached 200 p95 "
          f"{p95_200:.1f} ms (< {TARGET_200_P95_MS:.0f} ms: {'met' if p95_200 < TARGET_200_P95_MS else 'not met'})")
    ok = verdicts["floor"] <= TARGET_VS_FLOOR and verdicts["404"] <= TARGET_VS_404
    print(f"\nverdict at {target} clients: the 304 {verdicts['floor']:.2f}x the bare WSGI app "
          f"({met(verdicts['floor'], TARGET_VS_FLOOR)}), {verdicts['404']:.2f}x Django's 404 "
          f"({met(verdicts['404'], TARGET_VS_404)})")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
