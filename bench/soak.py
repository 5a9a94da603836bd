"""A soak: the live worker under a steady stream, for a set time, watched each minute.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/kt_soak .venv/bin/python bench/soak.py \
        [--minutes 20] [--rate 200] [--clients 8] [--delay 2]

What runs, each its own process, as in production:

* the API: gunicorn (gunicorn.conf.py, two sync workers) on a free local port;
* the live worker: ``manage.py tick --forever`` (it fires the timers and sends the webhook deliveries);
* the far end: an HTTP server in this process that counts every delivery it receives, by event id;
* the stream: ``--clients`` threads arming ``--rate`` timers a second in all over the API
  (``POST /timers`` with a live key, each owed ``--delay`` seconds after it is armed, handler noop), the
  brand's one webhook endpoint hearing ``timer.fired``: every timer fired is one delivery to the far end.

Each minute it prints: timers armed and fired, deliveries received, the worker's and the API's RSS, the
database's open connections, the outbox depth (deliveries owed), and late_by p50/p99 of the minute's fires.
At the end the stream stops and the soak waits (up to two minutes) until nothing is owed: every timer
fired, every delivery received. It prints the drift (last minute's RSS and connections against the
second minute's) and exits 0 when nothing is owed and nothing arrived twice, 1 when something is, 2 when
the database is not PostgreSQL.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import platform
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from datetime import UTC, datetime, timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from bench_django import setup_django

ROOT = Path(__file__).resolve().parent.parent
BRAND = "bench.soak"


class FarEnd:
    """Counts each webhook delivery by its event id (the body's ``id``): at the far end, not from our rows."""

    def __init__(self) -> None:
        self.received: Counter[str] = Counter()
        self.lock = threading.Lock()
        far = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args) -> None:
                pass

            def do_POST(self) -> None:  # noqa: N802 - http.server's name
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])) or b"{}")
                with far.lock:
                    far.received[body.get("id", "")] += 1
                self.send_response(200)
                self.send_header("Content-Length", "0")
                self.end_headers()

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/hooks"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def counts(self) -> tuple[int, int]:
        with self.lock:
            return len(self.received), sum(1 for n in self.received.values() if n > 1)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def rss_kb(pid: int) -> int:
    """Resident memory of a process and its children (gunicorn's workers), from /proc."""
    total = 0
    pids = [pid]
    try:
        pids += [int(p) for p in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
    except OSError:
        pass
    for p in pids:
        try:
            for line in Path(f"/proc/{p}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    total += int(line.split()[1])
        except OSError:
            pass
    return total


class Stream:
    """``clients`` threads arming ``rate`` timers a second in all, each over its own kept-alive connection."""

    def __init__(self, port: int, key: str, *, rate: float, clients: int, delay: float):
        self.port, self.key, self.rate, self.clients, self.delay = port, key, rate, clients, delay
        self.stop = threading.Event()
        self.armed = 0
        self.errors: Counter[str] = Counter()
        self.lock = threading.Lock()
        self.threads = [threading.Thread(target=self._run, args=(i,), daemon=True) for i in range(clients)]

    def start(self) -> None:
        for t in self.threads:
            t.start()

    def _run(self, n: int) -> None:
        from timers.timeutil import iso_z

        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
        period = self.clients / self.rate  # each client's share of the rate
        next_at = time.monotonic() + n * period / self.clients
        i = 0
        while not self.stop.is_set():
            now = time.monotonic()
            if now < next_at:
                time.sleep(next_at - now)
            next_at += period
            owed = datetime.now(UTC) + timedelta(seconds=self.delay)  # the wall's time, as a client's
            body = json.dumps({"key": f"job_soak{n}:task:tick:{i}", "owed_at": iso_z(owed), "handler": "noop"})
            i += 1
            try:
                conn.request("POST", "/timers", body=body, headers={
                    "Authorization": f"Bearer {self.key}", "Content-Type": "application/json"})
                resp = conn.getresponse()
                resp.read()
                if resp.status in (200, 201):
                    with self.lock:
                        self.armed += 1
                else:
                    with self.lock:
                        self.errors[str(resp.status)] += 1
            except (OSError, http.client.HTTPException) as exc:
                with self.lock:
                    self.errors[type(exc).__name__] += 1
                conn.close()
                conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
        conn.close()


def minute_row(domain: str, since) -> dict:
    from django.db import connection

    from timers.models import Outbox, Timer

    with connection.cursor() as cur:
        cur.execute(
            "SELECT count(*), percentile_cont(0.5) WITHIN GROUP (ORDER BY extract(epoch FROM late_by)),"
            " percentile_cont(0.99) WITHIN GROUP (ORDER BY extract(epoch FROM late_by))"
            " FROM timers_timer WHERE domain = %s AND status = 'fired' AND fired_at >= %s", [domain, since])
        fired, p50, p99 = cur.fetchone()
        cur.execute("SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()")
        conns = cur.fetchone()[0]
    owed = Outbox.objects.filter(transport="webhook").exclude(status__in=["sent", "failed", "voided"]).count()
    armed = Timer.objects.filter(domain=domain, status="armed").count()
    return {"fired": fired, "p50": p50, "p99": p99, "conns": conns, "outbox": owed, "armed": armed}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--minutes", type=float, default=20)
    parser.add_argument("--rate", type=float, default=200, help="timers armed a second, in all")
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--delay", type=float, default=2, help="seconds from a timer's arming to its owed time")
    args = parser.parse_args()

    far = FarEnd()
    # The far end is on this machine: let deliveries go there (the outside-calls rule refuses loopback).
    os.environ["KT_ALLOW_TARGETS"] = ",".join(filter(None, [os.environ.get("KT_ALLOW_TARGETS"), "127.0.0.1"]))
    setup_django()
    from django.db import connection
    from django.utils import timezone

    from timers.models import ApiKey, Brand, Commit, Event, Outbox, Timer, WebhookEndpoint, live_domain
    from timers.tenants import api_key_create, brand_get_or_create
    from timers.webhooks import endpoint_create

    if connection.vendor != "postgresql":
        print("soak: PostgreSQL only (DATABASE_URL=postgres://…)", file=sys.stderr)
        return 2
    subprocess.run([sys.executable, "manage.py", "migrate", "-v0"], cwd=ROOT, check=True)

    old = Brand.objects.filter(name=BRAND).first()
    if old is not None:  # a previous soak's rows
        domain = live_domain(old.id)
        for model in (Timer, Commit, Event, Outbox):
            model.objects.filter(domain=domain).delete()
        Outbox.objects.filter(domain__in=WebhookEndpoint.objects.filter(brand=old).values("id")).delete()
        WebhookEndpoint.objects.filter(brand=old).delete()
        ApiKey.objects.filter(brand=old).delete()
    brand = brand_get_or_create(name=BRAND)
    domain = live_domain(brand.id)
    _, key = api_key_create(brand=brand, name="soak", live=True)
    endpoint_create(brand=brand, livemode=True, url=far.url, enabled_events=["timer.fired"])

    # The runtime is measured, not the API's rate limit (KT_RATE_LIMIT, 100/s a key by default).
    env = dict(os.environ, PYTHONUNBUFFERED="1", KT_RATE_LIMIT="off")
    port = free_port()
    # Each process's stderr to a file (a pipe nobody reads for 20 minutes would fill and stop the process).
    logs = {name: tempfile.NamedTemporaryFile(prefix=f"soak-{name}-", suffix=".log", delete=False)
            for name in ("api", "worker")}
    # As the README serves it: persistent connections (?conn_max_age=600), not one opened per request.
    url = env.get("DATABASE_URL", "")
    if url and "conn_max_age" not in url:
        url += ("&" if "?" in url else "?") + "conn_max_age=600"
    api = subprocess.Popen([str(Path(sys.executable).with_name("gunicorn"))], cwd=ROOT,
                           env=dict(env, DATABASE_URL=url, GUNICORN_BIND=f"127.0.0.1:{port}", GUNICORN_ACCESSLOG="/dev/null",
                                    WEB_CONCURRENCY="2"), stdout=subprocess.DEVNULL, stderr=logs["api"])
    worker = subprocess.Popen([sys.executable, "manage.py", "tick", "--forever"], cwd=ROOT, env=env,
                              stdout=subprocess.DEVNULL, stderr=logs["worker"])
    deadline = time.monotonic() + 60
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            break
        except OSError:
            if time.monotonic() > deadline or api.poll() is not None:
                print(f"soak: gunicorn did not start: {Path(logs['api'].name).read_text()[-2000:]}", file=sys.stderr)
                return 3

    print(f"soak · {args.minutes:g} min · {args.rate:g} timers/s over {args.clients} clients · owed "
          f"{args.delay:g}s after arming · {os.cpu_count()} CPUs · {platform.processor() or platform.machine()} · "
          f"Python {platform.python_version()}")
    print(f"{'min':>4} {'armed':>8} {'fired':>8} {'received':>9} {'worker RSS':>11} {'API RSS':>9} "
          f"{'conns':>6} {'outbox':>7} {'late p50':>9} {'late p99':>9} errors")
    stream = Stream(port, key, rate=args.rate, clients=args.clients, delay=args.delay)
    stream.start()
    rows = []
    start = time.monotonic()
    try:
        for m in range(1, int(args.minutes) + 1):
            since = timezone.now()
            time.sleep(max(0.0, start + 60 * m - time.monotonic()))
            r = minute_row(domain, since)
            received, twice = far.counts()
            r.update(minute=m, armed_total=stream.armed, received=received, twice=twice,
                     worker_rss=rss_kb(worker.pid), api_rss=rss_kb(api.pid), errors=dict(stream.errors))
            rows.append(r)
            ms = lambda s: f"{s * 1000:.0f} ms" if s is not None else "—"  # noqa: E731
            print(f"{m:>4} {r['armed_total']:>8} {r['fired']:>8} {received:>9} {r['worker_rss'] / 1024:>8.0f} MB "
                  f"{r['api_rss'] / 1024:>6.0f} MB {r['conns']:>6} {r['outbox']:>7} {ms(r['p50']):>9} "
                  f"{ms(r['p99']):>9} {r['errors'] or ''}", flush=True)
            if worker.poll() is not None or api.poll() is not None:
                dead = "worker" if worker.poll() is not None else "api"
                print(f"soak: the {dead} died: {Path(logs[dead].name).read_text()[-1500:]}", file=sys.stderr)
                break
    finally:
        stream.stop.set()
        for t in stream.threads:
            t.join(60)
    # Drain: every timer fired, every delivery received.
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        armed = Timer.objects.filter(domain=domain, status="armed").count()
        owed = Outbox.objects.filter(transport="webhook").exclude(status__in=["sent", "failed", "voided"]).count()
        if not armed and not owed:
            break
        time.sleep(1)
    fired = Timer.objects.filter(domain=domain, status="fired").count()
    received, twice = far.counts()
    for p in (worker, api):
        p.send_signal(signal.SIGTERM)
    for p in (worker, api):
        try:
            p.wait(60)
        except subprocess.TimeoutExpired:
            p.kill()
    armed_left = Timer.objects.filter(domain=domain, status="armed").count()
    owed_left = Outbox.objects.filter(transport="webhook").exclude(status__in=["sent", "failed", "voided"]).count()
    print(f"end · armed {stream.armed} · fired {fired} · received {received} (twice: {twice}) · left armed "
          f"{armed_left} · deliveries owed {owed_left} · API errors {dict(stream.errors) or 'none'}")
    if len(rows) >= 3:
        base, last = rows[1], rows[-1]
        print(f"drift (minute {last['minute']} vs minute 2): worker RSS {last['worker_rss'] / base['worker_rss']:.2f}×,"
              f" API RSS {last['api_rss'] / base['api_rss']:.2f}×, connections {base['conns']} → {last['conns']}")
    ok = armed_left == 0 and owed_left == 0 and twice == 0 and received == fired
    print("verdict:", "nothing owed, nothing twice" if ok else "something is owed or arrived twice")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
