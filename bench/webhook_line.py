"""One webhook endpoint's ordered line against a bare client posting the same bodies to the same far end.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/kt_webhook_line .venv/bin/python bench/webhook_line.py \
        [-n 2000] [--repeat 3] [--client urllib3|http.client] [--count]

What it prints first (issue 39): events/s delivered through one endpoint's ordered line as a share of what a
bare client reaches posting the same bodies, one after another, to the same far end (target >= 50%), with the
CPU split of each (this process; its PostgreSQL backend; the far end) and the load average. Then each lane's
medians, and each round's line (on stderr as it runs).

The far end: schedule_year.py's receiver, an HTTP/1.1 server in a process of its own on 127.0.0.1 that answers
200 and counts the POSTs (a connection kept by the sender is kept there too). Each round runs two lanes over the
same N events:

* **the line**: a test clock with N noop timers (tick_throughput.py's arming) and one enabled endpoint of its
  brand hearing ``timer.fired``; the clock's advance fires them (not timed), which writes N deliveries, outbox
  rows on the endpoint's ordered domain (timers/webhooks.py's fan_out, in the batches' transactions). Timed:
  ``timers.outbox.deliver(<endpoint id>)``, what a worker's sender thread runs for the endpoint, until every
  delivery is sent: the claims of the line's head (200 at most each, under the endpoint's advisory lock), the
  set's reads, each body built from the event and signed, the POST through timers/http.py (urllib3, a kept
  connection), the try's log row and the receipt written right after each send, one after another.
* **the bare client**: the same N bodies (``webhooks.body_of`` of the same events, built before the clock
  starts), POSTed in record order, one after another, over one kept-alive connection (``--client``: urllib3's
  HTTPConnectionPool, the library the line's road out uses, or http.client's HTTPConnection), with the
  headers a delivery carries but its signature; each answer read and checked 200. No database.

Events/s is N over the lane's wall time (the issue's figure); CPU ms an event is read from /proc (user+sys)
for this process, its backend (the line only) and the receiver, and does not move with the load as wall time
does. Lanes alternate within each round; figures are medians over ``--repeat`` rounds. ``--count`` adds two
untimed line rounds: one counts the statements and commits psycopg sends a delivery, one splits a delivery's CPU
(``Parts``: the POST, the signature, the body, the record statement and its backend, the rest).

Exit status: 0 when the line reaches its target, 1 when not, 2 when not on PostgreSQL, 3 when a check fails
(a delivery not sent, or the receiver's count not N).
"""

from __future__ import annotations

import argparse
import http.client
import os
import platform
import statistics
import subprocess
import sys
import time
from pathlib import Path

from bench_django import setup_django

ROOT = Path(__file__).resolve().parent.parent
BRAND = "bench.webhook_line"
TARGET_SHARE = 0.5  # issue 39: the line delivers >= 50% of the events/s a bare client posts


def say(text: str) -> None:
    """A round's line: progress, on stderr (stdout is the report, ratio first)."""
    print(text, file=sys.stderr, flush=True)


def commit() -> str:
    return subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True,
                          text=True).stdout.strip() or "?"


def cpu_now(backend: int | None) -> tuple[float, float]:
    from domain_throughput import cpu_seconds

    return cpu_seconds(backend)


def remove(brand) -> None:
    """The bench's endpoints (their deliveries, their log) and its clocks' rows."""
    from bench import tick_throughput as tt
    from timers.models import Outbox, WebhookEndpoint

    for ep in WebhookEndpoint.objects.filter(brand=brand):
        Outbox.objects.filter(domain=ep.id).delete()
        ep.delete()
    tt.cleanup(brand)


def prepare(brand, receiver, n: int, run: int):
    """A clock whose advance fired N noop timers, and an endpoint owed their N ``timer.fired`` deliveries."""
    from bench import tick_throughput as tt
    from timers.advance import advance
    from timers.models import Event, Outbox
    from timers.webhooks import endpoint_create

    endpoint = endpoint_create(brand=brand, livemode=False, url=receiver.url, enabled_events=["timer.fired"],
                               description=f"webhook_line round {run}")
    clock = tt.new_clock(brand, f"webhook line {run}")
    tt.arm(clock.id, brand.id, n)
    stats = advance(clock.id, tt.T0)
    owed = Outbox.objects.filter(domain=endpoint.id, status="pending").count()
    if stats.fired != n or owed != n:
        raise SystemExit(f"webhook_line: fired {stats.fired}, deliveries owed {owed}, of {n}")
    events = list(Event.objects.filter(domain=clock.id, type="timer.fired").order_by("seq"))
    return endpoint, events


class Parts:
    """Where a delivery's CPU goes (the split round, not timed): this process's CPU inside the POST (timers/http.py's
    send), the signature, the body (the event to JSON), the record statement (the log row and the receipt, its
    commit with it), the claims and the set's reads; and its backend's CPU inside the record statement. The rest
    of the process's is the outbox's loop and the send's own Python; the rest of the backend's, the claims and
    reads. Each part is read with the thread's CPU clock (the backend's from /proc, in clock ticks, summed over N
    statements) around the function that does it."""

    PARTS = ("POST", "signature", "body", "record", "claims and reads")

    def __init__(self, pid: int):
        self.pid = pid
        self.process = dict.fromkeys(self.PARTS, 0.0)
        self.backend = 0.0
        self._undo: list = []

    def _wrap(self, owner, name: str, part: str, backend: bool = False) -> None:
        original = getattr(owner, name)

        def timed(*args, **kwargs):
            pg0 = cpu_now(self.pid)[1] if backend else 0.0
            t0 = time.thread_time()
            try:
                return original(*args, **kwargs)
            finally:
                self.process[part] += time.thread_time() - t0
                if backend:
                    self.backend += cpu_now(self.pid)[1] - pg0

        setattr(owner, name, timed)
        self._undo.append((owner, name, original))

    def __enter__(self) -> Parts:
        from timers import outbox, webhooks
        from timers.sql import webhooks as webhook_sql

        self._wrap(webhooks, "send", "POST")
        self._wrap(webhooks, "sign", "signature")
        self._wrap(webhooks, "body_of", "body")
        self._wrap(webhook_sql, "logged_receipt", "record", backend=True)
        self._wrap(outbox, "_claim", "claims and reads")
        self._wrap(webhooks.WebhookTransport, "prepare", "claims and reads")
        return self

    def __exit__(self, *exc) -> None:
        for owner, name, original in reversed(self._undo):
            setattr(owner, name, original)


def line_round(endpoint, receiver, n: int, tag: str, *, count: bool = False, split: bool = False) -> dict:
    """Timed: the endpoint's ordered line, delivered in this process as a worker's sender does, until nothing is
    owed. ``count``: the statements and commits a delivery sends are counted; ``split``: its CPU is split
    (``Parts``); either costs CPU of its own, so such a round is not one of the timed ones."""
    from domain_throughput import Statements, backend_pid

    from timers import outbox
    from timers.models import Outbox

    got0, far0 = receiver.count(), receiver.cpu()
    pid = backend_pid()
    load = os.getloadavg()[0]
    meter: Statements | Parts | None = Statements() if count else Parts(pid) if split else None
    if meter is not None:
        meter.__enter__()
    try:
        py0, pg0 = cpu_now(pid)
        t = time.perf_counter()
        stats = outbox.DeliverStats()
        while stats.done < n:
            step = outbox.deliver(endpoint.id)
            if not step.done:
                break
            stats += step
        seconds = time.perf_counter() - t
        py1, pg1 = cpu_now(pid)
    finally:
        if meter is not None:
            meter.__exit__(None, None, None)
    far = receiver.cpu() - far0
    received = receiver.count() - got0
    sent = Outbox.objects.filter(domain=endpoint.id, status="sent").count()
    out = {"seconds": seconds, "rate": n / seconds, "process": (py1 - py0) / n * 1000, "db": (pg1 - pg0) / n * 1000,
           "far": far / n * 1000, "ok": sent == n == received, "load": load}
    if isinstance(meter, Statements):
        out.update(statements=meter.total / n, commits=meter.commits / n)
    if isinstance(meter, Parts):
        out["parts"] = {part: cpu / n * 1000 for part, cpu in meter.process.items()}
        out["parts"]["record (backend)"] = meter.backend / n * 1000
    say(f"{tag} · the line: {n} deliveries in {seconds:.2f} s = {n / seconds:,.0f}/s · CPU ms a delivery: process "
        f"{out['process']:.2f} + db {out['db']:.2f}, the far end {out['far']:.2f} · sent {sent}, received {received}"
        + (f" · {out['statements']:.2f} statements + {out['commits']:.2f} commits a delivery" if count else "")
        + f" · load {load:.2f}")
    return out


class BareClient:
    """One kept-alive connection, POSTs one after another: urllib3's HTTPConnectionPool or http.client's."""

    def __init__(self, kind: str, url: str):
        from urllib.parse import urlsplit

        import urllib3

        u = urlsplit(url)
        self.kind, self.path = kind, u.path
        if kind == "urllib3":
            self.pool = urllib3.HTTPConnectionPool(u.hostname, u.port, maxsize=1, retries=False, timeout=10)
        else:
            self.conn = http.client.HTTPConnection(u.hostname, u.port, timeout=10)

    def post(self, body: bytes, headers: dict[str, str]) -> int:
        if self.kind == "urllib3":
            return self.pool.urlopen("POST", self.path, body=body, headers=headers, redirect=False).status
        self.conn.request("POST", self.path, body=body, headers=headers)
        resp = self.conn.getresponse()
        resp.read()
        return resp.status

    def close(self) -> None:
        if self.kind == "urllib3":
            self.pool.close()
        else:
            self.conn.close()


def bare_round(events, receiver, client_kind: str, tag: str) -> dict:
    """Timed: the same bodies POSTed in order over one kept-alive connection, each answer read and checked."""
    from timers.webhooks import USER_AGENT, body_of

    n = len(events)
    sends = [(body_of(e), {"Content-Type": "application/json", "User-Agent": USER_AGENT, "Idempotency-Key": e.id})
             for e in events]
    client = BareClient(client_kind, receiver.url)
    got0, far0 = receiver.count(), receiver.cpu()
    load = os.getloadavg()[0]
    bad = 0
    py0 = time.process_time()
    t = time.perf_counter()
    for body, headers in sends:
        if client.post(body, headers) != 200:
            bad += 1
    seconds = time.perf_counter() - t
    py = time.process_time() - py0
    client.close()
    far = receiver.cpu() - far0
    received = receiver.count() - got0
    out = {"seconds": seconds, "rate": n / seconds, "process": py / n * 1000, "db": 0.0, "far": far / n * 1000,
           "ok": bad == 0 and received == n, "load": load}
    say(f"{tag} · the bare client ({client_kind}): {n} POSTs in {seconds:.2f} s = {n / seconds:,.0f}/s · CPU ms a "
        f"POST: process {out['process']:.2f}, the far end {out['far']:.2f} · received {received}, not 200 {bad} · "
        f"load {load:.2f}")
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("-n", type=int, default=2000, help="events (deliveries) a round")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--client", choices=["urllib3", "http.client"], default="urllib3")
    parser.add_argument("--count", action="store_true",
                        help="two more line rounds, not timed: one counting statements a delivery, one splitting its CPU")
    args = parser.parse_args(argv)
    os.environ.setdefault("KT_ALLOW_TARGETS", "127.0.0.1")  # the receiver is on this machine
    setup_django()
    from django.core.management import call_command
    from django.db import connection
    from schedule_year import Receiver

    from timers import tenants

    if connection.vendor != "postgresql":
        print("webhook_line: PostgreSQL only (set DATABASE_URL)", file=sys.stderr)
        return 2
    call_command("migrate", verbosity=0)
    brand = tenants.brand_get_or_create(name=BRAND)
    remove(brand)
    receiver = Receiver()
    loads = [os.getloadavg()]
    rounds: list[dict] = []
    try:
        extra = ["counted", "split"] if args.count else []
        for r in range(args.repeat + len(extra)):
            kind = extra[r - args.repeat] if r >= args.repeat else ""
            tag = f"{kind} round" if kind else f"round {r + 1}"
            endpoint, events = prepare(brand, receiver, args.n, r)
            line = line_round(endpoint, receiver, args.n, tag, count=kind == "counted", split=kind == "split")
            if kind:
                rounds[-1][kind] = line
            else:
                rounds.append({"line": line, "bare": bare_round(events, receiver, args.client, tag)})
                loads.append(os.getloadavg())
            remove(brand)
    finally:
        receiver.close()
        remove(brand)
    return report(rounds, args, loads)


def report(rounds: list[dict], args: argparse.Namespace, loads: list[tuple[float, ...]]) -> int:
    """The share first (the line's events/s ÷ the bare client's), each round's own, then the CPU split."""

    def med(lane: str, key: str) -> float:
        return statistics.median(r[lane][key] for r in rounds)

    shares = [r["line"]["rate"] / r["bare"]["rate"] for r in rounds]
    share = statistics.median(shares)
    cpu = {lane: med(lane, "process") + med(lane, "db") for lane in ("line", "bare")}
    ok = all(r[lane]["ok"] for r in rounds for lane in ("line", "bare"))
    print(f"webhook_line: the line delivers {share:.0%} of the bare client's events/s [target >= {TARGET_SHARE:.0%}: "
          f"{'met' if share >= TARGET_SHARE else 'NOT met'}] · CPU ms an event {cpu['line']:.2f} (process "
          f"{med('line', 'process'):.2f} + backend {med('line', 'db'):.2f}) against {cpu['bare']:.2f} · load "
          f"{min(la[0] for la in loads):.1f}-{max(la[0] for la in loads):.1f}")
    print(f"webhook_line · one endpoint's ordered line against a bare client ({args.client}, kept alive) posting "
          f"the same bodies to the same far end · N={args.n} events a lane, medians of {len(rounds)} "
          f"round{'s' if len(rounds) != 1 else ''} · commit {commit()}")
    print(f"  events/s delivered: the line {med('line', 'rate'):,.0f} ÷ the bare client {med('bare', 'rate'):,.0f} = "
          f"{share:.0%} [target >= {TARGET_SHARE:.0%}: {'met' if share >= TARGET_SHARE else 'NOT met'}] "
          f"(rounds {', '.join(f'{s:.0%}' for s in shares)})")
    print(f"  CPU ms an event: the line {cpu['line']:.2f} (process {med('line', 'process'):.2f} + backend "
          f"{med('line', 'db'):.2f}) against the bare client {cpu['bare']:.2f} (process) = "
          f"{cpu['line'] / max(cpu['bare'], 1e-9):.2f}x; the far end {med('line', 'far'):.2f} and "
          f"{med('bare', 'far'):.2f}")
    print("  load average (1, 5, 15 min) at the start and after each round: "
          + "; ".join(" ".join(f"{x:.1f}" for x in la) for la in loads))
    print(f"  machine: {platform.machine()} · {os.cpu_count()} CPUs · Python {platform.python_version()}")
    counted = rounds[-1].get("counted")
    if counted is not None:
        print(f"  a delivery sends {counted['statements']:.2f} statements and {counted['commits']:.2f} commits "
              f"(the counted round, not timed)")
    split = rounds[-1].get("split")
    if split is not None:
        parts = split["parts"]
        named = sum(v for k, v in parts.items() if k != "record (backend)")
        print(f"  a delivery's CPU ms, split (the split round, not timed; {split['process'] + split['db']:.2f} in "
              f"all): process {split['process']:.2f} = the POST {parts['POST']:.3f} + the signature "
              f"{parts['signature']:.3f} + the body {parts['body']:.3f} + the record statement {parts['record']:.3f} "
              f"+ the claims and the set's reads {parts['claims and reads']:.3f} + the rest (the outbox's loop, the "
              f"send's own Python) {split['process'] - named:.3f}; backend "
              f"{split['db']:.2f} = the record statement {parts['record (backend)']:.3f} + the rest "
              f"{split['db'] - parts['record (backend)']:.3f}; the far end {split['far']:.2f}")
    for lane, name in (("line", "the line"), ("bare", "the bare client")):
        print(f"{name}: {med(lane, 'seconds'):.2f} s a round · {med(lane, 'rate'):,.0f}/s · CPU ms an event "
              f"process {med(lane, 'process'):.2f} + db {med(lane, 'db'):.2f}, the far end {med(lane, 'far'):.2f}")
    if not ok:
        print("webhook_line: CHECK FAILED: a delivery not sent, a POST not answered 200, or the receiver's count "
              "not N", file=sys.stderr)
        return 3
    return 0 if share >= TARGET_SHARE else 1


if __name__ == "__main__":
    sys.exit(main())
