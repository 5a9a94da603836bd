"""The live worker under load: the API arming over HTTP while 0, 1 or 4 `tick --forever` workers run (issue 26).

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/kt_live .venv/bin/python bench/live.py \
        [--seconds 20] [--rate 500] [--clients 8] [--delay 1] [--repeat 3] [--brands 200] [--skip-brands]

Real processes, as the README serves them: gunicorn (gunicorn.conf.py, ``WEB_CONCURRENCY`` sync workers,
``?conn_max_age=600``) on a free port; ``manage.py tick --forever`` workers; ``--clients`` threads in this
process arming over kept-alive connections (``POST /timers``, a live key, handler noop; soak.py's Stream).

Three measurements, each printed with the load average and CPU seconds (user+sys, from /proc) of the API's
processes, the workers and the database backends of this database:

* **arming with idle workers**: the clients arm as fast as the API answers (closed loop), each timer owed an
  hour ahead, so nothing fires; rounds alternate 0 and 4 workers. Prints armed/s and the ratio 4 vs 0
  (target >= 0.9).
* **live**: ``--rate`` timers/s asked, each owed ``--delay`` s after it is armed, with 1 and then 4 workers;
  after the stream stops the workers drain. Prints armed/s achieved, fires/s, late_by p50/p95/p99 from the
  record (each ``timer.fired`` event's late_by; target p99 < 50 ms).
* **200 brands**: multi_worker.py's rounds (200 brands' timers armed due now, 4 workers vs 1): the fire-rate
  ratio (target >= 3).

Exit status: 0, 2 when not on PostgreSQL, 3 when a check fails (a timer not fired, or fired twice).
"""

from __future__ import annotations

import argparse
import os
import platform
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench_django import setup_django

ROOT = Path(__file__).resolve().parent.parent
BRAND = "bench.live"
TICKS = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pids: list[int]) -> float:
    """user+sys of each process (and, for gunicorn's master, its children), from /proc."""
    total = 0.0
    seen: set[int] = set()
    todo = list(pids)
    while todo:
        pid = todo.pop()
        if pid in seen:
            continue
        seen.add(pid)
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
            total += (int(fields[11]) + int(fields[12])) / TICKS
            todo += [int(p) for p in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
        except (OSError, ValueError, IndexError):
            pass
    return total


def backend_pids() -> list[int]:
    from django.db import connection

    with connection.cursor() as cur:
        cur.execute("SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()")
        return [r[0] for r in cur.fetchall()]


class Procs:
    """The API and the workers, started and stopped; CPU read before and after a measurement."""

    def __init__(self, env: dict) -> None:
        self.env = env
        self.workers: list[subprocess.Popen] = []
        self.log = tempfile.NamedTemporaryFile(prefix="live-", suffix=".log", delete=False)
        self.port = free_port()
        url = env.get("DATABASE_URL", "")
        if "conn_max_age" not in url:
            url += ("&" if "?" in url else "?") + "conn_max_age=600"
        self.api = subprocess.Popen(
            [str(Path(sys.executable).with_name("gunicorn"))], cwd=ROOT, stdout=subprocess.DEVNULL, stderr=self.log,
            env=dict(env, DATABASE_URL=url, GUNICORN_BIND=f"127.0.0.1:{self.port}", GUNICORN_ACCESSLOG="/dev/null",
                     WEB_CONCURRENCY=env.get("WEB_CONCURRENCY", "2")))
        deadline = time.monotonic() + 60
        while True:
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=1).close()
                return
            except OSError:
                if time.monotonic() > deadline or self.api.poll() is not None:
                    raise SystemExit(f"live: gunicorn did not start: {Path(self.log.name).read_text()[-2000:]}") from None
                time.sleep(0.1)

    def start_workers(self, n: int) -> None:
        before = set(backend_pids())
        self.workers = [subprocess.Popen([sys.executable, "manage.py", "tick", "--forever"], cwd=ROOT, env=self.env,
                                         stdout=subprocess.DEVNULL, stderr=self.log) for _ in range(n)]
        # Each set up and connected (its loop's session and its sender's) before the round starts: its start is
        # not the round's CPU. (A worker listens before its first look, so its last query says nothing.)
        deadline = time.monotonic() + 120
        while n and time.monotonic() < deadline and len(set(backend_pids()) - before) < 2 * n:
            time.sleep(0.1)
        time.sleep(0.5 if n else 0)

    def stop_workers(self) -> None:
        for p in self.workers:
            p.send_signal(signal.SIGTERM)
        for p in self.workers:
            try:
                p.wait(60)
            except subprocess.TimeoutExpired:
                p.kill()
        self.workers = []

    def cpu(self) -> dict[str, float]:
        return {"api": cpu_seconds([self.api.pid]), "workers": cpu_seconds([p.pid for p in self.workers]),
                "db": cpu_seconds(backend_pids())}

    def close(self) -> None:
        self.stop_workers()
        self.api.send_signal(signal.SIGTERM)
        try:
            self.api.wait(30)
        except subprocess.TimeoutExpired:
            self.api.kill()


def clear(domain: str) -> None:
    from timers.models import Commit, Event, Outbox, Timer

    for model in (Timer, Commit, Event, Outbox):
        model.objects.filter(domain=domain).delete()


def late_row(domain: str, since) -> tuple[int, float | None, float | None, float | None]:
    from django.db import connection

    with connection.cursor() as cur:
        cur.execute(
            "SELECT count(*), percentile_cont(ARRAY[0.5, 0.95, 0.99]) WITHIN GROUP "
            "(ORDER BY extract(epoch FROM late_by)) FROM timers_event "
            "WHERE domain = %s AND type = 'timer.fired' AND fired_at >= %s", [domain, since])
        n, ps = cur.fetchone()
    return (n, *(ps or [None, None, None]))


def spent(before: dict[str, float], after: dict[str, float]) -> str:
    return " · ".join(f"{k} {after[k] - before[k]:.1f}" for k in after)


def arm_round(procs: Procs, key: str, args, domain: str, workers: int, tag: str) -> float:
    from soak import Stream

    clear(domain)
    procs.start_workers(workers)
    try:
        stream = Stream(procs.port, key, rate=100000, clients=args.clients, delay=args.arm_delay)
        before, load = procs.cpu(), os.getloadavg()[0]
        start = time.monotonic()
        stream.start()
        time.sleep(args.seconds)
        stream.stop.set()
        for t in stream.threads:
            t.join(60)
        elapsed = time.monotonic() - start
        after = procs.cpu()
    finally:
        procs.stop_workers()
    rate = stream.armed / elapsed
    per = sum(after[k] - before[k] for k in after) / max(1, stream.armed) * 1000
    print(f"{tag} · {workers} idle worker{'s' if workers != 1 else ''}: {rate:,.0f} armed/s ({stream.armed} in "
          f"{elapsed:.1f} s, errors {dict(stream.errors) or 'none'}) · CPU s {spent(before, after)} · "
          f"{per:.1f} CPU ms an arming · load {load:.2f}", flush=True)
    return rate


def live_round(procs: Procs, key: str, args, domain: str, workers: int, tag: str) -> dict:
    from django.utils import timezone
    from soak import Stream

    from timers.models import Commit, Timer

    clear(domain)
    procs.start_workers(workers)
    try:
        since = timezone.now()
        stream = Stream(procs.port, key, rate=args.rate, clients=args.clients, delay=args.delay)
        before, load = procs.cpu(), os.getloadavg()[0]
        start = time.monotonic()
        stream.start()
        time.sleep(args.seconds)
        stream.stop.set()
        for t in stream.threads:
            t.join(60)
        armed_for = time.monotonic() - start
        deadline = time.monotonic() + 120
        while Timer.objects.filter(domain=domain, status="armed").exists() and time.monotonic() < deadline:
            time.sleep(0.1)
        elapsed = time.monotonic() - start
        after = procs.cpu()
    finally:
        procs.stop_workers()
    n, p50, p95, p99 = late_row(domain, since)
    commits = Commit.objects.filter(domain=domain).count()
    ok = n == stream.armed == commits
    ms = lambda s: "—" if s is None else f"{s * 1000:.0f} ms"  # noqa: E731
    print(f"{tag} · {workers} worker{'s' if workers != 1 else ''}: asked {args.rate:g}/s, armed {stream.armed / armed_for:,.0f}/s "
          f"· fired {n} ({n / elapsed:,.0f}/s over {elapsed:.1f} s) · late_by p50 {ms(p50)} p95 {ms(p95)} p99 {ms(p99)} "
          f"· CPU s {spent(before, after)} · load {load:.2f}"
          + ("" if ok else f" · CHECK FAILED: armed {stream.armed}, fired {n}, commits {commits}"), flush=True)
    return {"ok": ok, "p99": p99, "armed": stream.armed / armed_for}


def warm_up(port: int, key: str) -> None:
    """A few armings before the first round: gunicorn's workers import lazily, and a first round paid it."""
    import http.client
    import json

    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    for i in range(20):
        conn.request("POST", "/timers", body=json.dumps({"key": f"job_warm:task:tick:{i}", "handler": "noop",
                                                          "owed_at": "2099-01-01T00:00:00Z"}),
                     headers={"Authorization": f"Bearer {key}", "Content-Type": "application/json"})
        conn.getresponse().read()
    conn.close()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=20)
    parser.add_argument("--rate", type=float, default=500, help="live: timers armed a second asked, in all")
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--delay", type=float, default=1, help="live: seconds from arming to owed")
    parser.add_argument("--arm-delay", type=float, default=3600,
                        help="arming with idle workers: seconds from arming to owed (nothing fires meanwhile)")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--workers", type=int, default=4)
    parser.add_argument("--brands", type=int, default=200)
    parser.add_argument("--per-brand", type=int, default=50)
    parser.add_argument("--only", choices=["arm", "live", "brands"], action="append",
                        help="run only these measurements (repeatable); all three by default")
    args = parser.parse_args()
    only = set(args.only or ["arm", "live", "brands"])

    setup_django()
    from django.db import connection

    from timers.models import ApiKey, Brand, live_domain
    from timers.tenants import api_key_create, brand_get_or_create

    if connection.vendor != "postgresql":
        print("live: PostgreSQL only (DATABASE_URL=postgres://…)", file=sys.stderr)
        return 2
    subprocess.run([sys.executable, "manage.py", "migrate", "-v0"], cwd=ROOT, check=True)
    old = Brand.objects.filter(name=BRAND).first()
    if old is not None:
        clear(live_domain(old.id))
        ApiKey.objects.filter(brand=old).delete()
    brand = brand_get_or_create(name=BRAND)
    domain = live_domain(brand.id)
    _, key = api_key_create(brand=brand, name="live", live=True)
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True,
                            text=True).stdout.strip()
    print(f"# live · {platform.node()} · {os.cpu_count()} CPUs · {platform.processor() or platform.machine()} · "
          f"Python {platform.python_version()} · commit {commit} · {args.clients} clients · "
          f"load {' '.join(f'{x:.2f}' for x in os.getloadavg())}", flush=True)

    env = dict(os.environ, PYTHONUNBUFFERED="1", KT_RATE_LIMIT="off")
    failed = False
    procs = Procs(env)
    try:
        warm_up(procs.port, key)
        if "arm" in only:
            rates: dict[int, list[float]] = {0: [], args.workers: []}
            for r in range(args.repeat):
                for w in (0, args.workers):
                    rates[w].append(arm_round(procs, key, args, domain, w, f"arm round {r + 1}"))
            none, many = statistics.median(rates[0]), statistics.median(rates[args.workers])
            print(f"arm median: 0 workers {none:,.0f}/s · {args.workers} idle workers {many:,.0f}/s · "
                  f"ratio {many / none:.2f}× (target >= 0.9)", flush=True)
        if "live" in only:
            p99s: dict[int, list[float]] = {1: [], args.workers: []}
            for r in range(args.repeat):
                for w in (1, args.workers):
                    out = live_round(procs, key, args, domain, w, f"live round {r + 1}")
                    failed = failed or not out["ok"]
                    if out["p99"] is not None:
                        p99s[w].append(out["p99"])
            print("live median p99: " + " · ".join(
                f"{w} worker{'s' if w != 1 else ''} {statistics.median(v) * 1000:.0f} ms" for w, v in p99s.items() if v)
                + " (target < 50 ms)", flush=True)
        clear(domain)
    finally:
        procs.close()
    if "brands" in only:
        import multi_worker

        rows = multi_worker.brands(args.brands)
        rates = {1: [], args.workers: []}
        round_no = 0
        for r in range(args.repeat):
            for w in (1, args.workers):
                round_no += 1
                load = os.getloadavg()[0]
                rate, outs, terms = multi_worker.one_round(rows, args.per_brand, w, round_no)
                rates[w].append(rate)
                print(f"brands round {r + 1} · {w} worker{'s' if w != 1 else ''}: {rate:,.0f} fires/s · fires per "
                      f"worker {' '.join(str(o['fired']) for o in outs)} · {terms} lease terms · load {load:.2f}",
                      flush=True)
        one, many = statistics.median(rates[1]), statistics.median(rates[args.workers])
        print(f"brands median: 1 worker {one:,.0f} fires/s · {args.workers} workers {many:,.0f} fires/s · "
              f"ratio {many / one:.2f}× (target >= 3)", flush=True)
        multi_worker.clear(rows)
    return 3 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
