"""A customer's timeline as the record grows: the same customer's page read on a record of its own history alone,
then on a record of --n events, side by side with the ratio.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/kt_timeline_bench .venv/bin/python bench/timeline_growth.py \
        [--n 2000000] [--history 5000] [--jobs 40] [--domains 200] [--repeat 5]

Use a database of its own: it empties the record, the outbox and the timers (TRUNCATE) and deletes its brand
(``bench.timeline``) at the start, and leaves its rows behind. PostgreSQL only (exit 2 on anything else).

The customer (Acme Robotics, on a test clock) has --jobs jobs and --history events across them (``job.at_risk``,
each with an email in the outbox, sent), and one armed deadline a job: ten years of history. Measured first on a
record that holds only that (its --history events), then after the fill: the rest up to --n events in ONE
``INSERT … SELECT FROM generate_series`` a million rows at a time (not timed), a tenth on the customer's own test
clock (other customers' dates: ``clk_…#US`` subjects) and the rest over --domains other test clocks, with an
outbox row for every second event and an armed timer for every twentieth; VACUUM ANALYZE and CHECKPOINT before
each size. Timed, --repeat times at each size (the figure is the median): the read the API's ``GET
/subjects/<id>/timeline?limit=100`` makes (the subject with its calendar, ``services.timeline.subject_timeline``,
the first page rendered as JSON), in wall milliseconds and CPU seconds of this process (``time.process_time``:
the Python side; the rest of the wall time is the database's), and the statements it sent.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import time
from datetime import UTC, datetime, timedelta

from bench_django import setup_django

T0 = datetime(2018, 1, 1, 14, tzinfo=UTC)
BRAND = "bench.timeline"
TARGET = 1.5  # the page's time at --n against its time on its own history: at most this (issue 38)

FILL_EVENTS = """
INSERT INTO timers_event (id, domain, brand_id, type, subject, owed_at, key, data, fired_at)
SELECT 'evt_tlf' || g, d, %(brand)s, 'clock.notice', 'clk_tlf' || (g / 20) || '#US', f,
       'clk_tlf' || (g / 20) || '#US:rung:notice ' || (g %% 5) || 'd:2027@0', '{"due": "2027-04-15"}', f
FROM generate_series(%(lo)s, %(hi)s) g,
     LATERAL (SELECT CASE WHEN g %% 10 = 0 THEN %(hot)s ELSE 'tc_tlf' || (g %% %(domains)s) END AS d,
                     %(t0)s::timestamptz + make_interval(mins => g %% 5000000) AS f) x
"""
FILL_OUTBOX = """
INSERT INTO timers_outbox (id, domain, brand_id, key, attempt, seq, transport, payload, status, error, created_at,
                           sent_at, claimed_by, tries)
SELECT 'sub_tlf' || g, CASE WHEN g %% 10 = 0 THEN %(hot)s ELSE 'tc_tlf' || (g %% %(domains)s) END, %(brand)s,
       'clk_tlf' || (g / 20) || '#US:rung:notice ' || (g %% 5) || 'd:2027@' || g, 1, 0, 'email', '{}', 'sent', '',
       now(), now(), '', 0
FROM generate_series(%(lo)s, %(hi)s, 2) g
"""
FILL_TIMERS = """
INSERT INTO timers_timer (id, domain, brand_id, key, owner, kind, place, handler, status, owed_at, opened_at, armed_at,
                          attempt, wakes, version, superseded_by, by, held_by, armed_by, tick_pass, data)
SELECT 'tmr_tlf' || g, CASE WHEN (g / 20) %% 10 = 0 THEN %(hot)s ELSE 'tc_tlf' || ((g / 20) %% %(domains)s) END,
       %(brand)s,
       'clk_tlf' || (g / 20) || '#US:due:file:2027@' || g, 'clk_tlf' || (g / 20) || '#US', 'due', 6, 'noop', 'armed',
       %(t0)s::timestamptz + interval '12 years' + make_interval(mins => g %% 100000), %(t0)s, %(t0)s, 0, 0, '', '',
       '', '', '', 1, '{}'
FROM generate_series(%(lo)s, %(hi)s, 20) g
"""


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--n", type=int, default=2_000_000, help="events in the large record")
    parser.add_argument("--history", type=int, default=5_000, help="the customer's own events")
    parser.add_argument("--jobs", type=int, default=40)
    parser.add_argument("--domains", type=int, default=200, help="other test clocks the fill spreads over")
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    setup_django()
    from django.core.management import call_command
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from calendars.models import Calendar, Subject
    from services.brands import brand_delete
    from services.models import Job
    from services.timeline import subject_timeline
    from timers.models import Brand, Event, Outbox, Timer
    from timers.tenants import brand_get_or_create
    from timers.test_clocks import test_clock_create

    if connection.vendor != "postgresql":
        print("timeline_growth: PostgreSQL only (set DATABASE_URL)")
        return 2
    call_command("migrate", verbosity=0)

    def sql(q: str, params=None) -> None:
        with connection.cursor() as cur:
            cur.execute(q, params)

    def maintain() -> None:
        connection.ensure_connection()
        auto = connection.get_autocommit()
        connection.set_autocommit(True)
        for table in ("timers_event", "timers_outbox", "timers_timer", "services_job", "calendars_clockitem"):
            sql(f"VACUUM ANALYZE {table}")
        sql("CHECKPOINT")
        connection.set_autocommit(auto)

    # -- a clean start: the bench's brand and fill gone ---------------------------------------------------------
    # The record, the outbox and the timers emptied whole (TRUNCATE: a DELETE of millions of rows would leave
    # them dead in the tables and their indexes, and the small size would read through that bloat).
    sql("TRUNCATE timers_event, timers_outbox, timers_timer")
    old = Brand.objects.filter(name=BRAND).first()
    if old is not None:
        brand_delete(brand=old)
    brand = brand_get_or_create(name=BRAND)
    tc = test_clock_create(brand=brand, frozen_time=T0, name="timeline bench")
    cal = Calendar.objects.create(brand=brand, name="Acme Robotics", zone="America/New_York")
    subject = Subject.objects.create(brand=brand, domain=tc.id, kind="taxpayer", key_name="ein", key="12-3456789",
                                     name="Acme Robotics", calendar=cal, created_at=T0)
    Job.objects.bulk_create([Job(brand=brand, domain=tc.id, service="annual-return", subject=subject,
                                 period=str(2018 + j // 4), opened_at=T0) for j in range(args.jobs)])
    jobs = list(Job.objects.filter(subject=subject).values_list("id", flat=True))
    events, sends = [], []
    for n in range(args.history):
        job, at = jobs[n % len(jobs)], T0 + timedelta(hours=17 * n)
        key = f"{job}:deadline:at_risk:{n}"
        events.append(Event(domain=tc.id, brand=brand, type="job.at_risk", subject=job, owed_at=at, fired_at=at,
                            key=key, data={"late_at": "2028-04-14T04:00:00Z"}))
        sends.append(Outbox(id=f"sub_tlh{n:08d}", domain=tc.id, brand=brand, key=key, attempt=1, transport="email",
                            payload={"messages": [{"to": ["ada@acme-robotics.example"]}]}, status="sent",
                            receipt={"emails": 1}, created_at=at))
    Event.objects.bulk_create(events, batch_size=2000)
    Outbox.objects.bulk_create(sends, batch_size=2000)
    Timer.objects.bulk_create([Timer(domain=tc.id, brand=brand, key=f"{job}:deadline:late:x", owner=job,
                                     kind="deadline", place=5, handler="noop", owed_at=T0 + timedelta(days=4000),
                                     opened_at=T0, armed_at=T0) for job in jobs])

    def read() -> tuple[int, int]:
        s = Subject.objects.select_related("calendar").get(pk=subject.pk)
        tl = subject_timeline(subject=s, domain=tc.id)
        rows, _ = tl.page(limit=100)
        return len(tl.entries), len([e.json() for e in rows])

    def measure() -> dict[str, float]:
        maintain()
        read()  # warm: the first read pays for the connection and the caches, not the record
        walls, cpus = [], []
        for _ in range(args.repeat):
            w, c = time.perf_counter(), time.process_time()
            with CaptureQueriesContext(connection) as got:
                entries, _ = read()
            walls.append(time.perf_counter() - w)
            cpus.append(time.process_time() - c)
        total = Event.objects.count()
        return {"events": total, "wall_ms": statistics.median(walls) * 1000, "cpu_s": statistics.median(cpus),
                "queries": len(got.captured_queries), "entries": entries}

    small = measure()
    params = {"brand": brand.id, "hot": tc.id, "domains": args.domains, "t0": T0}
    lo, started = 1, time.perf_counter()
    while small["events"] + lo - 1 < args.n:
        hi = min(lo + 999_999, args.n - small["events"])
        for q in (FILL_EVENTS, FILL_OUTBOX, FILL_TIMERS):
            sql(q, {**params, "lo": lo, "hi": hi})
        lo = hi + 1
    filled = time.perf_counter() - started
    large = measure()

    cpu = os.cpu_count()
    with connection.cursor() as cur:
        cur.execute("SHOW server_version")
        version = cur.fetchone()[0]
    print(f"timeline_growth · {platform.python_version()} · {cpu} CPUs · PostgreSQL {version} · "
          f"medians of {args.repeat} · fill {filled:.0f}s")
    print(f"customer: {args.jobs} jobs, {args.history} events, each with an email; {small['entries']} entries")
    print(f"{'record':>12}  {'wall ms':>9}  {'CPU s':>7}  {'queries':>7}  {'wall ×':>7}  {'CPU ×':>6}")
    for row in (small, large):
        print(f"{row['events']:>12,}  {row['wall_ms']:>9.1f}  {row['cpu_s']:>7.3f}  {row['queries']:>7}  "
              f"{row['wall_ms'] / small['wall_ms']:>7.2f}  {row['cpu_s'] / small['cpu_s']:>6.2f}")
    ratio = large["wall_ms"] / small["wall_ms"]
    same = small["entries"] == large["entries"] and small["queries"] == large["queries"]
    verdict = "meets" if ratio <= TARGET and same else "misses"
    print(f"verdict: the page at {large['events']:,} events takes {ratio:.2f}× its time at {small['events']:,} "
          f"(target ≤ {TARGET}×), in {large['queries']} queries both times: {verdict}")
    if not same:
        print("check failed: the customer's entries or the queries differ between the sizes")
        return 3
    return 0 if ratio <= TARGET else 1


if __name__ == "__main__":
    sys.exit(main())
