"""Every hot-path query stays an index scan on its named index, whatever the statistics say (PostgreSQL only).

The hot paths' SQL is captured while the real code runs (the tick's own psycopg cursor in timers/store.py,
and Django's cursor through ``connection.execute_wrapper``), then each statement is EXPLAINed as it was
sent. The tables hold the skew production has: many rows in the states nothing hot reads (fired timers,
sent submissions, ready or deleted test clocks, other subjects' clocks and events), few in the hot states,
across many clock domains. Three states of the statistics, because autovacuum may be off:

* ``never``: the tables were never analyzed (pg_class.reltuples = -1, no pg_statistic rows);
* ``stale``: analyzed while small and skewed the other way (the hot states were nearly all there was),
  then filled: the planner believes most rows are armed, pending, advancing;
* ``fresh``: analyzed after the fill.
* ``new``: analyzed after the fill, then a new clock domain's rows written (a year of an hourly schedule's
  fires and sends, as every new test clock's first big advance writes): the statistics have never seen the
  domain, so the planner believes it holds one row of each table.

In each, every hot query must use an Index Scan (or Index Only Scan) on the index named for it, no table of
the runtime may be read with a Seq Scan, and a query that takes rows in an order must take them in the
index's order (no Sort node), so that its LIMIT stops the scan whatever the planner thinks it will find.
"""

from __future__ import annotations

import psycopg
import pytest
from django.db import connection

from tests.support.plans import (
    DOMAINS,
    START,
    analyze,
    capture,
    check,
    drive,
    explain,
    explain_generic,
    forget_statistics,
    nodes,
    prepare,
    text,
    undone,
)
from timers import outbox
from timers.models import Outbox
from timers.sql import outbox as outbox_sql
from timers.sql import sessions
from timers.store import PostgresStore
from timers.test_clocks import test_clock_create

pytestmark = [
    pytest.mark.postgresql("plans are PostgreSQL's: SQLite has no EXPLAIN (FORMAT JSON) and no partial-index planner"),
    pytest.mark.django_db,
]

# timers_timer is split on PostgreSQL (timers/history.py): its armed table and its history's partitions have
# statistics of their own, forgotten and gathered with the rest.


# -- capturing what the real code sends -------------------------------------------------------------------


# -- the data: a real subject on a real clock, and the skew around them -------------------------------------


# The two skews: a table in production (most rows long done) and a young one (most rows still owed).


# -- the hot paths, driven for real --------------------------------------------------------------------------


@pytest.mark.parametrize("state", ["never", "stale", "fresh", "new"])
def test_every_hot_path_is_an_index_scan_on_its_index(brand, state, monkeypatch, settings):
    # The fill's thousands of test clocks are the brand's: no quota on them here (timers/quotas.py).
    settings.KEEPING_TIME = {**settings.KEEPING_TIME, "QUOTAS": {**(settings.KEEPING_TIME.get("QUOTAS") or {}),
                                                                 "test_clocks": None}}
    world = prepare(brand, state)
    sent, pending = (Outbox.objects.filter(status=s).count() for s in ("sent", "pending"))
    assert sent > 5 * pending > 5_000, (sent, pending)  # the skew: most done, yet a backlog worth not sorting
    failures = []
    for got, hots in drive(world, monkeypatch, settings).values():
        for h in hots:
            try:
                check(explain(got.one(*h.needles)), h.index, ordered=h.ordered)
            except AssertionError as exc:
                failures.append(f"[{state}] {h.name}: {exc}")
            try:
                if h.generic:
                    check(explain_generic(got.one(*h.needles)), h.index, ordered=h.ordered)
            except AssertionError as exc:
                failures.append(f"[{state}] {h.name}, its generic plan: {exc}")
    assert not failures, "\n\n".join(failures)


@pytest.mark.parametrize("state", ["never", "fresh"])
def test_a_backlog_is_claimed_in_index_order_never_sorted_whole(brand, state, monkeypatch):
    """The observed regression: with autovacuum off, the claim sorted every owed row before its LIMIT (44 ms a
    call at 100k owed, 7 ms after an ANALYZE). A domain's claim reads its owed rows in outbox_owed_domain's
    order and stops at the LIMIT, and the sweep finds the owing domains with a probe each, analyzed or not."""
    hot = test_clock_create(brand=brand, frozen_time=START, name="hot")
    if state == "never":
        forget_statistics()
    with connection.cursor() as cur:
        cur.execute(
            """INSERT INTO timers_outbox (id, domain, brand_id, key, attempt, seq, transport, payload, status, error,
                   created_at, claimed_by, tries)
               SELECT 'sub_' || g, CASE WHEN g %% 7 = 0 THEN %(hot)s ELSE 'tc_other' || (g %% %(d)s) END, %(b)s,
                      'job_' || g || ':rung:notice 30d:2027', 1, 0, 'plans', '{}',
                      CASE WHEN g %% 2 = 0 THEN 'pending' ELSE 'sent' END, '', now() - make_interval(secs => 1e6 - g),
                      '', 0
               FROM generate_series(1, %(n)s) g""", {"hot": hot.id, "d": DOMAINS, "b": brand.id, "n": 100_000})
    if state == "fresh":
        analyze()
    me = sessions.sender_id()
    with capture(monkeypatch) as got, undone():
        assert len(outbox._claim(hot.id, me, outbox.CLAIM)) == outbox.CLAIM
        with connection.cursor() as cur:
            cur.execute("SELECT DISTINCT domain FROM timers_outbox WHERE status = 'pending' ORDER BY domain")
            assert outbox_sql.owed_domains() == [r[0] for r in cur.fetchall()]
    check(explain(got.one("WITH live AS")), "outbox_owed_domain", ordered=True)
    check(explain(got.one("WITH RECURSIVE d")), "outbox_owed_domain", ordered=True)


def test_a_large_batchs_timer_write_probes_each_key_not_the_whole_domain(brand, monkeypatch):
    # A test clock advances in batches of thousands: the flush's UPDATE … FROM unnest(ids) was planned as a
    # hash join over every timer of the domain (a seq scan of the domain's rows each batch). It must probe
    # the primary key per row of the batch, as executed (EXPLAIN ANALYZE of the statement the store sends).
    hot = test_clock_create(brand=brand, frozen_time=START, name="big")
    with connection.cursor() as cur:
        cur.execute(
            """INSERT INTO timers_timer (id, domain, brand_id, key, owner, kind, place, handler, status, owed_at,
                   opened_at, armed_at, attempt, wakes, version, superseded_by, by, held_by, armed_by, tick_pass, data)
               SELECT 'tmr_big' || g, %s, %s, 'job_big' || g || ':task:plan:2027', 'job_big' || g, 'task', 4,
                      'noop', 'armed', %s, %s, %s, 0, 0, '', '', '', '', '', 1, '{}'
               FROM generate_series(1, 60000) g""", [hot.id, brand.id, START, START, START])
    analyze()
    store = PostgresStore()
    changed = store.load_many(hot.id, [f"job_big{g}:task:plan:2027" for g in range(1, 60001, 6)])
    for item in changed:
        item.status, item.fired_at = "fired", START
    plans = []

    class Explaining(psycopg.Cursor):
        def execute(self, query, params=None, **kw):
            if query.startswith("UPDATE timers_timer AS t"):
                super().execute("EXPLAIN (ANALYZE, FORMAT JSON) " + query, params, **kw)
                plans.append(self.fetchone()[0][0]["Plan"])
                return self
            return super().execute(query, params, **kw)

    monkeypatch.setattr(PostgresStore, "_cursor", lambda self: Explaining(connection.connection))
    store.write(domain=hot.id, new=[], changed=changed, commits=[], events=[], sends=[])
    assert len(plans) == 1 and len(changed) == 10_000
    check(plans[0], "timers_timer_pkey", ordered=False)
    assert not [n for n in nodes(plans[0]) if n["Node Type"] in ("Hash Join", "Merge Join")], text(plans[0])
    with connection.cursor() as cur:  # the planner's settings are back as they were
        cur.execute("SELECT current_setting('enable_hashjoin'), current_setting('enable_mergejoin')")
        assert cur.fetchone() == ("on", "on")


@pytest.mark.parametrize("state", ["never", "fresh"])
def test_a_claims_settle_reads_its_open_runs_by_ref_never_every_run(brand, state, monkeypatch):
    """A claim settles up to 200 HTTP calls at once: their open Runs are read through schedule_run_ref. PostgreSQL
    proves a partial index's predicate (``ref <> ''``) from an IN list of at most 100 values, so the read says it
    itself; without it, every settle read every Run of every schedule (100,000 here; a year of an hourly schedule is 8,760)."""
    from timers.models import Schedule
    from timers.schedule_http import http_settled

    clock = test_clock_create(brand=brand, frozen_time=START, name="settle")
    sch = Schedule.objects.create(id="sch_settle", brand=brand, domain=clock.id, spec={"every": "1h"},
                                  target_kind="http", target={"url": "http://127.0.0.1:9/x"}, created_at=START)
    with connection.cursor() as cur:
        cur.execute(
            """INSERT INTO timers_schedulerun (id, schedule_id, intended_at, state, started_at, closed_at, ref, outcome)
               SELECT 'run_settle' || g, %s, %s + make_interval(hours => g), CASE WHEN g > 100000 THEN 'open'
                      ELSE 'closed' END, %s, NULL, CASE WHEN g %% 10 = 0 AND g <= 100000 THEN ''
                      ELSE 'sub_settle' || g END,
                      ''
               FROM generate_series(1, 100200) g""", [sch.id, START, START])
    if state == "never":
        forget_statistics()
        with connection.cursor() as cur:
            cur.execute("DELETE FROM pg_statistic WHERE starelid = 'timers_schedulerun'::regclass")
            cur.execute("UPDATE pg_class SET reltuples = -1, relpages = 0 WHERE oid = 'timers_schedulerun'::regclass")
    else:
        with connection.cursor() as cur:
            cur.execute("ANALYZE timers_schedulerun")
    settled = [(f"sub_settle{g}", True, {"status": 200}) for g in range(100001, 100201)]
    with capture(monkeypatch) as got:
        http_settled(settled)
    plan = explain(got.one('"timers_schedulerun"."ref" IN', "FOR UPDATE"))
    # The schedules' table holds one row here: read whole, rightly. The Runs must not be.
    assert not [n for n in nodes(plan) if n["Node Type"] == "Seq Scan"
                and n.get("Relation Name") == "timers_schedulerun"], text(plan)
    # By the settled refs, or (no statistics) by the schedule's open Runs: either reads what is open, not all.
    assert any(n.get("Index Name") in ("schedule_run_ref", "schedule_run_state") for n in nodes(plan)), text(plan)
    assert not Schedule.objects.get(pk=sch.pk).runs.filter(state="open").exists()
