"""/metrics: scraped through the test client, parsed by prometheus_client's own parser, numbers checked as
timers are armed and fired on a test clock."""

from __future__ import annotations

import importlib
import json
from datetime import timedelta
from types import SimpleNamespace

import pytest
from django.contrib.auth import get_user_model
from django.db import DatabaseError, connection
from django.test import Client
from prometheus_client.parser import text_string_to_metric_families

from tests.conftest import T0
from tests.support.acme import tax_plan_subscribers
from tests.support.plans import nodes
from timers import arming, test_clocks
from timers.advance import advance
from timers.clock import wall_now
from timers.errors import Refused
from timers.ids import live_domain
from timers.lease import lease
from timers.models import LATE_BUCKETS, LIVE, Commit, FireTally, Outbox, Timer
from timers.sql import sessions

TOKEN = "metrics-test-token"

# The contract: a dashboard or an alert names these. Removing one must fail here (this list is not read
# from timers/metrics.py on purpose).
FAMILIES = {
    "kt_timer_fires": "counter",
    "kt_timer_late_by_seconds": "histogram",
    "kt_timers_armed": "gauge",
    "kt_timers_held": "gauge",
    "kt_outbox_pending": "gauge",
    "kt_outbox_sending": "gauge",
    "kt_outbox_in_doubt": "gauge",
    "kt_tick_lag_seconds": "gauge",
    "kt_lease_holder": "gauge",
    "kt_worker_sessions": "gauge",  # PostgreSQL only
    "kt_metrics_scrape_error": "gauge",
    "kt_metrics_scrape_duration_seconds": "gauge",
}
PG_ONLY = {"kt_worker_sessions"}


@pytest.fixture(autouse=True)
def _token(settings):
    settings.METRICS_TOKEN = TOKEN


def scrape(client: Client | None = None) -> dict:
    """{family name: {(sample name, frozenset(labels)): value}} and the families' types."""
    response = (client or Client()).get("/metrics", HTTP_AUTHORIZATION=f"Bearer {TOKEN}")
    assert response.status_code == 200, response.content
    assert response["Content-Type"].startswith("text/plain; version=")
    out: dict = {}
    for fam in text_string_to_metric_families(response.content.decode()):
        samples = {(s.name, frozenset(s.labels.items())): s.value for s in fam.samples}
        out[fam.name] = {"type": fam.type, "samples": samples}
    return out


def value(m: dict, name: str, sample: str | None = None, **labels: str) -> float | None:
    return m[name]["samples"].get((sample or name, frozenset(labels.items())))


def test_every_family_is_exposed_with_its_type(db):
    m = scrape()
    # kt_worker_sessions reads pg_stat_activity: left out where the database cannot say who is connected.
    expected = {k: v for k, v in FAMILIES.items() if connection.vendor == "postgresql" or k not in PG_ONLY}
    assert {name: m[name]["type"] for name in FAMILIES if name in m} == expected
    assert all(v == 0 for v in m["kt_metrics_scrape_error"]["samples"].values())
    # Every kind and outcome is a series from the start, at 0, on both kinds of clock.
    assert value(m, "kt_timer_fires", "kt_timer_fires_total", clock="live", kind="money", outcome="refused") == 0
    assert "kt_tick_lag_seconds" in m  # no live timer armed: no domain is behind


def test_fires_late_by_and_armed_move_as_a_test_clock_fires(brand, clock, arm, handler):
    def refuse(f):
        raise Refused("not_today", "refused on purpose")

    def crash(f):
        raise RuntimeError("boom")

    handler("metrics.refuse", refuse)
    handler("metrics.crash", crash)
    before = scrape()
    for i in range(5):
        arm(f"job_{i}:ask:glossary:1", T0 + timedelta(hours=i + 1))
    arm("job_9:deadline:at_risk:2026", T0 + timedelta(hours=2), handler="metrics.refuse")
    arm("job_8:task:review:1", T0 + timedelta(hours=3), handler="metrics.crash")
    arm("job_7:ask:later:1", T0 + timedelta(days=10))
    armed = scrape()
    assert value(armed, "kt_timers_armed", domain=clock.id) == 8
    assert value(before, "kt_timers_armed", domain=clock.id) is None

    advance(clock.id, T0 + timedelta(days=1))
    after = scrape()

    def delta(family: str, sample: str, **labels: str) -> float:
        return (value(after, family, sample, **labels) or 0) - (value(before, family, sample, **labels) or 0)

    fires = "kt_timer_fires", "kt_timer_fires_total"
    assert delta(*fires, clock="test", kind="ask", outcome="committed") == 5
    assert delta(*fires, clock="test", kind="deadline", outcome="refused") == 1
    assert delta(*fires, clock="test", kind="deadline", outcome="committed") == 0
    assert delta(*fires, clock="test", kind="task", outcome="committed") == 0  # it raised: held, not fired
    assert delta(*fires, clock="live", kind="ask", outcome="committed") == 0
    # A test clock visits each instant: every fire is 0s late, in the first bucket.
    late = "kt_timer_late_by_seconds"
    assert delta(late, late + "_count", clock="test") == 6
    assert delta(late, late + "_bucket", clock="test", le="1") == 6
    assert delta(late, late + "_sum", clock="test") == 0
    assert value(after, "kt_timers_armed", domain=clock.id) == 1  # job_7, owed in 10 days
    assert value(after, "kt_timers_held", domain=clock.id, reason="error") == 1


def test_late_by_and_lag_on_the_live_clock(brand):
    from timers.clock import FrozenClock
    from timers.live import live_step

    # late_by counts from when a timer was owed, or armed if later: arming one already owed is not lateness.
    now = wall_now()
    arming.timer_arm(brand=brand, key="job_1:ask:overdue:1", owed_at=now - timedelta(hours=1), domain=LIVE,
                       handler="noop")
    arming.timer_arm(brand=brand, key="job_2:ask:soon:1", owed_at=now + timedelta(minutes=1), domain=LIVE,
                       handler="noop")
    behind = scrape()
    live_step(FrozenClock(now + timedelta(minutes=11)))
    m = scrape()
    late = "kt_timer_late_by_seconds"
    assert value(m, late, late + "_count", clock="live") == 2
    assert 1259 < value(m, late, late + "_sum", clock="live") <= 1260  # 11m (less the arming's instant) + 10m
    assert value(m, late, late + "_bucket", clock="live", le="300") == 0
    assert value(m, late, late + "_bucket", clock="live", le="900") == 2
    assert value(m, late, late + "_bucket", clock="live", le="0.001") == 0  # the buckets start at 1 ms
    assert value(m, late, late + "_count", clock="test") == 0
    # The live tick was an hour behind (the overdue timer), and is not once it fired.
    # Lag is per brand's live clock (its own domain).
    assert 3600 <= value(behind, "kt_tick_lag_seconds", domain=live_domain(brand.id)) < 3600 + 60
    assert value(m, "kt_tick_lag_seconds", domain=live_domain(brand.id)) is None  # nothing armed: not behind


def test_late_by_buckets_show_tens_of_milliseconds(brand):
    """A live fire tens of milliseconds late lands in a bucket that says so (the soak's p99 is ~80 ms)."""
    from timers.clock import FrozenClock
    from timers.live import live_step

    now = wall_now()
    arming.timer_arm(brand=brand, key="job_3:ask:quick:1", owed_at=now + timedelta(seconds=1), domain=LIVE,
                       handler="noop")
    live_step(FrozenClock(now + timedelta(seconds=1, milliseconds=20)))
    m = scrape()
    late = "kt_timer_late_by_seconds"
    assert value(m, late, late + "_bucket", clock="live", le="0.01") == 0
    assert value(m, late, late + "_bucket", clock="live", le="0.025") == 1


def test_tick_lag_of_a_requested_advance(clock, arm):
    arm("job_1:ask:a:1", T0 + timedelta(days=3))
    test_clocks.test_clock_request_advance(clock=clock, to=T0 + timedelta(days=7))
    m = scrape()
    assert value(m, "kt_tick_lag_seconds", domain=clock.id) == 7 * 86400
    advance(clock.id, T0 + timedelta(days=7))
    assert value(scrape(), "kt_tick_lag_seconds", domain=clock.id) is None  # ready again: nothing owed


def test_outbox_pending_sending_and_in_doubt(brand, clock):
    now = wall_now()
    me = sessions.sender_id()

    def row(n: int, **fields) -> None:
        Outbox.objects.create(id=f"sub_{n}", domain=clock.id, brand=brand, key=f"job_{n}:ask:a:1", attempt=1,
                              transport="recording", created_at=now, **fields)

    row(1)
    row(2)
    row(3, status="sending", claimed_by=me, lease_until=now + timedelta(minutes=5))
    row(4, status="sending", claimed_by=me, lease_until=now - timedelta(seconds=1))  # its lease ran out
    row(5, status="sending", claimed_by=me, lease_until=None)  # a send raised
    row(6, status="sent", claimed_by=me)
    if connection.vendor == "postgresql":  # a sender whose session is gone, its lease still running
        row(7, status="sending", claimed_by="pg:1:1", lease_until=now + timedelta(minutes=5))
    m = scrape()
    assert value(m, "kt_outbox_pending", domain=clock.id) == 2
    assert value(m, "kt_outbox_sending", domain=clock.id) == 1
    assert value(m, "kt_outbox_in_doubt", domain=clock.id) == (3 if connection.vendor == "postgresql" else 2)


def test_lease_holders_name_the_holder_and_epoch_of_each_held_domain(clock):
    with lease(clock.id) as held:
        m = scrape()
    assert value(m, "kt_lease_holder", domain=clock.id, holder=held.holder) == held.epoch
    assert not scrape()["kt_lease_holder"]["samples"]  # let go: the lease expired at once


def test_a_failing_family_is_named_and_the_rest_still_answer(db):
    def fail_tally(execute, sql, params, many, context):
        if "timers_firetally" in sql:
            raise DatabaseError("the fire tally is unreadable")
        return execute(sql, params, many, context)

    with connection.execute_wrapper(fail_tally):
        m = scrape()
    assert "kt_timer_fires" not in m
    assert value(m, "kt_metrics_scrape_error", family="fires") == 1
    assert value(m, "kt_metrics_scrape_error", family="timers") == 0
    assert "kt_timers_armed" in m and "kt_tick_lag_seconds" in m


@pytest.mark.parametrize(
    ("header", "status"),
    [(None, 401), ("Bearer wrong", 401), ("Basic " + TOKEN, 401), (f"Bearer {TOKEN}", 200), (f"bearer {TOKEN}", 200)],
)
def test_access_needs_the_token(db, header, status):
    kwargs = {"HTTP_AUTHORIZATION": header} if header else {}
    response = Client().get("/metrics", **kwargs)
    assert response.status_code == status
    if status == 401:
        assert response.json()["error"]["code"] == "metrics_unauthorized"
        assert response["WWW-Authenticate"].startswith("Bearer")


def test_no_token_set_lets_only_a_superuser_in(db, settings):
    settings.METRICS_TOKEN = ""
    assert Client().get("/metrics", HTTP_AUTHORIZATION="Bearer ").status_code == 401
    staff = get_user_model().objects.create_user("staff", password="x", is_staff=True)
    root = get_user_model().objects.create_user("root", password="x", is_staff=True, is_superuser=True)
    c = Client()
    c.force_login(staff)
    assert c.get("/metrics").status_code == 401  # an owner sees one brand; /metrics names every brand's clocks
    c.force_login(root)
    assert c.get("/metrics").status_code == 200


def test_other_methods_are_refused_in_the_error_shape(db):
    response = Client().post("/metrics", HTTP_AUTHORIZATION=f"Bearer {TOKEN}")
    assert response.status_code == 405
    assert response.json()["error"]["code"] == "method_not_allowed"


def _tally(domain: str) -> list[tuple]:
    return sorted((k, o, b, n, round(s, 3)) for k, o, b, n, s in
                  FireTally.objects.filter(domain=domain).values_list("kind", "outcome", "bucket", "fires", "late_seconds"))


def test_the_fire_tally_each_batch_writes_agrees_with_the_fired_timers_and_their_backfill(brand, clock, arm, handler,
                                                                                         settings):
    from timers.clock import FrozenClock
    from timers.live import live_step

    def refuse(f):
        raise Refused("not_today", "refused on purpose")

    handler("metrics.refuse", refuse)
    settings.KEEPING_TIME = {**settings.KEEPING_TIME, "BATCH_SIZE": 3}  # many batches, each adding to the rows
    tax_plan_subscribers(brand, clock, 1)
    for i in range(4):
        arm(f"job_r{i}:deadline:at_risk:{i}", T0 + timedelta(days=i + 1), handler="metrics.refuse")
    advance(clock.id, T0 + timedelta(days=400))
    # On the live clock, fires late by 0 s to a day: several buckets, and their sum.
    now = wall_now()
    live = live_domain(brand.id)
    lates = (0, 3, 70, 400, 5000, 90000)
    for i, late in enumerate(lates):
        arming.timer_arm(brand=brand, key=f"job_l{i}:ask:late:{i}", owed_at=now + timedelta(days=2, seconds=-late),
                           domain=LIVE, handler="noop")
    live_step(FrozenClock(now + timedelta(days=2)))

    for domain in (clock.id, live):
        tally = _tally(domain)
        assert sum(t[3] for t in tally) == Timer.objects.filter(domain=domain, status="fired").count() > 0
        assert sum(t[3] for t in tally) == Commit.objects.filter(domain=domain).count()
        assert sum(t[3] for t in tally if t[1] == "refused") == \
            Commit.objects.filter(domain=domain, outcome="refused").count()
    assert sum(t[3] for t in _tally(clock.id) if t[1] == "refused") == 4
    # <=1 ms, <=5 s, <=300 s, <=900 s, <=21600 s, +Inf
    assert [t[2] for t in _tally(live)] == [0, 9, 12, 13, 15, 17]
    assert sum(t[4] for t in _tally(live)) == pytest.approx(sum(lates), abs=0.01)

    # Counted again from the fired timers and their commits, with today's buckets: the same rows.
    written = {d: _tally(d) for d in (clock.id, live)}
    fire_tally = importlib.import_module("timers.migrations.0014_fire_tally")
    FireTally.objects.all().delete()
    fire_tally.tally_fired_timers(connection, buckets=LATE_BUCKETS)
    assert {d: _tally(d) for d in (clock.id, live)} == written
    # The migrations' way: the backfill with the buckets of its day, then 0020 moving them up eight: the same
    # rows, but for the finer buckets below a second, which fold into "within 1 s".
    FireTally.objects.all().delete()
    fire_tally.backfill(None, SimpleNamespace(connection=connection))
    with connection.cursor() as cur:
        for sql in importlib.import_module("timers.migrations.0020_late_buckets_from_1ms").FORWARD:
            cur.execute(sql)

    def folded(rows: list[tuple]) -> list[tuple]:
        out: dict[tuple, list] = {}
        for k, o, b, n, s in rows:
            row = out.setdefault((k, o, max(b, 8)), [0, 0.0])
            row[0] += n
            row[1] = round(row[1] + s, 3)
        return sorted((*key, n, s) for key, (n, s) in out.items())

    assert {d: _tally(d) for d in (clock.id, live)} == {d: folded(rows) for d, rows in written.items()}


def test_a_scrape_sums_the_tally_and_never_reads_the_fired_timers(db):
    seen: list[str] = []

    def watch(execute, sql, params, many, context):
        seen.append(sql)
        return execute(sql, params, many, context)

    with connection.execute_wrapper(watch):
        scrape()
    fires = [q for q in seen if "timers_firetally" in q]
    assert len(fires) == 1
    assert not [q for q in seen if "timers_timer" in q and "'fired'" in q]  # no pass over the fired timers


def test_tick_lag_probes_each_live_clocks_oldest_timer_and_reads_no_other(brand):
    if connection.vendor != "postgresql":
        pytest.skip("EXPLAIN ANALYZE: PostgreSQL")
    from timers import metrics
    from timers.models import LiveClock

    now = wall_now()
    for i in range(300):
        arming.timer_arm(brand=brand, key=f"job_{i}:ask:lag:{i}", owed_at=now + timedelta(minutes=i - 60),
                           domain=LIVE, handler="noop")
    sent: list = []

    def watch(execute, sql, params, many, context):
        if "timers_timer" in sql:
            sent.append((sql, params))
        return execute(sql, params, many, context)

    with connection.execute_wrapper(watch):
        (lag,) = metrics._family_lag()
    assert [s.value for s in lag.samples if s.labels["domain"] == live_domain(brand.id)][0] >= 3600
    (sql, params), = sent
    with connection.cursor() as cur:
        cur.execute("EXPLAIN (ANALYZE, FORMAT JSON) " + sql, params)
        raw = cur.fetchone()[0]
    plan = (json.loads(raw) if isinstance(raw, str) else raw)[0]["Plan"]
    read = sum(n["Actual Rows"] * n["Actual Loops"] for n in nodes(plan) if n.get("Relation Name") == "timers_timer")
    # An index probe (LIMIT 1) per live clock, where a GROUP BY read all 300 armed timers.
    assert read <= 2 * LiveClock.objects.count(), read


def test_a_deleted_test_clocks_fires_stay_counted_in_rows_that_do_not_grow_with_clocks(brand, arm, clock):
    from timers.advance import finish_deletes

    for i in range(3):
        arm(f"job_{i}:ask:gone:{i}", T0 + timedelta(hours=i + 1))
    advance(clock.id, T0 + timedelta(days=1))
    other = test_clocks.test_clock_create(brand=brand, frozen_time=T0, name="other")
    arming.timer_arm(brand=brand, key="job_9:ask:gone:9", owed_at=T0 + timedelta(hours=1), domain=other.id,
                       handler="noop")
    advance(other.id, T0 + timedelta(days=1))
    before = scrape()
    for c in (clock, other):
        test_clocks.test_clock_delete(clock=c)
    finish_deletes()
    after = scrape()
    fires = "kt_timer_fires", "kt_timer_fires_total"
    assert value(after, *fires, clock="test", kind="ask", outcome="committed") == \
        value(before, *fires, clock="test", kind="ask", outcome="committed") >= 4
    late = "kt_timer_late_by_seconds"
    assert value(after, late, late + "_count", clock="test") == value(before, late, late + "_count", clock="test")
    # Folded into one set of rows: none left under either clock.
    assert not FireTally.objects.filter(domain__in=[clock.id, other.id]).exists()
    assert FireTally.objects.filter(domain=FireTally.RETIRED, kind="ask").values_list("fires", flat=True)[0] >= 4
