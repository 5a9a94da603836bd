"""Hot paths' statements captured while the real code runs, EXPLAINed as sent, and a world with production's skew to
run them on (tests/timers/test_query_plans.py, test_partitioning.py, test_metrics.py, test_record_growth.py)."""

from __future__ import annotations

import contextlib
import json
import weakref
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

import psycopg
import psycopg.sql
from django.conf import settings
from django.db import connection, transaction
from django.test import override_settings

from calendars.entries import subject_calendar
from calendars.models import ClockItem, Subject
from services.timeline import subject_timeline
from tests.support.acme import acme_subject, open_return
from timers import advance, live, outbox, prepared, transports
from timers.models import Event, TestClock
from timers.sql import outbox as outbox_sql
from timers.sql import sessions
from timers.store import SMALL_CLAIM, PostgresStore
from timers.test_clocks import test_clock_create

START = datetime(2027, 1, 20, 14, tzinfo=UTC)


TABLES = ("timers_timer", "timers_timer_armed", "timers_timer_history", "timers_outbox", "timers_event", "timers_commit", "timers_testclock", "calendars_subject",
          "calendars_clock", "calendars_clockitem")


DOMAINS = 40  # other clock domains beside the hot one


@dataclass
class Sent:
    sql: str
    params: object
    binary: bool  # the tick's psycopg cursor (server-side binding), else Django's cursor


@dataclass
class Capture:
    sent: list[Sent] = field(default_factory=list)

    def one(self, *needles: str) -> Sent:
        hits = [s for s in self.sent if all(n in s.sql for n in needles)]
        assert hits, f"no statement with {needles} among:\n" + "\n".join(s.sql[:160] for s in self.sent)
        return hits[0]


@contextlib.contextmanager
def capture(monkeypatch) -> Iterator[Capture]:
    got = Capture()

    class Recording(psycopg.Cursor):
        def execute(self, query, params=None, **kw):
            got.sent.append(Sent(query, params, True))
            return super().execute(query, params, **kw)

    def recording_cursor(self) -> psycopg.Cursor:
        connection.ensure_connection()
        return Recording(connection.connection)

    def wrapper(execute, sql, params, many, context):
        got.sent.append(Sent(sql, params, False))
        return execute(sql, params, many, context)

    with monkeypatch.context() as m:
        m.setattr(PostgresStore, "_cursor", recording_cursor)
        m.setattr(prepared, "new_cursor", lambda: recording_cursor(None))
        m.setattr(prepared, "_TICK_KEPT", weakref.WeakKeyDictionary())  # the small batches' cursors, made recording
        with connection.execute_wrapper(wrapper):
            yield got


def explain(s: Sent, *, verbose: bool = False, analyze: bool = False) -> dict:
    """The plan of a statement as it was sent, on the cursor it was sent on (VERBOSE adds each relation's schema;
    ANALYZE runs it, in the test's transaction, and says which nodes ran)."""
    head = "EXPLAIN (FORMAT JSON" + (", VERBOSE" if verbose else "") + (", ANALYZE" if analyze else "") + ") "
    if s.binary:
        with psycopg.Cursor(connection.connection) as cur:
            cur.execute(head + s.sql, s.params, binary=True)
            raw = cur.fetchone()[0]
    else:
        with connection.cursor() as cur:
            cur.execute(head + s.sql, s.params)
            raw = cur.fetchone()[0]
    return (json.loads(raw) if isinstance(raw, str) else raw)[0]["Plan"]


def explain_generic(s: Sent) -> dict:
    """The generic plan of a statement the tick's kept cursor prepares (``%b`` parameters): the plan the server
    keeps for it once it prefers it to planning each execution (plan_cache_mode auto picks it after five). PostgreSQL
    15 has no EXPLAIN (GENERIC_PLAN): the statement is PREPAREd with its parameters' types inferred, and EXPLAINed
    with plan_cache_mode forcing the generic plan, in a savepoint that undoes the setting."""
    assert s.binary, "a kept cursor's statement"
    parts = s.sql.split("%b")
    sql = "".join(f"{part}${n}" if n < len(parts) else part for n, part in enumerate(parts, 1))
    with transaction.atomic(), psycopg.Cursor(connection.connection) as cur:
        cur.execute("SET LOCAL plan_cache_mode = force_generic_plan")
        cur.execute(f"PREPARE kt_generic AS {sql}")
        try:
            # The values as literals, which EXECUTE coerces to the types the PREPARE inferred.
            args = psycopg.sql.SQL(", ").join(psycopg.sql.Literal(v) for v in s.params)
            cur.execute(psycopg.sql.SQL("EXPLAIN (FORMAT JSON) EXECUTE kt_generic({})").format(args))
            raw = cur.fetchone()[0]
        finally:
            cur.execute("DEALLOCATE kt_generic")
    return (json.loads(raw) if isinstance(raw, str) else raw)[0]["Plan"]


def nodes(plan: dict) -> Iterator[dict]:
    yield plan
    for sub in plan.get("Plans", []):
        yield from nodes(sub)


def text(plan: dict, depth: int = 0) -> str:
    """The plan as one line per node, for failure messages."""
    bits = [plan["Node Type"], plan.get("Relation Name", ""), plan.get("Index Name", "")]
    out = "  " * depth + " ".join(b for b in bits if b)
    return "\n".join([out, *(text(p, depth + 1) for p in plan.get("Plans", []))])


def _empty_month(relation: str) -> bool:
    """A month of timer history with no rows yet (made ahead, or a month nothing left in): reading it whole reads
    nothing, which is what the planner rightly does once it knows."""
    if not relation.startswith("timers_timer_history_"):
        return False
    with connection.cursor() as cur:
        cur.execute(f'SELECT NOT EXISTS (SELECT 1 FROM "{relation}")')
        return cur.fetchone()[0]


def check(plan: dict, index: str, *, ordered: bool) -> None:
    shown = text(plan)
    seq = [n.get("Relation Name") for n in nodes(plan)
           if n["Node Type"] == "Seq Scan" and n.get("Relation Name", "").startswith(("timers_", "calendars_"))
           and not _empty_month(n["Relation Name"])]
    assert not seq, f"Seq Scan on {seq}:\n{shown}"
    # A lookup of a few rows may read its index through a bitmap; rows taken in order must come out of it in order.
    scans = ("Index Scan", "Index Only Scan") if ordered else ("Index Scan", "Index Only Scan", "Bitmap Index Scan")
    assert any(n["Node Type"] in scans and n.get("Index Name", "").startswith(index)
               for n in nodes(plan)), f"no {' or '.join(scans)} on {index}:\n{shown}"
    if ordered:
        sorts = [n["Node Type"] for n in nodes(plan) if "Sort" in n["Node Type"]]
        assert not sorts, f"{sorts}: the rows should come out of {index} in order:\n{shown}"


@dataclass
class World:
    hot: TestClock
    subject_id: str
    owed_to: datetime


def make_world(brand) -> World:
    # The filled brand has thousands of test clocks (fill's domains): past the quota a brand's API would keep.
    with override_settings(KEEPING_TIME={**settings.KEEPING_TIME,
                                         "QUOTAS": {**(settings.KEEPING_TIME.get("QUOTAS") or {}), "test_clocks": 0}}):
        return _make_world(brand)


def _make_world(brand) -> World:
    hot = test_clock_create(brand=brand, frozen_time=START, name="hot")
    transports.register("notices", transports.RecordingTransport())
    subject = acme_subject(brand, hot.id)
    open_return(brand, hot, subject)
    # One kept date kept "with" a sibling's move, so the calendar reads how (the clock.satisfied events).
    item = ClockItem.objects.filter(clock__subject=subject).order_by("due_at").first()
    ClockItem.objects.filter(pk=item.pk).update(status="satisfied", satisfied_at=START)
    Event.objects.create(domain=hot.id, brand=brand, type="clock.satisfied", subject=item.owner_key,
                         data={"with": "the extension"}, fired_at=START)
    # The advance queue: one requested advance (of an empty clock, to where it stands), one dead delete.
    queued = test_clock_create(brand=brand, frozen_time=START, name="queued")
    TestClock.objects.filter(pk=queued.pk).update(status="advancing", advance_to=START)
    gone = test_clock_create(brand=brand, frozen_time=START, name="gone")
    TestClock.objects.filter(pk=gone.pk).update(status="deleting")
    with connection.cursor() as cur:
        # Owed noop timers on the hot clock: the tick fetches them in batches and flushes them.
        cur.execute(
            """INSERT INTO timers_timer (id, domain, brand_id, key, owner, kind, place, handler, status, owed_at,
                   opened_at, armed_at, attempt, wakes, version, superseded_by, by, held_by, armed_by, tick_pass, data)
               SELECT 'tmr_hot' || g, %s, %s, 'job_hot' || g || ':task:plan:2027', 'job_hot' || g, 'task', 4,
                      'noop', 'armed', %s + make_interval(mins => g), %s, %s, 0, 0, '', '', '', '', '', 1, '{}'
               FROM generate_series(1, 12) g""", [hot.id, brand.id, START, START, START])
        # Owed sends on the hot clock, to a transport of this test.
        cur.execute(
            """INSERT INTO timers_outbox (id, domain, brand_id, key, attempt, seq, transport, payload, status,
                   error, created_at, claimed_by, tries)
               SELECT 'sub_hot' || g, %s, %s, 'job_hot' || g || ':task:plan:2027', 1, 0, 'plans', '{}', 'pending',
                      '', now() - interval '1 minute', '', 0
               FROM generate_series(1, 5) g""", [hot.id, brand.id])
    return World(hot=hot, subject_id=subject.id, owed_to=START + timedelta(hours=1))


SKEWS = {
    "prod": {"armed": 31, "superseded": 5, "pending": 16, "advancing": 0, "deleted": 3},
    "young": {"armed": 1, "superseded": 1000003, "pending": 1, "advancing": 2, "deleted": 1000003},
}


def armed_later(brand, hot: str, n: int) -> None:
    """``n`` timers armed for later, over every domain: the armed table alone is what the tick reads on
    PostgreSQL (timers/history.py), and a runtime with many subscribers owes many dates ahead of the hour."""
    with connection.cursor() as cur:
        cur.execute(
            f"""INSERT INTO timers_timer (id, domain, brand_id, key, owner, kind, place, handler, status, owed_at,
                   opened_at, armed_at, attempt, wakes, version, superseded_by, by, held_by, armed_by, tick_pass, data)
               SELECT 'tmr_later' || g, CASE WHEN g %% 7 = 0 THEN %s ELSE 'tc_other' || (g %% {DOMAINS}) END, %s,
                      'job_later' || g || ':task:plan:2027', 'job_later' || g, 'task', 4, 'noop', 'armed',
                      %s + make_interval(days => 30 + g %% 400), %s, %s, 0, 0, '', '', '', '', '', 1, '{{}}'
               FROM generate_series(1, %s) g""", [hot, brand.id, START, START, START, n])


def fill(brand, hot: str, n: int, skew: str = "prod") -> None:
    """``n`` timers, events and submissions over DOMAINS other domains and the hot one (every 7th row), and
    n/20 test clocks, and n/20 subjects elsewhere with a clock of three items each. In production's skew a
    row in 31 is an armed timer and one in 16 a pending submission (the rest fired, superseded, sent), a clock
    is ready or deleted; in a young table's nearly every row is armed or pending, and clocks advancing. The
    hot clock's own few owed sends are make_world's (the backlog test has a domain with many)."""
    k = SKEWS[skew]
    p = {"n": n, "m": n // 20, "b": brand.id, "t": START - timedelta(days=30), "hot": hot, "d": DOMAINS, "tag": skew,
         **{f"k_{name}": v for name, v in k.items()}}
    domain = "CASE WHEN g %% 7 = 0 THEN %(hot)s ELSE 'tc_other' || (g %% %(d)s) END"
    with connection.cursor() as cur:
        cur.execute(
            f"""INSERT INTO timers_timer (id, domain, brand_id, key, owner, kind, place, handler, status, owed_at,
                   opened_at, armed_at, fired_at, attempt, wakes, version, superseded_by, by, held_by, armed_by,
                   tick_pass, data)
               SELECT 'tmr_' || %(tag)s || g, {domain}, %(b)s, 'job_' || %(tag)s || g || ':rung:notice 30d:2027',
                      'job_' || %(tag)s || g, 'rung', 4, 'noop', s,
                      CASE WHEN s = 'armed' THEN %(t)s + make_interval(days => g %% 400) END,
                      %(t)s, %(t)s, CASE WHEN s = 'fired' THEN %(t)s END, 1, 1, '', '', '', '', '', 1, '{{}}'
               FROM generate_series(1, %(n)s) g,
                    LATERAL (SELECT CASE WHEN g %% %(k_armed)s = 0 THEN 'armed'
                                         WHEN g %% %(k_superseded)s = 0 THEN 'superseded' ELSE 'fired' END AS s) x""", p)
        cur.execute(
            f"""INSERT INTO timers_event (id, domain, brand_id, type, subject, owed_at, key, data, fired_at)
               SELECT 'evt_' || %(tag)s || g, {domain}, %(b)s,
                      CASE WHEN g %% 50 = 0 THEN 'clock.satisfied' ELSE 'timer.fired' END,
                      'clk_' || %(tag)s || g || '#US', %(t)s, 'job_' || %(tag)s || g || ':rung:notice 30d:2027',
                      '{{"with": "x"}}', %(t)s
               FROM generate_series(1, %(n)s) g""", p)
        cur.execute(
            f"""INSERT INTO timers_outbox (id, domain, brand_id, key, attempt, seq, transport, payload, status, error,
                   created_at, sent_at, claimed_by, tries)
               SELECT 'sub_' || %(tag)s || g, {domain}, %(b)s, 'job_' || %(tag)s || g || ':rung:notice 30d:2027',
                      1, 0, 'plans', '{{}}',
                      CASE WHEN g %% %(k_pending)s = 0 AND g %% 7 <> 0 THEN 'pending' ELSE 'sent' END, '',
                      now() - make_interval(secs => %(n)s - g + 120), now(), 'pg:1:0', 0
               FROM generate_series(1, %(n)s) g""", p)
        cur.execute(
            """INSERT INTO timers_testclock (id, brand_id, name, frozen_time, status, advance_to, redeliver, failure,
                   seed, created_at)
               SELECT 'tc_' || %(tag)s || g, %(b)s, '', %(t)s, s, CASE WHEN s = 'advancing' THEN %(t)s END, false,
                      '', '', now() - interval '1 day'
               FROM generate_series(1, %(m)s) g,
                    LATERAL (SELECT CASE WHEN %(k_advancing)s > 0 AND g %% %(k_advancing)s = 0 THEN 'advancing'
                                         WHEN g %% %(k_deleted)s = 0 THEN 'deleted' ELSE 'ready' END AS s) x""", p)
        cur.execute(
            f"""INSERT INTO calendars_subject (id, brand_id, domain, kind, key_name, key, name, keeps, input,
                   feed_digest, created_at, metadata)
               SELECT 'sbj_' || %(tag)s || g, %(b)s, {domain.replace("%(hot)s", "'tc_elsewhere'")}, 'taxpayer',
                      'ein', %(tag)s || g, 'x', '{{}}', '{{}}', '', now(), '{{}}'
               FROM generate_series(1, %(m)s) g""", p)
        cur.execute(
            """INSERT INTO calendars_clock (id, brand_id, domain, subject_id, spec, name, title, lives_on, owner_ref,
                   period, hard, answers_for, role, assigned, version, inputs, opened_at)
               SELECT 'clk_' || %(tag)s || g, s.brand_id, s.domain, s.id, 'x', 'file', '', 'job',
                      'job_' || %(tag)s || g, '2027', false, '', 'customer', false, '', '{}', now()
               FROM generate_series(1, %(m)s) g JOIN calendars_subject s ON s.id = 'sbj_' || %(tag)s || g""", p)
        cur.execute(
            """INSERT INTO calendars_clockitem (clock_id, item, civil, due_date, due_at, rolled_why, moves, reopened,
                   status, changed_at)
               SELECT 'clk_' || %(tag)s || g, i, '2027-04-15', '2027-04-15', now(), '', 0, 0, 'open', now()
               FROM generate_series(1, %(m)s) g, unnest(ARRAY['US', 'US-CA', 'US-NY']) i""", p)


def forget_statistics() -> None:
    """As if never analyzed: what a table has before its first ANALYZE (rolled back with the test)."""
    with connection.cursor() as cur:
        cur.execute("DELETE FROM pg_statistic WHERE starelid = ANY(%s::regclass[])", [list(TABLES)])
        cur.execute("UPDATE pg_class SET reltuples = -1, relpages = 0 WHERE oid = ANY(%s::regclass[])",
                    [list(TABLES)])


def analyze() -> None:
    with connection.cursor() as cur:
        for table in TABLES:
            cur.execute(f"ANALYZE {table}")


def fill_new_domain(brand, hot: str, n: int = 8760) -> None:
    """A year of an hourly schedule on the hot clock, written after the last ANALYZE: its fired fire timers
    and its sends, nearly all sent, the last few hundred still owed."""
    p = {"n": n, "b": brand.id, "t": START, "hot": hot}
    with connection.cursor() as cur:
        cur.execute(
            """INSERT INTO timers_timer (id, domain, brand_id, key, owner, kind, place, handler, status, owed_at,
                   opened_at, armed_at, fired_at, attempt, wakes, version, superseded_by, by, held_by, armed_by,
                   tick_pass, data)
               SELECT 'tmr_year' || g, %(hot)s, %(b)s, 'sch_year:schedule:fire:' || g, 'sch_year', 'schedule', 2,
                      'noop', 'fired', %(t)s - make_interval(hours => g), %(t)s, %(t)s, %(t)s, 1, 1, '', '', '', '',
                      '', 1, '{}'
               FROM generate_series(1, %(n)s) g""", p)
        cur.execute(
            """INSERT INTO timers_outbox (id, domain, brand_id, key, attempt, seq, transport, payload, status, error,
                   created_at, sent_at, claimed_by, tries)
               SELECT 'sub_year' || g, %(hot)s, %(b)s, 'sch_year:schedule:fire:' || g, 1, 0, 'plans', '{}',
                      CASE WHEN g > %(n)s - 500 THEN 'pending' ELSE 'sent' END, '',
                      now() - make_interval(secs => %(n)s - g + 120), now(), '', 0
               FROM generate_series(1, %(n)s) g""", p)


def prepare(brand, state: str, n: int = 40_000) -> World:
    if state == "never":
        forget_statistics()
    if state == "new":  # the others' rows analyzed; then a clock the statistics never saw, and its year
        fill(brand, "tc_before", n)
        analyze()
        world = make_world(brand)
        transports.register("plans", transports.RecordingTransport())  # the year's owed sends, if a path sends them
        fill_new_domain(brand, world.hot.id)
        return world
    world = make_world(brand)
    if state == "stale":
        fill(brand, world.hot.id, n // 20, "young")
        analyze()  # the hot states are nearly all there is yet
    fill(brand, world.hot.id, n)
    armed_later(brand, world.hot.id, n)
    if state == "fresh":
        analyze()
    return world


@contextlib.contextmanager
def undone() -> Iterator[None]:
    """Run a hot path for its SQL, then put the rows back: every hot path sees the same data."""
    with transaction.atomic():
        yield
        transaction.set_rollback(True)


@dataclass
class Hot:
    name: str
    needles: tuple[str, ...]  # picks the statement out of what its path sent
    index: str
    ordered: bool = False
    generic: bool = False  # prepared on the tick's kept cursor: its generic plan is checked too (explain_generic)


def drive(world: World, monkeypatch, settings) -> dict[str, tuple[Capture, Hot]]:
    """Each hot path run for real, with the statements it sent."""
    hot = world.hot.id
    runs: dict[str, tuple[Capture, list[Hot]]] = {}

    def run(label: str, fn: Callable[[], object], *hots: Hot) -> None:
        with capture(monkeypatch) as got, undone():
            fn()
        runs[label] = (got, list(hots))

    # The tick on the hot clock, in batches of 5 so the second batch continues from the first's last row.
    settings.KEEPING_TIME = {**settings.KEEPING_TIME, "BATCH_SIZE": 5}
    run("tick", lambda: advance.advance(hot, world.owed_to),
        Hot("tick: fetch the first batch (store.fetch)", ("FROM timers_timer WHERE domain", "LIMIT"),
            "timer_tick_order", ordered=True, generic=True),
        Hot("tick: fetch the next batch (store.fetch, keyset)", ("FROM timers_timer WHERE domain", ") > ("),
            "timer_tick_order", ordered=True, generic=True),
        Hot("tick: flush the batch's timers (store.write)", ("UPDATE timers_timer AS t",), "timers_timer_pkey"),
        Hot("tick: the batch's guard (lease.Held.fence_locking)", ("FROM timers_testclock", "FOR NO KEY UPDATE"),
            "timers_testclock_pkey"))
    store = PostgresStore()
    # The largest claim whose limit is written in its prepared statement (store.SMALL_CLAIM), on a live clock's domain:
    # its generic plan is the one the server keeps.
    run("small claim", lambda: store.fetch(f"live_{world.hot.brand_id}", world.owed_to, None, SMALL_CLAIM),
        Hot("tick: a small batch's claim (store.fetch, its limit written in)", ("FROM timers_timer WHERE domain",
                                                                                f"LIMIT {SMALL_CLAIM}"),
            "timer_tick_order", ordered=True, generic=True))
    run("load", lambda: store.load(hot, "job_hot3:task:plan:2027"),
        Hot("tick: load a timer by (domain, key) (store.load)", ("FROM timers_timer WHERE domain = (SELECT %b::varchar) AND key = %b",),
            "timer_key_unique_per_domain"))
    run("next_owed", lambda: live.next_owed(hot),
        Hot("live loop: the next owed instant (live.next_owed)", ('"timers_timer"."owed_at" AS "owed_at" FROM', "ORDER BY"),
            "timer_tick_order", ordered=True))
    me = sessions.sender_id()
    run("claim", lambda: outbox._claim(hot, me, outbox.CLAIM),
        Hot("outbox: claim a domain's owed sends (outbox._claim)", ("WITH live AS",), "outbox_owed_domain",
            ordered=True),
        # The claim's UPDATE finds each picked row by its key, never by walking the domain's rows per row.
        Hot("outbox: the claim's update of the picked rows (outbox._claim)", ("WITH live AS",),
            "timers_outbox_pkey"))
    run("sweep", outbox_sql.owed_domains,
        Hot("outbox: the domains that owe sends (sql.outbox.owed_domains, the worker loop's sweep)",
            ("WITH RECURSIVE d",), "outbox_owed_domain", ordered=True))
    transport = transports.RecordingTransport()
    transports.register("plans", transport)
    run("settle", lambda: outbox.settle(hot),
        Hot("outbox settle: record receipts (sql.outbox.record)", ("SET status = 'sent'",), "timers_outbox_pkey"),
        Hot("outbox settle: sends held elsewhere (outbox._held_elsewhere)", ("COUNT(*)", '"timers_outbox"'),
            "outbox_owed_domain"))
    assert sum(transport.received.values()) >= 5  # the hot clock's sends went (then were undone)
    run("advances", lambda: advance.run_requested_advances(limit=1),
        Hot("tick: claim a requested advance (advance.run_requested_advances)", ("SKIP LOCKED", '"timers_testclock"'),
            "test_clock_advance_queue"))
    run("deletes", advance.finish_deletes,
        Hot("tick: finish dead deletes (advance.finish_deletes)", ('"timers_testclock"."status" = %s LIMIT 10',),
            "test_clock_deleting"))
    run("calendar", lambda: subject_calendar(Subject.objects.get(pk=world.subject_id)),
        Hot("calendar: a subject's clock items (entries.clock_entries)", ('"calendars_clockitem"', "INNER JOIN"),
            "clock_subject"),
        Hot("calendar: how kept dates were kept (entries.clock_entries)", ('"timers_event"', '"subject" IN'),
            "event_clock_satisfied"),
        Hot("calendar: a subject's rungs (entries._rung_entries)", ('"timers_timer"', '"owner" IN'),
            "timer_domain_owner"),
        Hot("calendar: the clock domain's now (domains.domain_now)", ('SELECT "timers_testclock"."frozen_time" AS',),
            "timers_testclock_pkey"))
    run("timeline", lambda: subject_timeline(subject=Subject.objects.select_related("calendar").get(pk=world.subject_id),
                                             domain=hot),
        Hot("timeline: a customer's dates (services.timeline)", ('"calendars_clockitem"', "INNER JOIN"),
            "clock_subject"),
        Hot("timeline: a customer's events, every owner's (services.timeline)", ('"timers_event"', '"subject" IN'),
            "event_domain_subject"),
        Hot("timeline: their sends, by key (services.timeline)", ('FROM "timers_outbox"',),
            "outbox_one_submission_per_send"),
        Hot("timeline: what is armed ahead (services.timeline)", ('"timers_timer"', '"owner" IN'),
            "timer_domain_owner"))
    return runs
