"""The record at 10M events: the tick's batch INSERT, a subject's history and a domain's newest page, 10k against 10M.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/kt_record_bench .venv/bin/python bench/record_growth.py \
        [--n 10000000] [--small 10000] [--domains 1000] [--repeat 3] [--calls 15]

Use a database of its own: it empties timers_event (and its bench brands) at the start, and leaves the N
events behind. PostgreSQL only.

The events are written the way a year of ticks leaves them, each fill in ONE ``INSERT … SELECT FROM
generate_series`` (not timed): --domains test-clock domains, one brand each, skewed (domain k holds about
(k+1)^(1/3) - k^(1/3) of the record: the busiest a tenth), 15 months of ``fired_at`` rising with ``seq``,
random-looking ``evt_`` ids as ``timers.ids.new_id`` makes them, jobs living about a fortnight with about 20
events each (``timer.fired`` mostly, some ``clock.satisfied``, ``job.at_risk``, ``clock.moved``), keys under
their job. First --small events, VACUUM ANALYZE, CHECKPOINT, measured; then the rest up to --n, VACUUM
ANALYZE, CHECKPOINT, measured again. Timed, each --repeat times (the figure is the median of the repeats):

(a) the tick's batch INSERT: ``PostgresStore.write`` with 2,000 new events of the busiest domain, fired
    now (after the newest fill row), the real statement; each batch in a transaction rolled back, so both
    sizes stay put; --calls batches a repeat, median ms a batch.
(b) a subject's history, the ORM shapes the code sends: the owner console's at-risk jobs
    (portals/owner/risks.py), the calendar's kept-with (calendars/entries.py), the gate replay's events
    by key (timers/record.py commit_json), a calendar's rung events by keys (entries._rung_entries),
    and a subject's whole history in order (``domain`` and ``subject``, by ``seq``); --calls subjects of
    the busiest domain a repeat, p50 and p95 ms.
(c) the API's event list (``GET /v1/events?test_clock=…&starting_after=…``: ``page()`` over ``owned()``
    as timers/selectors.py builds it), a page of 100 starting at an event early in the newest month of the
    busiest domain; p50 and p95 ms.

Each figure is printed at both sizes with the ratio 10M/10k, measured in the same run.
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

T0 = datetime(2026, 1, 1, tzinfo=UTC)
SPAN = timedelta(days=470)  # 15 months and a half of record: the newest month is half full
BRAND = "br_rg"  # the bench's brands are br_rg0 … br_rg{domains-1}; domain k is tc_rg{k}, owned by br_rgk
HOT = "tc_rg0"  # the busiest domain (the skew puts a tenth of the record there)

FILL = """
INSERT INTO timers_event (id, domain, brand_id, type, subject, owed_at, key, data, fired_at, late_by)
SELECT 'evt_' || translate(substr(encode(decode(md5(random()::text || g), 'hex'), 'base64'), 1, 14), '+/', 'xZ'),
       'tc_rg' || k, 'br_rg' || k, t, s, f - interval '30 seconds', s || ':rung:notice ' || (g %% 5) || 'd:2027',
       CASE WHEN t = 'clock.satisfied' AND g %% 3 = 0 THEN '{"with": "the extension"}' ELSE '{"attempt": 1}' END::jsonb,
       f, interval '0'
FROM generate_series(%(lo)s, %(hi)s) g,
     LATERAL (SELECT floor(%(d)s * power(random(), 3))::int AS k,
                     %(t0)s::timestamptz + make_interval(secs => (g - %(lo)s) * %(span)s / (%(hi)s - %(lo)s + 1)) AS f,
                     CASE WHEN g %% 100 < 80 THEN 'timer.fired' WHEN g %% 100 < 84 THEN 'clock.satisfied'
                          WHEN g %% 100 < 87 THEN 'job.at_risk' WHEN g %% 100 < 92 THEN 'clock.moved'
                          ELSE 'job.opened' END AS t) x,
     -- a job lives about a fortnight (the half month it was opened in) and gathers about 20 events
     LATERAL (SELECT 'job_' || substr(md5(k || '.' || floor((g - %(lo)s)::float8 * 30 / (%(hi)s - %(lo)s + 1))
                                       || '.' || floor(random() * greatest(1, %(per)s * (power((k + 1.0) / %(d)s, 1.0 / 3)
                                                                                         - power(k::float8 / %(d)s, 1.0 / 3))))),
                                  1, 14) AS s) y
"""


def pct(xs: list[float], p: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, round(p * (len(xs) - 1)))]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--n", type=int, default=10_000_000)
    parser.add_argument("--small", type=int, default=10_000)
    parser.add_argument("--domains", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--calls", type=int, default=15)
    parser.add_argument("--batch", type=int, default=2000)
    args = parser.parse_args()
    setup_django()
    from django.core.management import call_command
    from django.db import connection, transaction
    from django.db.models import Max, Min

    from portals.owner.selectors import in_as_of
    from timers.ids import new_id
    from timers.models import Brand, Event
    from timers.record import event_json
    from timers.selectors import owned, page
    from timers.store import PostgresStore

    if connection.vendor != "postgresql":
        print("record_growth: PostgreSQL only (set DATABASE_URL)")
        return 2
    call_command("migrate", verbosity=0)

    def sql(q: str, params=None):
        with connection.cursor() as cur:
            cur.execute(q, params or [])
            return cur.fetchall() if cur.description else None

    def maintain() -> None:
        connection.ensure_connection()
        auto = connection.get_autocommit()
        connection.set_autocommit(True)
        sql("VACUUM ANALYZE timers_event")
        sql("CHECKPOINT")
        connection.set_autocommit(auto)

    print(f"machine: {os.cpu_count()} CPU, {platform.platform()}, Python {platform.python_version()}")
    server = sql("SELECT version(), current_setting('shared_buffers'), current_setting('synchronous_commit'), "
                 "current_setting('autovacuum')")[0]
    print(f"server: {server[0].split(' on ')[0]}, shared_buffers {server[1]}, synchronous_commit {server[2]}, "
          f"autovacuum {server[3]}")
    parts = sql("SELECT count(*) FROM pg_inherits WHERE inhparent = 'timers_event'::regclass")[0][0]
    indexes = [r[0] for r in sql("SELECT indexname FROM pg_indexes WHERE tablename = 'timers_event' ORDER BY 1")]
    print(f"schema: timers_event {'partitioned, ' + str(parts) + ' partitions' if parts else 'one table'}; "
          f"indexes {', '.join(indexes)}")

    sql("TRUNCATE timers_event")
    sql("DELETE FROM timers_brand WHERE id LIKE 'br\\_rg%%'")
    sql("INSERT INTO timers_brand (id, name, tier, created_at) SELECT 'br_rg' || k, 'record growth ' || k, 'team', "
        "now() FROM generate_series(0, %s) k", [args.domains - 1])
    brand = Brand.objects.get(pk=BRAND + "0")
    brand.livemode = False  # as a test key's request would carry it (timers/api/auth.py)
    store = PostgresStore()

    def fill(lo: int, hi: int) -> float:
        t = time.perf_counter()
        # per: jobs a domain gathers in a half month, over the whole record (about 20 events a job)
        sql(FILL, {"lo": lo, "hi": hi, "d": args.domains, "t0": T0, "span": SPAN.total_seconds(),
                   "per": (hi - lo + 1) / 30 / 20})
        took = time.perf_counter() - t
        maintain()
        return took

    def timed(fn) -> float:
        t = time.perf_counter()
        fn()
        return (time.perf_counter() - t) * 1000

    def rolled_back(fn) -> float:
        with transaction.atomic():
            ms = timed(fn)
            transaction.set_rollback(True)
        return ms

    def measure(since: int) -> dict[str, tuple[float, float]]:
        """Each figure: (p50, p95) in ms, the median over the repeats. ``since``: the seq the last fill began after."""
        newest = Event.objects.filter(domain=HOT).aggregate(m=Max("fired_at"))["m"]
        month = newest.replace(day=1, hour=0, minute=0, second=0, microsecond=0)
        cursor_id = (Event.objects.filter(domain=HOT, fired_at__gte=month, seq__gt=since).order_by("seq")
                     .values_list("id", flat=True).first())
        lo, hi = Event.objects.filter(domain=HOT).aggregate(lo=Min("seq"), hi=Max("seq")).values()
        # Subjects of the busiest domain spread over the record, each with its keys and the jobs beside it.
        subjects = [sql("SELECT subject FROM timers_event WHERE domain = %s AND seq >= %s ORDER BY seq LIMIT 1",
                        [HOT, lo + (hi - lo) * (i + 1) // (args.calls + 1)])[0][0] for i in range(args.calls)]
        keys = {s: list(Event.objects.filter(domain=HOT, subject=s).values_list("key", flat=True).distinct()[:5])
                for s in subjects}
        at = type("AsOf", (), {"domain": HOT, "brand_ids": [brand.id]})()
        scope = owned(Event.objects.all(), brand)

        shapes = {
            "subject: at-risk jobs (dashboard)": lambda s: set(
                in_as_of(Event.objects.filter(type="job.at_risk", subject__in=[s, s + "x"]), at)
                .values_list("subject", flat=True)),
            "subject: kept-with (calendar)": lambda s: dict(
                Event.objects.filter(domain=HOT, type="clock.satisfied", data__has_key="with", subject__in=[s])
                .values_list("subject", "data__with")),
            "key: gate replay events": lambda s: list(
                Event.objects.filter(domain=HOT, key=keys[s][0]).order_by("seq").values_list("id", flat=True)),
            "keys: rung events (calendar)": lambda s: list(
                Event.objects.filter(domain=HOT, key__in=keys[s]).order_by("seq")
                .values_list("key", "type", "data")),
            "subject: whole history by seq": lambda s: list(
                Event.objects.filter(domain=HOT, subject=s).order_by("seq").values_list("seq", "type", "key")),
        }
        out: dict[str, list[tuple[float, float]]] = {}
        for _ in range(args.repeat):
            batches = []
            for _ in range(args.calls):
                now = newest + timedelta(seconds=1)
                # A batch fires the owed timers of many jobs: their subjects and keys fall anywhere in the domain.
                jobs = [new_id("job", length=10) for _ in range(args.batch)]
                events = [(new_id("evt"), HOT, brand.id, "timer.fired", job, now, f"{job}:rung:notice 30d:2027",
                           {"attempt": 1}, now, timedelta(0)) for job in jobs]
                batches.append(rolled_back(lambda ev=events: store.write(domain=HOT, new=[], changed=[], commits=[],
                                                                         events=ev, sends=[])))
            out.setdefault(f"(a) INSERT {args.batch} events (store.write)", []).append(
                (statistics.median(batches), pct(batches, 0.95)))
            every = []
            for name, fn in shapes.items():
                ms = [timed(lambda s=s, fn=fn: fn(s)) for s in subjects]
                every.append(ms)
                out.setdefault(f"(b) {name}", []).append((statistics.median(ms), pct(ms, 0.95)))
            total = [sum(col) for col in zip(*every, strict=True)]
            out.setdefault("(b) all five for one subject", []).append((statistics.median(total), pct(total, 0.95)))
            pages = [timed(lambda: page(scope.filter(domain=HOT), scope=scope, order=("seq",), lookup="id",
                                        params={"limit": 100, "starting_after": cursor_id}, url="/events",
                                        render=lambda rows: [event_json(e) for e in rows], what="event"))
                     for _ in range(args.calls)]
            out.setdefault("(c) API list: a newest-month page of 100", []).append(
                (statistics.median(pages), pct(pages, 0.95)))
        return {k: (statistics.median(v[0] for v in vs), statistics.median(v[1] for v in vs)) for k, vs in out.items()}

    def last_seq() -> int:
        return Event.objects.aggregate(m=Max("seq"))["m"] or 0

    since = last_seq()
    took = fill(1, args.small)
    small = measure(since)
    print(f"filled {args.small:,} events in {took:.1f} s")
    since = last_seq()
    took = fill(args.small + 1, args.n)
    size = sql("SELECT pg_size_pretty(pg_total_relation_size('timers_event')), "
               "(SELECT count(*) FROM timers_event WHERE domain = %s)", [HOT])[0]
    print(f"filled to {args.n:,} events in {took:.1f} s: {size[0]} with indexes; the busiest domain holds {size[1]:,}")
    big = measure(since)
    print(f"\n{'ms (p50 / p95), median of ' + str(args.repeat):52} {args.small:>14,} {args.n:>16,}  ratio p50  p95")
    for name, (p50, p95) in small.items():
        b50, b95 = big[name]
        print(f"{name:52} {p50:7.2f} / {p95:6.2f} {b50:8.2f} / {b95:6.2f}  {b50 / p50:8.2f} {b95 / p95:5.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
