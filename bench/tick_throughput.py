"""Tick throughput: how fast the runtime drains owed timers, against a plain-SQL ceiling.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/kt_bench .venv/bin/python bench/tick_throughput.py \
        [--n 10000 100000] [--batch 2000] [--repeat 1] [--profile]

Each N runs in a child process of its own (a clean interpreter), so what one N leaves in the process's memory
is not counted at the next: the peak RSS printed for an N is the runtime drain's own, read from the kernel's
high-water mark (VmHWM, reset just before each drain), and the summary divides the largest N's by the
smallest's (the engine's working set should not grow with N: an advance holds what a batch needs).

For each N, on a fresh test clock frozen at T0, N "noop" timers owed over the hour before T0 are armed
with one set-based INSERT (not measured), then:

* runtime: ``timers.advance.advance(clock, T0)`` drains them (claim, fire, commit, record);
* ceiling: plain SQL does the same claim + commit + record (status/fired_at/late_by/attempt/wakes on the
  timer, one timers_commit row, one 'timer.fired' timers_event row in tick order), as a loop of one CTE
  statement per batch of the same size, one transaction per batch, each batch starting after the last
  key the one before it claimed, as the runtime's claim does ("batched"), and as one statement over all N
  in one transaction ("single"). The faster of the two is the ceiling;
* floor: the least a runtime that runs a Python handler per timer must pay: the ceiling's claim (the same
  UPDATE … RETURNING, a batch at a time) with every claimed row's columns fetched into Python as the runtime's
  claim reads them (binary, on the tick's own cursor), sorted into tick order, and each timer's commit and
  'timer.fired' event built in Python (ids from timers.ids) and sent back by binary COPY, as the runtime's
  write does; no handler, no objects. Runtime ÷ floor says what is left to cut in the engine; floor ÷ ceiling
  what the Python round trip itself costs.

Every statement is counted and timed at psycopg's level (Cursor.execute, executemany, copy), so the
engine's own psycopg cursors and COPYs count as Django's cursors do.

Each way starts from a vacuumed table with only its own N rows armed and right after a CHECKPOINT (so no
checkpoint lands inside one way's window by chance; every way pays the same full-page writes), and is
verified afterwards: N
timers fired, none left armed, N commits, N 'timer.fired' events, and the same record hash
(timers.record.record_hash) for the runtime and the ceilings. Database commits are counted on the
server (pg_stat_database.xact_commit, flushed with pg_stat_force_next_flush(), calibrated for the
counter reads themselves) and on the client (explicit COMMITs + autocommit statements). The bench's
rows (its test clocks' timers, commits, events) are deleted at the start and at the end.

Exit status: 0 when every N meets the targets (>= 5,000 timers/s and >= 25% of the ceiling), 1 when
one does not, 2 when not on PostgreSQL, 3 when a verification fails.
"""

from __future__ import annotations

import argparse
import contextlib
import cProfile
import io
import json
import os
import platform
import pstats
import re
import subprocess
import sys
import time
from collections import defaultdict
from datetime import UTC, datetime, timedelta
from statistics import median

from bench_django import setup_django

BRAND_NAME = "bench.tick_throughput"
ZERO = timedelta(0)
T0 = datetime(2030, 1, 1, tzinfo=UTC)  # the test clocks' frozen time; fixed so runs are comparable
TARGET_RATE = 5000.0
TARGET_SHARE = 0.25
TARGET_RSS_RATIO = 1.2  # peak RSS of the largest N against the smallest, at most (issue 39)
TARGET_CPU_SHARE = 0.80  # the ceiling's CPU seconds ÷ the runtime's, at every N, at least (issue 39)
TARGET_CPU_FLATNESS = 1.1  # the runtime's CPU a timer at the largest N ÷ the smallest's, at most (issue 39)


# -- measuring ---------------------------------------------------------------------------------------
_TABLE_RE = re.compile(r'"?((?:timers|calendars|portals)_\w+|pg_\w+)"?')


class Meter:
    """Counts what one measured call does on the default connection, at psycopg's level (Cursor.execute,
    executemany and copy, patched on the class), so every statement counts: Django's wrapped cursors, the
    engine's own psycopg cursors (timers/store.py binds binary parameters on them) and its COPYs alike. For
    each statement kind: its calls and the time inside the call (server + network + parameter adaptation;
    for a COPY, the whole block, the rows' formatting included). Commits as the client sees them: explicit
    COMMITs of atomic blocks + statements run in autocommit."""

    def __init__(self):
        from django.db import DEFAULT_DB_ALIAS, connections

        self.connection = connections[DEFAULT_DB_ALIAS]  # the wrapper itself, not the proxy
        self.statements = 0
        self.autocommit_statements = 0
        self.explicit_commits = 0
        self.db_seconds: dict[str, float] = defaultdict(float)
        self.db_calls: dict[str, int] = defaultdict(int)
        self._stack = contextlib.ExitStack()

    def _label(self, sql) -> str:
        if not isinstance(sql, str | bytes):
            sql = sql.as_string(None) if hasattr(sql, "as_string") else str(sql)
        if isinstance(sql, bytes):
            sql = sql.decode("utf-8", "replace")
        head = sql.lstrip().split(None, 1)[0].upper() if sql.strip() else "?"
        m = _TABLE_RE.search(sql)
        return f"{head} {m.group(1) if m else ''}".strip()

    def _count(self, cursor, sql) -> str:
        label = self._label(sql)
        if cursor.connection.autocommit:
            self.autocommit_statements += 1
        self.statements += 1
        return label

    def _add(self, label: str, seconds: float) -> None:
        self.db_seconds[label] += seconds
        self.db_calls[label] += 1

    def _patch(self) -> None:
        import psycopg

        meter = self

        def timed(original):
            def call(cursor, query, *args, **kwargs):
                label = meter._count(cursor, query)
                start = time.perf_counter()
                try:
                    return original(cursor, query, *args, **kwargs)
                finally:
                    meter._add(label, time.perf_counter() - start)

            return call

        @contextlib.contextmanager
        def copy(cursor, statement, *args, **kwargs):
            label = meter._count(cursor, statement)
            start = time.perf_counter()
            try:
                with original_copy(cursor, statement, *args, **kwargs) as block:
                    yield block
            finally:
                meter._add(label, time.perf_counter() - start)

        original_copy = psycopg.Cursor.copy
        for name, replacement in (("execute", timed(psycopg.Cursor.execute)),
                                  ("executemany", timed(psycopg.Cursor.executemany)), ("copy", copy)):
            self._stack.callback(setattr, psycopg.Cursor, name, getattr(psycopg.Cursor, name))
            setattr(psycopg.Cursor, name, replacement)

    def __enter__(self) -> Meter:
        wrapper = self.connection
        original = type(wrapper).commit

        def commit(this=wrapper):
            self.explicit_commits += 1
            return original(this)

        wrapper.commit = commit  # instance attribute: Atomic.__exit__ calls connection.commit()
        self._stack.callback(lambda: wrapper.__dict__.pop("commit", None))
        self._patch()
        return self

    def __exit__(self, *exc) -> None:
        self._stack.close()

    @property
    def client_commits(self) -> int:
        return self.explicit_commits + self.autocommit_statements

    @property
    def db_total(self) -> float:
        return sum(self.db_seconds.values())


def xact_commit() -> int:
    """The database's committed-transaction counter, with this backend's pending counts flushed first."""
    from django.db import connection

    with connection.cursor() as cur:
        cur.execute("SELECT pg_stat_force_next_flush()")  # flushed when the backend next goes idle
        cur.execute("SELECT xact_commit FROM pg_stat_database WHERE datname = current_database()")
        return int(cur.fetchone()[0])


def xact_settled() -> int:
    """xact_commit() once the counter has caught up: after a transaction longer than a second, one
    commit is sometimes only flushed on the next forced flush (seen on PG 15), so read twice."""
    xact_commit()
    return xact_commit()


def xact_overhead() -> int:
    """What the reads add to the counter by themselves: one xact_commit() before, xact_settled() after."""
    samples = []
    for _ in range(3):
        a = xact_commit()
        b = xact_settled()
        samples.append(b - a)
    return min(samples)


def server_marks() -> tuple[int, int]:
    """(WAL position in bytes, checkpoints so far): how much WAL a way wrote, and whether a checkpoint
    ran inside the measured window (a source of noise on a small machine)."""
    from django.db import connection

    with connection.cursor() as cur:
        cur.execute(
            "SELECT pg_current_wal_lsn() - '0/0'::pg_lsn, checkpoints_timed + checkpoints_req FROM pg_stat_bgwriter"
        )
        wal, checkpoints = cur.fetchone()
    return int(wal), int(checkpoints)


def checkpoint() -> None:
    """Start each way from a clean buffer pool (best effort: CHECKPOINT needs pg_checkpoint or superuser)."""
    from django.db import DatabaseError, connection

    with contextlib.suppress(DatabaseError), connection.cursor() as cur:
        cur.execute("CHECKPOINT")


def reset_peak_rss() -> bool:
    """Reset this process's RSS high-water mark (Linux: 5 into /proc/self/clear_refs); False where it cannot be."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
    except OSError:
        return False
    return True


def rss_mb(field: str = "VmHWM") -> float:
    """The process's peak (VmHWM) or current (VmRSS) resident set in MB; without /proc, ru_maxrss."""
    with contextlib.suppress(OSError), open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1]) / 1024
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # Linux: KiB


# -- arming and cleaning -----------------------------------------------------------------------------
ARM_SQL = """
INSERT INTO timers_timer (id, domain, brand_id, key, owner, kind, place, handler, status, owed_at, opened_at,
                          armed_at, fired_at, late_by, attempt, wakes, version, superseded_by, "by", held_since,
                          held_by, remaining, armed_by, data)
SELECT 'tmr_' || left(md5(%(domain)s || ':' || g), 24), %(domain)s, %(brand)s,
       'bench_' || g || ':window:noop:' || g, 'bench_' || g, 'window', 7, 'noop', 'armed',
       %(t0)s::timestamptz - interval '1 hour' + (g::bigint * %(step_us)s) * interval '1 microsecond',
       %(opened)s, %(opened)s, NULL, NULL, 0, 0, '', '', '', NULL, '', NULL, '', '{}'::jsonb
FROM generate_series(0, %(n)s - 1) AS g
"""


def arm(domain: str, brand_id: str, n: int) -> float:
    """Arm N noop timers owed over the hour before T0 with one statement; returns the seconds it took."""
    from django.db import connection

    from timers.keys import parse

    parse(f"bench_{n - 1}:window:noop:{n - 1}")  # the keys satisfy the grammar
    start = time.perf_counter()
    with connection.cursor() as cur:
        cur.execute(
            ARM_SQL,
            {
                "domain": domain,
                "brand": brand_id,
                "t0": T0,
                "step_us": 3_600_000_000 // n,
                "opened": T0 - timedelta(hours=2),
                "n": n,
            },
        )
        assert cur.rowcount == n, cur.rowcount
        cur.execute("ANALYZE timers_timer")
    return time.perf_counter() - start


def cleanup(brand) -> None:
    """Delete every row of the bench's clock domains, then vacuum so the next way starts clean."""
    from django.db import connection

    from timers.models import TestClock

    domains = list(TestClock.objects.filter(brand=brand).values_list("id", flat=True))
    with connection.cursor() as cur:
        if domains:
            for table in ("timers_event", "timers_commit", "timers_outbox", "timers_timer"):
                cur.execute(f"DELETE FROM {table} WHERE domain = ANY(%s)", [domains])  # noqa: S608
            TestClock.objects.filter(id__in=domains).delete()
        for table in ("timers_timer", "timers_commit", "timers_event", "timers_testclock"):
            cur.execute(f"VACUUM ANALYZE {table}")


# -- the two ways ------------------------------------------------------------------------------------
def new_clock(brand, label: str):
    from timers import test_clocks

    return test_clocks.test_clock_create(brand=brand, frozen_time=T0, name=f"bench {label}")


@contextlib.contextmanager
def window(result: dict, overhead: int):
    """The measured window: a checkpoint first (not measured), then server commits, WAL written and
    checkpoints that ran are read around it, and the client's view through a Meter."""
    from bench.domain_throughput import backend_pid, cpu_seconds

    checkpoint()
    wal0, ck0 = server_marks()
    before = xact_commit()
    pid = backend_pid()
    py0, pg0 = cpu_seconds(pid)
    with Meter() as meter:
        yield meter
    py1, pg1 = cpu_seconds(pid)
    result["cpu_py"], result["cpu_pg"] = py1 - py0, pg1 - pg0
    result["server_commits"] = xact_settled() - before - overhead
    wal1, ck1 = server_marks()
    result.update(meter=meter, wal_bytes=wal1 - wal0, checkpoints=ck1 - ck0)


def run_runtime(brand, n: int, overhead: int, *, profile: bool = False) -> dict:
    from timers.advance import advance

    clock = new_clock(brand, f"runtime n={n}")
    arm_seconds = arm(clock.id, brand.id, n)
    profiler = cProfile.Profile() if profile else None
    result: dict = {"domain": clock.id, "arm_seconds": arm_seconds, "profiler": profiler}
    with window(result, overhead):
        if profiler is not None:
            profiler.enable()
        result["rss_before_mb"] = rss_mb("VmRSS")
        result["rss_reset"] = reset_peak_rss()
        start = time.perf_counter()
        result["stats"] = advance(clock.id, T0)
        result["seconds"] = time.perf_counter() - start
        result["rss_peak_mb"] = rss_mb()
        if profiler is not None:
            profiler.disable()
    return result


# The claim as the runtime's (timers/store.py, PostgresStore.fetch): armed and owed, in tick order, each batch
# starting after the last key the batch before it claimed (a keyset continuation), never from the index's
# start, where every timer already fired would be stepped over again. A fired timer leaves the armed table
# for its month of history in the same statement, stamped moved_at, as the runtime's write does.
CLAIM_SQL = """
UPDATE timers_timer AS t
   SET status = 'fired', fired_at = %(now)s, late_by = interval '0', attempt = t.attempt + 1,
       wakes = t.wakes + 1, moved_at = now()
 WHERE t.id IN (SELECT id FROM timers_timer
                 WHERE domain = %(domain)s AND status = 'armed' AND owed_at <= %(to)s{after}
                 ORDER BY owed_at, place, opened_at, key
                 LIMIT %(limit)s
                 FOR UPDATE)"""
CEILING_SQL = """
WITH claimed AS (""" + CLAIM_SQL + """
    RETURNING t.id, t.key, t.owner, t.place, t.owed_at, t.opened_at, t.brand_id, t.data
), committed AS (
    INSERT INTO timers_commit (id, domain, key, timer_id, outcome, code, at)
    SELECT 'cmt_' || left(replace(gen_random_uuid()::text, '-', ''), 28), %(domain)s, key, id, 'committed', '',
           %(now)s
      FROM claimed
), recorded AS (
    INSERT INTO timers_event (id, domain, brand_id, type, subject, owed_at, key, data, fired_at)
    SELECT 'evt_' || left(replace(gen_random_uuid()::text, '-', ''), 28), %(domain)s, brand_id, 'timer.fired', owner,
           owed_at, key, data, %(now)s
      FROM claimed
     ORDER BY owed_at, place, opened_at, key
)
SELECT (SELECT count(*) FROM claimed), owed_at, place, opened_at, key
  FROM claimed ORDER BY owed_at DESC, place DESC, opened_at DESC, key DESC LIMIT 1
"""
AFTER_SQL = " AND (owed_at, place, opened_at, key) > (%(owed_at)s, %(place)s, %(opened_at)s, %(key)s)"


def run_ceiling(brand, n: int, overhead: int, *, batch: int | None) -> dict:
    """batch=None: one statement over all N in one transaction; else one statement per batch, each
    in its own transaction, until a batch comes back short (as the runtime's claim loop does)."""
    from django.db import connection, transaction

    label = "single" if batch is None else f"batched {batch}"
    clock = new_clock(brand, f"ceiling {label} n={n}")
    arm_seconds = arm(clock.id, brand.id, n)
    params: dict = {"now": T0, "to": T0, "domain": clock.id, "limit": batch}
    first, after = CEILING_SQL.format(after=""), CEILING_SQL.format(after=AFTER_SQL)
    result: dict = {
        "domain": clock.id,
        "arm_seconds": arm_seconds,
        "label": label,
        "fired": 0,
        "statements": 0,
    }
    with window(result, overhead):
        start = time.perf_counter()
        last = None
        while True:
            with transaction.atomic(), connection.cursor() as cur:
                if last is None:
                    cur.execute(first, params)
                else:
                    cur.execute(after, {**params, **dict(zip(("owed_at", "place", "opened_at", "key"), last,
                                                             strict=True))})
                row = cur.fetchone()
            got = row[0] if row else 0
            last = tuple(row[1:]) if row else last
            result["fired"] += got
            result["statements"] += 1
            if batch is None or got < batch:
                break
        result["seconds"] = time.perf_counter() - start
    return result


# The floor's claim: the ceiling's (CLAIM_SQL), returning what the runtime's claim reads of each row (timers.engine's
# TIMER_FIELDS), so the rows' decoding into Python is paid as the runtime pays it.
FLOOR_SQL = CLAIM_SQL + "\nRETURNING {columns}\n"


def run_floor(brand, n: int, overhead: int, *, batch: int) -> dict:
    """The floor way (see the module's docstring): a batch a transaction, as the ceiling batched."""
    from django.db import transaction

    from timers.engine import TIMER_FIELDS
    from timers.ids import new_id
    from timers.prepared import new_cursor
    from timers.rows import copy_in

    clock = new_clock(brand, f"floor n={n}")
    arm_seconds = arm(clock.id, brand.id, n)
    columns = ", ".join(f't."{c}"' for c in TIMER_FIELDS)
    first = FLOOR_SQL.format(after="", columns=columns)
    after = FLOOR_SQL.format(after=AFTER_SQL, columns=columns)
    at = {c: i for i, c in enumerate(TIMER_FIELDS)}
    i_id, i_key, i_owner, i_place, i_owed, i_opened, i_brand, i_data = (
        at[c] for c in ("id", "key", "owner", "place", "owed_at", "opened_at", "brand_id", "data"))
    domain, now = clock.id, T0
    params: dict = {"now": now, "to": now, "domain": domain, "limit": batch}
    result: dict = {"domain": domain, "arm_seconds": arm_seconds, "fired": 0, "statements": 0}
    with window(result, overhead):
        start = time.perf_counter()
        last = None
        while True:
            with transaction.atomic(), new_cursor() as cur:
                if last is None:
                    cur.execute(first, params, binary=True)
                else:
                    cur.execute(after, {**params, **dict(zip(("owed_at", "place", "opened_at", "key"), last,
                                                             strict=True))}, binary=True)
                rows = cur.fetchall()
                rows.sort(key=lambda r: (r[i_owed], r[i_place], r[i_opened], r[i_key]))
                copy_in(cur, "timers_commit", ["id", "domain", "key", "timer_id", "outcome", "code", "at"],
                        ["varchar"] * 6 + ["timestamptz"],
                        [(new_id("cmt"), domain, r[i_key], r[i_id], "committed", "", now) for r in rows])
                copy_in(cur, "timers_event", ["id", "domain", "brand_id", "type", "subject", "owed_at", "key", "data",
                                              "fired_at", "late_by"],
                        ["varchar"] * 5 + ["timestamptz", "varchar", "jsonb", "timestamptz", "interval"],
                        [(new_id("evt"), domain, r[i_brand], "timer.fired", r[i_owner], r[i_owed], r[i_key],
                          r[i_data], now, ZERO) for r in rows])
            if rows:
                r = rows[-1]
                last = (r[i_owed], r[i_place], r[i_opened], r[i_key])
            result["fired"] += len(rows)
            result["statements"] += 3
            if len(rows) < batch:
                break
        result["seconds"] = time.perf_counter() - start
    return result


def verify(domain: str, n: int) -> tuple[list[str], str]:
    """Check the drain did all of its work once; returns (problems, record hash)."""
    from timers.models import Commit, Event, Timer
    from timers.record import record_hash

    problems = []
    fired = Timer.objects.filter(domain=domain, status="fired").count()
    armed = Timer.objects.filter(domain=domain, status="armed").count()
    commits = Commit.objects.filter(domain=domain, outcome="committed").count()
    events = Event.objects.filter(domain=domain, type="timer.fired").count()
    others = Event.objects.filter(domain=domain).exclude(type="timer.fired").count()
    for what, got, want in (
        ("timers fired", fired, n),
        ("timers still armed", armed, 0),
        ("commits", commits, n),
        ("timer.fired events", events, n),
        ("other events", others, 0),
    ):
        if got != want:
            problems.append(f"{domain}: {what} = {got}, expected {want}")
    count, digest = record_hash(domain)
    return problems, f"{count}:{digest}"


# -- reporting ---------------------------------------------------------------------------------------
def machine() -> dict:
    from django.db import connection

    cpu = platform.processor() or "?"
    with contextlib.suppress(OSError), open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    with connection.cursor() as cur:
        cur.execute(
            "SELECT version(), current_setting('server_version'), current_setting('synchronous_commit'), "
            "current_setting('shared_buffers'), current_setting('fsync'), current_setting('autovacuum')"
        )
        full, version, sync, shared, fsync, autovacuum = cur.fetchone()
    settings = connection.settings_dict
    return {
        "nproc": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count(),
        "cpu": cpu,
        "platform": platform.platform(),
        "python": platform.python_version(),
        "postgres": version,
        "postgres_full": full,
        "pg_settings": f"synchronous_commit={sync} fsync={fsync} shared_buffers={shared} autovacuum={autovacuum}",
        "db": f"{settings.get('HOST') or 'local socket'}:{settings.get('PORT') or 5432}/{settings.get('NAME')}",
    }


def breakdown(meter: Meter, seconds: float, indent: str = "      ") -> str:
    lines = [
        f"{indent}time in psycopg's execute/executemany/copy: {meter.db_total:.3f}s of {seconds:.3f}s "
        f"({100 * meter.db_total / seconds:.0f}%); the rest is Python in the process"
    ]
    for label, secs in sorted(meter.db_seconds.items(), key=lambda kv: -kv[1]):
        lines.append(f"{indent}  {secs:8.3f}s  {meter.db_calls[label]:6d}x  {label}")
    return "\n".join(lines)


def print_profile(profiler: cProfile.Profile, n: int, top: int) -> None:
    for order in ("tottime", "cumulative"):
        out = io.StringIO()
        pstats.Stats(profiler, stream=out).strip_dirs().sort_stats(order).print_stats(top)
        text = out.getvalue()
        # Keep the table: drop pstats' preamble up to the header row.
        text = text[text.find("   ncalls") :] if "   ncalls" in text else text
        print(f"\n--- cProfile of the runtime drain, n={n}, top {top} by {order} ---")
        print(text.rstrip())


def median_sample(samples: list[dict], n: int) -> tuple[float, dict]:
    """The median run (by seconds; the lower middle one for an even count) and its rate."""
    ordered = sorted(samples, key=lambda s: s["seconds"])
    sample = ordered[(len(ordered) - 1) // 2]
    return n / sample["seconds"], sample


def way_line(name: str, r: dict, n: int) -> str:
    ck = f" · {r['checkpoints']} checkpoint(s) ran inside" if r["checkpoints"] else ""
    return (
        f"  {name:<15}: {n / r['seconds']:9,.0f} timers/s ({r['seconds']:.3f}s) · {r['server_commits']} commits "
        f"({r['server_commits'] / n:.5f} per timer) · WAL {r['wal_bytes'] / 1e6:.0f} MB "
        f"({r['wal_bytes'] / n:,.0f} B per timer){ck} · arming {r['arm_seconds']:.2f}s, not measured"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0])
    parser.add_argument("--n", type=int, nargs="+", default=[10_000, 100_000], help="timers per run")
    parser.add_argument(
        "--batch",
        type=int,
        default=None,
        help="the advance's batch size (KEEPING_TIME['ADVANCE_BATCH_SIZE'] and BATCH_SIZE; default: the setting)",
    )
    parser.add_argument(
        "--repeat", type=int, default=1, help="runs of each way per N; the median is reported"
    )
    parser.add_argument(
        "--profile",
        action="store_true",
        help="after the measured runs, cProfile one more runtime drain of the largest N",
    )
    parser.add_argument("--top", type=int, default=30, help="rows of the profile to print")
    parser.add_argument("--child-n", type=int, help=argparse.SUPPRESS)  # one N, in a child process
    parser.add_argument("--overhead", type=int, default=0, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)

    setup_django()
    from django.conf import settings
    from django.core.management import call_command
    from django.db import OperationalError, connection

    if connection.vendor != "postgresql":
        print(
            f"tick_throughput: needs PostgreSQL (DATABASE_URL=postgres://…); this is {connection.vendor}.",
            file=sys.stderr,
        )
        return 2
    try:
        connection.ensure_connection()
    except OperationalError as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        print(f"tick_throughput: cannot connect to the database: {first}", file=sys.stderr)
        return 2
    if args.batch is not None:
        settings.KEEPING_TIME["BATCH_SIZE"] = settings.KEEPING_TIME["ADVANCE_BATCH_SIZE"] = args.batch
    batch = int(settings.KEEPING_TIME.get("ADVANCE_BATCH_SIZE") or settings.KEEPING_TIME["BATCH_SIZE"])

    from timers import tenants

    if args.child_n is not None:
        brand = tenants.brand_get_or_create(name=BRAND_NAME)
        result, problems = run_n(args, brand, batch, args.overhead, args.child_n)
        print("RESULT " + json.dumps({"result": result, "problems": problems}), flush=True)
        return 0

    call_command("migrate", verbosity=0)
    brand = tenants.brand_get_or_create(name=BRAND_NAME)
    cleanup(brand)
    info = machine()
    overhead = xact_overhead()
    print(f"machine: nproc={info['nproc']} · {info['cpu']} · {info['platform']} · Python {info['python']}")
    print(f"database: PostgreSQL {info['postgres']} at {info['db']} · {info['pg_settings']}")
    print(
        f"batch size {batch} · repeat {args.repeat} · handler noop · T0 {T0.isoformat()} · "
        f"xact_commit read overhead {overhead} · each N in a child process of its own"
    )

    try:
        return run_all(args, brand, batch, overhead, info)
    finally:
        cleanup(brand)


def run_child(args, n: int, overhead: int) -> tuple[dict | None, list[str]]:
    """One N in a fresh interpreter: its block is printed as it runs, its figures come back on a RESULT line."""
    cmd = [sys.executable, __file__, "--child-n", str(n), "--overhead", str(overhead), "--repeat", str(args.repeat)]
    if args.batch is not None:
        cmd += ["--batch", str(args.batch)]
    got: dict | None = None
    with subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True) as proc:
        assert proc.stdout is not None
        for line in proc.stdout:
            if line.startswith("RESULT "):
                got = json.loads(line[len("RESULT "):])
            else:
                print(line, end="", flush=True)
    if got is None:
        return None, [f"n={n}: the child process failed (exit {proc.returncode})"]
    return got["result"], got["problems"]


def run_n(args, brand, batch: int, overhead: int, n: int) -> tuple[dict, list[str]]:
    failed_checks: list[str] = []
    print(f"\n=== N = {n:,} ===", flush=True)
    ways: dict[str, list[dict]] = {"runtime": [], "floor": [], "ceiling batched": [], "ceiling single": []}
    hashes: dict[str, str] = {}
    for _ in range(args.repeat):
        for way in ways:
            if way == "runtime":
                r = run_runtime(brand, n, overhead)
            elif way == "floor":
                r = run_floor(brand, n, overhead, batch=batch)
            else:
                r = run_ceiling(brand, n, overhead, batch=batch if way == "ceiling batched" else None)
            problems, digest = verify(r["domain"], n)
            failed_checks.extend(problems)
            hashes.setdefault(way, digest)
            if hashes[way] != digest:
                failed_checks.append(f"{way}: record hash differs between repeats")
            ways[way].append(r)
            cleanup(brand)
    if len(set(hashes.values())) != 1:
        failed_checks.append(f"n={n}: record hashes differ between ways: {hashes}")

    rt_rate, rt = median_sample(ways["runtime"], n)
    cb_rate, cb = median_sample(ways["ceiling batched"], n)
    cs_rate, cs = median_sample(ways["ceiling single"], n)
    ceiling_way, ceiling_rate = max((("batched", cb_rate), ("single", cs_rate)), key=lambda kv: kv[1])
    share = rt_rate / ceiling_rate
    stats = rt["stats"]
    per_fired = rt["server_commits"] / n
    peaks = [r["rss_peak_mb"] for r in ways["runtime"]]
    peak = max(peaks)
    print(way_line("runtime", rt, n))
    print(
        f"      fired={stats.fired} batches={stats.batches} instants={stats.instants} passes={stats.passes}; "
        f"{rt['meter'].statements} statements; commits seen by the client: {rt['meter'].client_commits} "
        f"({rt['meter'].explicit_commits} COMMIT + {rt['meter'].autocommit_statements} autocommit statements)"
    )
    print(
        f"      commits per fired timer: {per_fired:.5f} (one commit per {n / max(rt['server_commits'], 1):,.0f})"
    )
    how = "VmHWM, reset before each drain" if all(r["rss_reset"] for r in ways["runtime"]) else \
        "the process's peak so far: the high-water mark could not be reset"
    print(
        f"      peak RSS of the drain: {peak:.0f} MB ({how}; {rt['rss_before_mb']:.0f} MB before it"
        + (f"; runs: {', '.join(f'{p:.0f}' for p in peaks)} MB" if len(peaks) > 1 else "") + ")"
    )
    print(breakdown(rt["meter"], rt["seconds"]))
    _, fl = median_sample(ways["floor"], n)
    print(way_line("floor", fl, n) + f" · {fl['statements']} statements (claim, COPY, COPY a batch of <= {batch})")
    print(way_line("ceiling batched", cb, n) + f" · {cb['statements']} statements of <= {batch}")
    print(way_line("ceiling single", cs, n) + " · 1 statement")
    print(
        f"  ratio: runtime is {100 * share:.1f}% of the ceiling ({ceiling_way}, {ceiling_rate:,.0f} timers/s); "
        f"{100 * rt_rate / cb_rate:.1f}% of batched, {100 * rt_rate / cs_rate:.1f}% of single"
    )
    print(
        f"  verified: {'FAILED' if failed_checks else 'ok'} · the record hash is "
        f"{'the same' if len(set(hashes.values())) == 1 else 'DIFFERENT'} across the ways "
        f"({next(iter(hashes.values()))[:28]}…)"
    )
    if args.repeat > 1:
        print(
            "  samples (s): "
            + "; ".join(f"{w}: " + ", ".join(f"{s['seconds']:.3f}" for s in v) for w, v in ways.items())
        )
    sys.stdout.flush()
    cpu = {way: (median(r["cpu_py"] for r in v), median(r["cpu_pg"] for r in v)) for way, v in ways.items()}
    ceiling_cpu = min(sum(cpu["ceiling batched"]), sum(cpu["ceiling single"]))
    print(
        f"  CPU (process + backend, medians): runtime {cpu['runtime'][0]:.2f} + {cpu['runtime'][1]:.2f} s · "
        f"ceiling batched {cpu['ceiling batched'][0]:.2f} + {cpu['ceiling batched'][1]:.2f} s · ceiling single "
        f"{cpu['ceiling single'][0]:.2f} + {cpu['ceiling single'][1]:.2f} s · runtime is "
        f"{100 * ceiling_cpu / sum(cpu['runtime']):.1f}% of the ceiling by CPU"
    )
    print(
        f"  floor (claim + rows into Python + COPY back), CPU: {cpu['floor'][0]:.2f} + {cpu['floor'][1]:.2f} s · "
        f"runtime is {100 * sum(cpu['floor']) / sum(cpu['runtime']):.1f}% of the floor by CPU · the floor is "
        f"{100 * ceiling_cpu / sum(cpu['floor']):.1f}% of the ceiling"
    )
    return {"n": n, "rate": rt_rate, "ceiling": ceiling_rate, "share": share, "per_fired": per_fired,
            "cpu_py": cpu["runtime"][0], "cpu_pg": cpu["runtime"][1], "ceiling_cpu": ceiling_cpu,
            "floor_py": cpu["floor"][0], "floor_pg": cpu["floor"][1],
            "rss_peak_mb": peak, "rss_before_mb": rt["rss_before_mb"],
            "record": next(iter(hashes.values()))}, failed_checks


def ratios(results: list[dict]) -> bool:
    """Issue 39's ratios, first: each side by side in one run, by CPU seconds (the process and its PostgreSQL
    backend), with the load. True when every one is met."""
    load = " ".join(f"{x:.2f}" for x in os.getloadavg())
    print(f"issue 39's ratios (load average {load}):")
    ok = True
    for r in results:
        share = r["ceiling_cpu"] / (r["cpu_py"] + r["cpu_pg"])
        ok = ok and share >= TARGET_CPU_SHARE
        print(f"  N={r['n']:>9,}: runtime ÷ ceiling by CPU {100 * share:5.1f}% (target >= {100 * TARGET_CPU_SHARE:.0f}%)"
              f" · runtime CPU {r['cpu_py']:.2f} s process + {r['cpu_pg']:.2f} s backend · ceiling "
              f"{r['ceiling_cpu']:.2f} s")
        floor = r["floor_py"] + r["floor_pg"]
        print(f"  {'':>11}  runtime ÷ floor by CPU {100 * floor / (r['cpu_py'] + r['cpu_pg']):5.1f}% · floor CPU "
              f"{r['floor_py']:.2f} s process + {r['floor_pg']:.2f} s backend · floor ÷ ceiling "
              f"{100 * r['ceiling_cpu'] / floor:.1f}% (a yardstick, not a bound: the runtime can beat it)")
    if len(results) > 1:
        small = min(results, key=lambda r: r["n"])
        large = max(results, key=lambda r: r["n"])
        per = {x["n"]: (x["cpu_py"] + x["cpu_pg"]) / x["n"] for x in (small, large)}
        flat = per[large["n"]] / per[small["n"]]
        # The memory row is 1M ÷ 100k: held to the next N down (a smaller N may not fill one batch).
        below = max((x for x in results if x["n"] < large["n"]), key=lambda x: x["n"])
        rss = large["rss_peak_mb"] / below["rss_peak_mb"]
        ok = ok and flat <= TARGET_CPU_FLATNESS and rss <= TARGET_RSS_RATIO
        print(f"  CPU a timer N={large['n']:,} ÷ N={small['n']:,}: {1e6 * per[large['n']]:.0f} ÷ "
              f"{1e6 * per[small['n']]:.0f} µs = {flat:.2f}× (target <= {TARGET_CPU_FLATNESS}×)")
        others = "".join(f"; ÷ N={x['n']:,} ({x['rss_peak_mb']:.0f} MB) {large['rss_peak_mb'] / x['rss_peak_mb']:.2f}×"
                         for x in results if x["n"] < below["n"])
        print(f"  peak RSS N={large['n']:,} ÷ N={below['n']:,}: {large['rss_peak_mb']:.0f} ÷ "
              f"{below['rss_peak_mb']:.0f} MB = {rss:.2f}× (target <= {TARGET_RSS_RATIO}×){others}")
    return ok


def run_all(args, brand, batch: int, overhead: int, info: dict) -> int:
    results = []
    failed_checks: list[str] = []
    for n in args.n:
        result, problems = run_child(args, n, overhead)
        failed_checks.extend(problems)
        if result is not None:
            results.append(result)

    if args.profile:
        n = max(args.n)
        r = run_runtime(brand, n, overhead, profile=True)
        problems, _ = verify(r["domain"], n)
        failed_checks.extend(problems)
        cleanup(brand)
        print(f"\n(profiled drain of n={n}: {n / r['seconds']:,.0f} timers/s under cProfile)")
        print_profile(r["profiler"], n, args.top)

    print("\n--- summary ---")
    ok = ratios(results)
    print(f"machine: nproc={info['nproc']} · {info['platform']} · PostgreSQL {info['postgres']}")
    for r in results:
        meets = r["rate"] >= TARGET_RATE and r["share"] >= TARGET_SHARE
        ok = ok and meets
        print(
            f"  N={r['n']:>9,}: runtime {r['rate']:9,.0f} timers/s · ceiling {r['ceiling']:9,.0f} timers/s · "
            f"{100 * r['share']:5.1f}% · {r['per_fired']:.5f} commits per fired timer · "
            f"peak RSS {r['rss_peak_mb']:5.0f} MB · record {r['record'][:20]}… · "
            f"{'meets' if meets else 'MISSES'} targets"
        )
    if failed_checks:
        print("verification FAILED:\n  " + "\n  ".join(failed_checks))
        return 3
    if not results:
        return 3
    worst_rate = min(r["rate"] for r in results)
    worst_share = min(r["share"] for r in results)
    print(
        f"VERDICT: {'PASS' if ok else 'FAIL'} — targets >= {TARGET_RATE:,.0f} timers/s and >= "
        f"{100 * TARGET_SHARE:.0f}% of the ceiling, issue 39's ratios above; worst {worst_rate:,.0f} timers/s and "
        f"{100 * worst_share:.1f}%"
    )
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
