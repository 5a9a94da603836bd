"""The live worker under load: the API arming over HTTP while 0, 1 or 4 `tick --forever` workers run (issue 26).

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/kt_live .venv/bin/python bench/live.py \
        [--seconds 20] [--rate 100] [--clients 8] [--delay 1] [--repeat 3] [--brands 200] [--only arm|live|brands]

Real processes, as the README serves them: gunicorn (gunicorn.conf.py, ``WEB_CONCURRENCY`` sync workers,
``?conn_max_age=600``) on a free port; ``manage.py tick --forever`` workers; ``--clients`` threads in this
process arming over kept-alive connections (``POST /timers``, a live key, handler noop; soak.py's Stream).

The report (stdout) starts with the ratios against the baselines run side by side in the same rounds (issue
39), each with the CPU split (user+sys from /proc) and the load average; each round's line is progress, on
stderr.

* **live**: ``--rate`` timers/s asked, each owed ``--delay`` s after it is armed, with 1 and then 4 workers;
  after the stream stops the workers drain. Per round: armed/s achieved, fires/s, late_by p50/p95/p99 from the
  record (each ``timer.fired`` event's late_by), CPU s of the API's processes, the workers and this database's
  backends. Its baseline, **the bare wake**, runs first in each round for as long, at the same rate: a bare
  psycopg ``LISTEN`` in a process of its own, and this process sending ``pg_notify`` at each intended instant
  (``--rate`` a second); the wake's latency is the listener's wall clock when the note reaches it minus the
  instant the note was meant for (late_by's way: the time a timer was owed to the time it fired). CPU s of the
  listener, the sender and their two backends. Ratios first: late_by p99 ÷ the wake's p99 with 1 and with 4
  workers (target <= 3), and 4 ÷ 1 workers' p99 (target <= 1.1); medians of the rounds' ratios.
* **arm**: the clients arm as fast as the API answers (closed loop), each timer owed an hour ahead, so nothing
  fires; rounds alternate 0 and 4 idle workers, and after each 0-worker round ``bench/arm_cost.py --lane both``
  arms as many timers in a process of its own, twice: by ``timers.arming.timer_arm`` in a loop (no HTTP, no
  Django handler: "in process") and as ``POST /timers`` through Django's WSGI handler called directly. Ratios
  first: CPU ms an arming over the API (gunicorn's processes + the backends, 0 workers) ÷ in process (the
  process + its backend), target <= 1.25, and beside it ÷ the handler in process (what HTTP and gunicorn add);
  armed/s with 4 idle workers ÷ none, target >= 0.9. Its floor runs in each round too: the same clients posting
  the same bodies to a bare WSGI app (``bench/wsgi_floor.py``: reads the body, answers 201) under the same
  gunicorn.conf.py and workers; the handler in process plus that is the least an arming over the API can cost
  with Django's handler as it is, printed as a ratio to both "in process" figures.
* **brands**: multi_worker.py's rounds (200 brands' timers armed due now, 4 workers vs 1): the fire-rate
  ratio (target >= 3).

Exit status: 0, 2 when not on PostgreSQL, 3 when a check fails (a timer not fired, or fired twice, or a wake
not heard).
"""

from __future__ import annotations

import argparse
import json
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
TARGET_VS_WAKE = 3.0  # issue 39: late_by p99 <= 3x a bare LISTEN/NOTIFY wake's p99, same run
TARGET_4_VS_1 = 1.1  # ... and 4 workers' p99 <= 1.1x one worker's
TARGET_API_VS_PROCESS = 1.25  # arming over the API <= 1.25x in process, CPU an arming
TARGET_IDLE = 0.9  # armed/s with 4 idle workers >= 0.9x none
WAKE_CHANNEL = "bench_live_wake"

# The bare wake's listener: a process of its own, one psycopg session LISTENing, nothing else. It prints its
# backend's pid and its CPU so far once listening, then, after "stop", each wake's lateness and its CPU.
LISTENER = r"""
import json, resource, sys, time
import psycopg

def cpu():
    ru = resource.getrusage(resource.RUSAGE_SELF)
    return ru.ru_utime + ru.ru_stime

conn = psycopg.connect(sys.argv[1], autocommit=True)
conn.execute("LISTEN %s" % sys.argv[2])
print(json.dumps({"backend": conn.info.backend_pid, "cpu": cpu()}), flush=True)
late = []
for note in conn.notifies():
    now = time.time()
    if note.payload == "stop":
        break
    late.append(now - float(note.payload))
print(json.dumps({"late": late, "cpu": cpu()}), flush=True)
"""


def say(text: str) -> None:
    """A round's line: progress, on stderr (stdout is the report, ratios first)."""
    print(text, file=sys.stderr, flush=True)


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

    def __init__(self, env: dict, app: str | None = None) -> None:
        """``app``: another WSGI app under the same gunicorn.conf.py (the arming's floor, bench/wsgi_floor.py)."""
        self.env = env
        self.workers: list[subprocess.Popen] = []
        self.log = tempfile.NamedTemporaryFile(prefix="live-", suffix=".log", delete=False)
        self.port = free_port()
        url = env.get("DATABASE_URL", "")
        if "conn_max_age" not in url:
            url += ("&" if "?" in url else "?") + "conn_max_age=600"
        self.api = subprocess.Popen(
            [str(Path(sys.executable).with_name("gunicorn")), *([app] if app else [])], cwd=ROOT,
            stdout=subprocess.DEVNULL, stderr=self.log,
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
    from django.db import connection

    from timers.models import Commit, Event, Outbox, Timer

    for model in (Timer, Commit, Event, Outbox):
        model.objects.filter(domain=domain).delete()
    # A fire moves its timer out of the armed table, and the entry it leaves in the tick-order index is walked by
    # every later probe of the domain's next owed timer (the worker's look and its batch's read, which start at the
    # domain's earliest owed_at) until a VACUUM removes it. Autovacuum is off on this machine's PostgreSQL
    # (conf.d/90-ci.conf): without this, each round paid for every fire of the rounds and runs before it (a probe
    # of the bench's domain read 1,222 pages, 3.9 ms, after ~120k fires), not a database as autovacuum keeps it.
    with connection.cursor() as cur:
        for table in (Timer, Commit, Event, Outbox):
            cur.execute(f'VACUUM "{table._meta.db_table}"')


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


def run_stream(procs: Procs, key: str, args, *, rate: float, delay: float) -> tuple:
    """``--clients`` threads arming over ``procs``' server at ``rate`` a second in all (100000: as fast as it
    answers), each timer owed ``delay`` s after, for ``--seconds``: (the stream, CPU before, its start, load)."""
    from soak import Stream

    stream = Stream(procs.port, key, rate=rate, clients=args.clients, delay=delay)
    before, load = procs.cpu(), os.getloadavg()[0]
    start = time.monotonic()
    stream.start()
    time.sleep(args.seconds)
    stream.stop.set()
    for t in stream.threads:
        t.join(60)
    return stream, before, start, load


def closed_loop(procs: Procs, key: str, args) -> tuple:
    """Armings as fast as ``procs``' server answers them, for ``--seconds``: (the stream, CPU before, CPU after,
    seconds, load)."""
    stream, before, start, load = run_stream(procs, key, args, rate=100000, delay=args.arm_delay)
    elapsed = time.monotonic() - start
    return stream, before, procs.cpu(), elapsed, load


def arm_round(procs: Procs, key: str, args, domain: str, workers: int, tag: str) -> dict:
    clear(domain)
    procs.start_workers(workers)
    try:
        stream, before, after, elapsed, load = closed_loop(procs, key, args)
    finally:
        procs.stop_workers()
    rate = stream.armed / elapsed
    cpu = {k: after[k] - before[k] for k in after}
    per = sum(cpu.values()) / max(1, stream.armed) * 1000
    say(f"{tag} · {workers} idle worker{'s' if workers != 1 else ''}: {rate:,.0f} armed/s ({stream.armed} in "
        f"{elapsed:.1f} s, errors {dict(stream.errors) or 'none'}) · CPU s {spent(before, after)} · "
        f"{per:.2f} CPU ms an arming · load {load:.2f}")
    return {"rate": rate, "armed": stream.armed, "cpu": cpu, "per": per, "load": load}


def floor_round(env: dict, key: str, args, tag: str) -> dict:
    """The same clients posting the same bodies as fast as it answers to a bare WSGI app (bench/wsgi_floor.py:
    reads the body, answers 201) under the same gunicorn.conf.py and workers: what gunicorn and HTTP cost a
    POST whatever the app. CPU ms a request of its processes."""
    floor = Procs(env, app="bench.wsgi_floor:application")
    try:
        stream, before, after, elapsed, load = closed_loop(floor, key, args)
    finally:
        floor.close()
    cpu = after["api"] - before["api"]
    per = cpu / max(1, stream.armed) * 1000
    say(f"{tag} · the bare POST app: {stream.armed / elapsed:,.0f} answered/s ({stream.armed} in {elapsed:.1f} s, "
        f"errors {dict(stream.errors) or 'none'}) · CPU s gunicorn {cpu:.1f} · {per:.2f} CPU ms a request · "
        f"load {load:.2f}")
    return {"per": per, "n": stream.armed, "load": load}


def in_process_round(env: dict, n: int, tag: str) -> dict | None:
    """``n`` armings in a process of its own (bench/arm_cost.py --lane both): by timers.arming.timer_arm alone
    (``direct``: no HTTP, no Django handler), and as POST /timers through Django's WSGI handler called in process
    (``wsgi``: no HTTP server). CPU ms an arming of that process and of its backend, each."""
    if n < 1:
        return None
    got = subprocess.run([sys.executable, str(ROOT / "bench" / "arm_cost.py"), "--lane", "both", "-n", str(n),
                          "--repeat", "1", "--json"], cwd=ROOT, env=env, capture_output=True, text=True)
    if got.returncode != 0 or not got.stdout.strip():
        say(f"{tag} · in process: arm_cost.py failed ({got.returncode}): {got.stderr[-1500:]}")
        return None
    out = json.loads(got.stdout.strip().splitlines()[-1])
    load = os.getloadavg()[0]
    lanes = {lane: {"process": out[lane]["api"], "db": out[lane]["db"], "per": out[lane]["api"] + out[lane]["db"]}
             for lane in ("direct", "wsgi")}
    say(f"{tag} · in process: {n} armings · CPU ms an arming: timer_arm alone process {out['direct']['api']:.2f} + "
        f"db {out['direct']['db']:.2f} = {lanes['direct']['per']:.2f} · through Django's handler api "
        f"{out['wsgi']['api']:.2f} + db {out['wsgi']['db']:.2f} = {lanes['wsgi']['per']:.2f} · load {load:.2f}")
    return {**lanes["direct"], "wsgi": lanes["wsgi"], "load": load}


def conninfo() -> str:
    """The bench's database, as a libpq connection string (for the bare wake's two sessions)."""
    from django.db import connection
    from psycopg.conninfo import make_conninfo

    d = connection.settings_dict
    return make_conninfo(dbname=d["NAME"], user=d.get("USER") or None, password=d.get("PASSWORD") or None,
                         host=d.get("HOST") or None, port=str(d["PORT"]) if d.get("PORT") else None)


def percentile(values: list[float], q: float) -> float | None:
    """PostgreSQL's percentile_cont (linear between the two nearest), as late_row reads late_by."""
    if not values:
        return None
    ordered = sorted(values)
    pos = q * (len(ordered) - 1)
    lo = int(pos)
    hi = min(lo + 1, len(ordered) - 1)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (pos - lo)


def wake_round(args, tag: str) -> dict:
    """The bare wake at ``--rate`` for ``--seconds``: this process sends ``pg_notify`` at each intended instant,
    a listener in a process of its own wakes on it; lateness = the listener's wall clock at the wake minus the
    instant the note was meant for."""
    import psycopg

    dsn = conninfo()
    listener = subprocess.Popen([sys.executable, "-c", LISTENER, dsn, WAKE_CHANNEL], stdout=subprocess.PIPE,
                                text=True)
    try:
        ready = json.loads(listener.stdout.readline())
        with psycopg.connect(dsn, autocommit=True) as conn:
            pids = [ready["backend"], conn.info.backend_pid]
            db0, me0, load = cpu_seconds(pids), time.process_time(), os.getloadavg()[0]
            period, sent = 1 / args.rate, 0
            wall0, mono0 = time.time(), time.monotonic()
            while sent * period < args.seconds:
                at = sent * period
                wait = mono0 + at - time.monotonic()
                if wait > 0:
                    time.sleep(wait)
                conn.execute("SELECT pg_notify(%s, %s)", [WAKE_CHANNEL, repr(wall0 + at)])
                sent += 1
            time.sleep(0.2)  # the last notes heard before the CPU is read
            sender, db = time.process_time() - me0, cpu_seconds(pids) - db0
            conn.execute("SELECT pg_notify(%s, 'stop')", [WAKE_CHANNEL])
        done = json.loads(listener.stdout.readline())
        listener.wait(30)
    finally:
        if listener.poll() is None:
            listener.kill()
    late = done["late"]
    p50, p95, p99 = (percentile(late, q) for q in (0.5, 0.95, 0.99))
    cpu = {"listener": done["cpu"] - ready["cpu"], "sender": sender, "db": db}
    ms = lambda x: "—" if x is None else f"{x * 1000:.2f} ms"  # noqa: E731
    say(f"{tag} · the bare wake: sent {sent} at {args.rate:g}/s, heard {len(late)} · latency p50 {ms(p50)} "
        f"p95 {ms(p95)} p99 {ms(p99)} · CPU s {' · '.join(f'{k} {v:.2f}' for k, v in cpu.items())} · load {load:.2f}")
    return {"ok": len(late) == sent, "p50": p50, "p95": p95, "p99": p99, "sent": sent, "heard": len(late), "cpu": cpu,
            "load": load}


def live_round(procs: Procs, key: str, args, domain: str, workers: int, tag: str) -> dict:
    from django.utils import timezone

    from timers.models import Commit, Timer

    clear(domain)
    procs.start_workers(workers)
    try:
        since = timezone.now()
        stream, before, start, load = run_stream(procs, key, args, rate=args.rate, delay=args.delay)
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
    say(f"{tag} · {workers} worker{'s' if workers != 1 else ''}: asked {args.rate:g}/s, armed {stream.armed / armed_for:,.0f}/s "
        f"· fired {n} ({n / elapsed:,.0f}/s over {elapsed:.1f} s) · late_by p50 {ms(p50)} p95 {ms(p95)} p99 {ms(p99)} "
        f"· CPU s {spent(before, after)} · load {load:.2f}"
        + ("" if ok else f" · CHECK FAILED: armed {stream.armed}, fired {n}, commits {commits}"))
    return {"ok": ok, "p50": p50, "p95": p95, "p99": p99, "armed": stream.armed / armed_for,
            "cpu": {k: after[k] - before[k] for k in after}, "load": load}


def warm_up(port: int, key: str) -> None:
    """Armings before the first round: gunicorn's workers import lazily, and a first round paid it (with 20, the
    first 0-worker round still cost 1.2-2x the later ones: each worker's first requests, the backends' caches)."""
    import http.client
    import json

    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    for i in range(300):
        conn.request("POST", "/timers", body=json.dumps({"key": f"job_warm:task:tick:{i}", "handler": "noop",
                                                          "owed_at": "2099-01-01T00:00:00Z"}),
                     headers={"Authorization": f"Bearer {key}", "Content-Type": "application/json"})
        conn.getresponse().read()
    conn.close()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def med(values: list[float]) -> float | None:
    values = [v for v in values if v is not None]
    return statistics.median(values) if values else None


def ratio(a: float | None, b: float | None) -> float | None:
    return None if a is None or not b else a / b


def verdict(x: float | None, target: float, *, at_most: bool = True) -> str:
    if x is None:
        return "no figure"
    ok = x <= target if at_most else x >= target
    return f"target {'<=' if at_most else '>='} {target:g}x: {'met' if ok else 'NOT met'}"


def fmt(x: float | None, unit: str = "x", scale: float = 1.0, digits: int = 2) -> str:
    return "—" if x is None else f"{x * scale:.{digits}f}{unit}"


def report_live(rounds: list[dict], args, many: int) -> list[str]:
    """The live lane against the bare wake: late_by p99 ÷ the wake's p99, each round's own ratio, medians."""
    one = [ratio(r[1]["p99"], r["wake"]["p99"]) for r in rounds]
    more = [ratio(r[many]["p99"], r["wake"]["p99"]) for r in rounds]
    four_one = [ratio(r[many]["p99"], r[1]["p99"]) for r in rounds]
    p99 = {w: med([r[w]["p99"] for r in rounds]) for w in ("wake", 1, many)}
    rs = lambda xs: ", ".join(fmt(x) for x in xs)  # noqa: E731
    ms = lambda x: fmt(x, " ms", 1000, 1)  # noqa: E731

    def cpu_line(w) -> str:
        parts = {k: med([r[w]["cpu"][k] for r in rounds]) for k in rounds[0][w]["cpu"]}
        return " + ".join(f"{k} {v:.2f}" for k, v in parts.items())

    loads = [r[w]["load"] for r in rounds for w in ("wake", 1, many)]
    lines = [
        f"live · late_by p99 against a bare LISTEN/NOTIFY wake's p99, side by side in each round ({args.rate:g}/s "
        f"asked for {args.seconds:g} s a lane, owed {args.delay:g} s after arming; each ratio the median over "
        f"{len(rounds)} round{'s' if len(rounds) != 1 else ''} of that round's own):",
        f"  1 worker:  late_by p99 {ms(p99[1])} ÷ the wake's p99 {ms(p99['wake'])} = {fmt(med(one))} "
        f"[{verdict(med(one), TARGET_VS_WAKE)}] (rounds {rs(one)})",
        f"  {many} workers: late_by p99 {ms(p99[many])} ÷ the wake's p99 {ms(p99['wake'])} = {fmt(med(more))} "
        f"[{verdict(med(more), TARGET_VS_WAKE)}] (rounds {rs(more)})",
        f"  {many} ÷ 1 workers' late_by p99: {fmt(med(four_one))} [{verdict(med(four_one), TARGET_4_VS_1)}] "
        f"(rounds {rs(four_one)})",
    ]
    for w, name in (("wake", "the bare wake"), (1, "1 worker"), (many, f"{many} workers")):
        pcts = "/".join(fmt(med([r[w][p] for r in rounds]), "", 1000, 2 if w == "wake" else 0)
                        for p in ("p50", "p95", "p99"))
        extra = (f"heard {sum(r['wake']['heard'] for r in rounds)} of {sum(r['wake']['sent'] for r in rounds)} notes"
                 if w == "wake"
                 else f"armed {med([r[w]['armed'] for r in rounds]):.0f}/s")
        lines.append(f"  {name}: p50/p95/p99 {pcts} ms · {extra} · CPU s a lane {cpu_line(w)}")
    lines.append(f"  load average (1 min) over the lanes: {min(loads):.2f}-{max(loads):.2f}")
    return lines


def report_arm(rounds: list[dict], many: int) -> list[str]:
    """Arming over the API against timer_arm in a process of its own (the same N), and 4 idle workers ÷ none."""
    api_vs = [ratio(r[0]["per"], r["direct"]["per"]) for r in rounds if r["direct"]]
    api_handler = [ratio(r[0]["per"], r["direct"]["wsgi"]["per"]) for r in rounds if r["direct"]]
    idle = [ratio(r[many]["rate"], r[0]["rate"]) for r in rounds]
    rs = lambda xs: ", ".join(fmt(x) for x in xs)  # noqa: E731

    def split(w) -> str:
        # CPU ms an arming by whose it is (gunicorn's processes, the workers, the backends); no workers, no part
        parts = {k: med([r[w]["cpu"][k] / max(1, r[w]["armed"]) * 1000 for r in rounds]) for k in rounds[0][w]["cpu"]}
        return " + ".join(f"{k} {v:.2f}" for k, v in parts.items() if v or k != "workers")

    direct = [r["direct"] for r in rounds if r["direct"]]
    loads = [r[w]["load"] for r in rounds for w in (0, many)]
    # The least an arming over the API can cost, by arithmetic from this run's parts: Django's handler around the
    # arming, as measured in process, plus what gunicorn and HTTP cost a POST whatever the app (the bare app).
    floor = med([r["floor"]["per"] for r in rounds])
    handler = med([d["wsgi"]["per"] for d in direct]) if direct else None
    alone = med([d["per"] for d in direct]) if direct else None
    lines = [
        f"arm · over the API (gunicorn, 0 workers, closed loop) against timers.arming.timer_arm in a process of its "
        f"own over the same N, and with {many} idle workers against none (medians of {len(rounds)} "
        f"round{'s' if len(rounds) != 1 else ''}):",
        f"  CPU an arming: over the API {fmt(med([r[0]['per'] for r in rounds]), ' ms')} ({split(0)}) ÷ in process "
        + (f"{fmt(med([d['per'] for d in direct]), ' ms')} (process {med([d['process'] for d in direct]):.2f} + db "
           f"{med([d['db'] for d in direct]):.2f})" if direct else "—")
        + f" = {fmt(med(api_vs))} [{verdict(med(api_vs), TARGET_API_VS_PROCESS)}] (rounds {rs(api_vs)})",
        "  (over the API ÷ POST /timers through Django's handler in that process, "
        + (f"{fmt(med([d['wsgi']['per'] for d in direct]), ' ms')} (api {med([d['wsgi']['process'] for d in direct]):.2f}"
           f" + db {med([d['wsgi']['db'] for d in direct]):.2f})" if direct else "—")
        + f" = {fmt(med(api_handler))} [{verdict(med(api_handler), TARGET_API_VS_PROCESS)}]: what HTTP and gunicorn "
        f"add; rounds {rs(api_handler)})",
        f"  floor: the bare POST app on the same gunicorn {fmt(floor, ' ms')} a request; handler in process + it = "
        + (f"{fmt(handler + floor, ' ms')}, i.e. {fmt((handler + floor) / alone)} timer_arm alone and "
           f"{fmt((handler + floor) / handler)} the handler in process: the least over the API can be with Django's "
           f"handler as it is; over the API ÷ that sum {fmt(med([r[0]['per'] for r in rounds]) / (handler + floor))}"
           if handler and alone else "—"),
        f"  {many} idle workers ÷ none, armed/s: {med([r[many]['rate'] for r in rounds]):.0f} ÷ "
        f"{med([r[0]['rate'] for r in rounds]):.0f} = {fmt(med(idle))} "
        f"[{verdict(med(idle), TARGET_IDLE, at_most=False)}] (rounds {rs(idle)}); CPU an arming "
        f"{fmt(med([r[many]['per'] for r in rounds]), ' ms')} ({split(many)}) against "
        f"{fmt(med([r[0]['per'] for r in rounds]), ' ms')}",
        f"  N a round (armed over the API, 0 workers): {', '.join(str(r[0]['armed']) for r in rounds)} · load "
        f"average (1 min) over the lanes: {min(loads):.2f}-{max(loads):.2f}",
    ]
    return lines


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=20)
    parser.add_argument("--rate", type=float, default=100,
                        help="live: timers armed a second asked, in all (and the bare wake's notes a second)")
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
    head = (f"# live · {platform.node()} · {os.cpu_count()} CPUs · {platform.processor() or platform.machine()} · "
            f"Python {platform.python_version()} · commit {commit} · {args.clients} clients · "
            f"load {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    say(head)

    env = dict(os.environ, PYTHONUNBUFFERED="1", KT_RATE_LIMIT="off")
    failed = False
    report: list[str] = []
    many = args.workers
    procs = Procs(env)
    try:
        warm_up(procs.port, key)
        if "arm" in only:
            arms = []
            for r in range(args.repeat):
                tag = f"arm round {r + 1}"
                row = {0: arm_round(procs, key, args, domain, 0, tag)}
                row["direct"] = in_process_round(env, row[0]["armed"], tag)
                row["floor"] = floor_round(env, key, args, tag)
                row[many] = arm_round(procs, key, args, domain, many, tag)
                arms.append(row)
            report += report_arm(arms, many)
        if "live" in only:
            lives = []
            for r in range(args.repeat):
                tag = f"live round {r + 1}"
                row = {"wake": wake_round(args, tag)}
                failed = failed or not row["wake"]["ok"]
                for w in (1, many):
                    row[w] = live_round(procs, key, args, domain, w, tag)
                    failed = failed or not row[w]["ok"]
                lives.append(row)
            report += report_live(lives, args, many)
        clear(domain)
    finally:
        procs.close()
    if "brands" in only:
        import multi_worker

        rows = multi_worker.brands(args.brands)
        rates: dict[int, list[float]] = {1: [], many: []}
        round_no = 0
        for r in range(args.repeat):
            for w in (1, many):
                round_no += 1
                load = os.getloadavg()[0]
                rate, outs, terms = multi_worker.one_round(rows, args.per_brand, w, round_no)
                rates[w].append(rate)
                say(f"brands round {r + 1} · {w} worker{'s' if w != 1 else ''}: {rate:,.0f} fires/s · fires per "
                    f"worker {' '.join(str(o['fired']) for o in outs)} · {terms} lease terms · load {load:.2f}")
        one, more = statistics.median(rates[1]), statistics.median(rates[many])
        report.append(f"brands · {many} workers ÷ 1 over {args.brands} brands, fires/s: {more:,.0f} ÷ {one:,.0f} = "
                      f"{more / one:.2f}x [{verdict(more / one, 3, at_most=False)}]")
        multi_worker.clear(rows)
    print("\n".join(report), flush=True)
    print(head.lstrip("# "), flush=True)
    return 3 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
