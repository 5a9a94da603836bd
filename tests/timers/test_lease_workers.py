"""N worker processes share the brands' live clocks on PostgreSQL: each domain one worker's at a time, a killed
worker's domains taken over once its lease expires, a paused worker fenced, and every firing counted once at a
real HTTP far end. Also: arming live NOTIFYs the worker with the domain that woke."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections import Counter, defaultdict
from datetime import timedelta

import psycopg
import pytest
from django.db import connection, transaction

from tests.support import ROOT
from tests.support.far_end import FarEnd
from timers import lease as leases
from timers.arming import timer_arm
from timers.clock import wall_now
from timers.models import Commit, Lease, LeaseTerm, Timer, live_domain
from timers.tenants import brand_get_or_create

# Kill drills and workers racing each other: on one test process (scripts/test, --dist loadgroup), one at a time.
pytestmark = [
    pytest.mark.postgresql("real processes, row locks and LISTEN: PostgreSQL"),
    pytest.mark.slow,
    pytest.mark.django_db(transaction=True),
    pytest.mark.xdist_group("processes"),
]
BRANDS, PER_BRAND = 6, 120  # enough sends that a worker still holds a domain when the test looks


def _dsn() -> str:
    s = connection.settings_dict
    return f"postgres://{s['USER']}@{s['HOST'] or '127.0.0.1'}:{s['PORT'] or 5432}/{s['NAME']}"


def _worker(far: FarEnd) -> subprocess.Popen:
    env = dict(os.environ, DATABASE_URL=_dsn(), DJANGO_SETTINGS_MODULE="keeping_time.settings",
               KT_NOTICES_TRANSPORT=far.url, KT_LEASE_SECONDS="1", KT_BATCH_SIZE="4", KT_LIVE_TURN_BATCHES="3",
               FAR_FIRE_SECONDS="0.005", PYTHONUNBUFFERED="1",
               # The outbox's own claims outlast the pauses here: a sender paused past its claim may still
               # send (the far end's Idempotency-Key is what holds then); this test is about the clock lease.
               KT_OUTBOX_LEASE_SECONDS="30")
    proc = subprocess.Popen([sys.executable, "tests/support/lease_worker.py"], cwd=ROOT, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    proc.first = json.loads(proc.stdout.readline())  # type: ignore[attr-defined]
    return proc


def _holder(proc: subprocess.Popen) -> str:
    return proc.first["holder"]  # type: ignore[attr-defined]


def _held_by(proc: subprocess.Popen) -> list[str]:
    """The domains whose lease ``proc`` holds and has not let go (a stopped process holds what it held)."""
    open_terms = set(LeaseTerm.objects.filter(holder=_holder(proc), released_at=None).values_list("domain", "epoch"))
    return [d for d, e in Lease.objects.filter(holder=_holder(proc)).values_list("domain", "epoch") if (d, e) in open_terms]


def _stop_holding(proc: subprocess.Popen) -> list[str]:
    """SIGSTOP ``proc`` at a moment it holds a domain; the domains it holds, stopped."""
    for _ in range(200):
        _wait(lambda: _held_by(proc), 30, "the worker never held a domain")
        proc.send_signal(signal.SIGSTOP)
        time.sleep(0.05)
        held = _held_by(proc)
        if held:
            return held
        proc.send_signal(signal.SIGCONT)
    pytest.fail("never caught the worker holding a domain")


def _pause_until_taken_over(proc: subprocess.Popen) -> str:
    """Stop ``proc`` holding a domain until another worker takes that domain over, then let it go on: it wakes
    a stale holder. (Stopped mid-batch, it holds the row's lock and nobody can take it: try again.)"""
    for _ in range(30):
        held = _stop_holding(proc)
        deadline = time.monotonic() + 3
        while time.monotonic() < deadline:
            taken = Lease.objects.filter(domain__in=held).exclude(holder=_holder(proc)).values_list("domain", flat=True)
            if taken:
                proc.send_signal(signal.SIGCONT)
                return taken[0]
            time.sleep(0.05)
        proc.send_signal(signal.SIGCONT)
        time.sleep(0.2)
    pytest.fail("the paused worker's domain was never taken over")


def _wait(cond, seconds: float, what: str) -> None:
    deadline = time.monotonic() + seconds
    while not cond():
        assert time.monotonic() < deadline, what
        time.sleep(0.02)


def test_workers_share_the_brands_clocks_one_holder_at_a_time_through_a_kill_and_a_pause(db, handler):
    handler("far", lambda f: None)  # arming checks the name; the workers register the real one
    brands = [brand_get_or_create(name=f"w{i}.test") for i in range(BRANDS)]
    now = wall_now()
    keys = []
    for b in brands:
        for i in range(PER_BRAND):
            key = f"job_{i}:deadline:w:1"
            timer_arm(brand=b, key=key, owed_at=now - timedelta(minutes=PER_BRAND - i), handler="far")
            keys.append((live_domain(b.id), key))
    total = len(keys)
    # Each send takes a while, so a worker spends most of a turn delivering between its batches, outside
    # their transactions: a pause lands there, where its lease can expire and be taken over.
    with FarEnd(delay=0.03) as far:
        procs = [_worker(far) for _ in range(3)]
        try:
            # kill -9 one worker while it holds a domain, mid-turn.
            killed_domains = _stop_holding(procs[0])
            procs[0].send_signal(signal.SIGKILL)
            # Pause another while it holds one, until its lease expires and another takes the domain over.
            stale_domain = _pause_until_taken_over(procs[1])
            _wait(lambda: sum(far.received.values()) >= total, 120, "not every firing reached the far end")
            time.sleep(0.5)  # anything sent twice would arrive now
        finally:
            for p in procs[1:]:
                p.send_signal(signal.SIGTERM)
            outs = [p.communicate(timeout=60) for p in procs]
        for p, (_out, err) in zip(procs[1:], outs[1:], strict=True):
            assert p.returncode == 0, err
        # The paused worker woke a stale holder, and its fence stopped it before it wrote a batch.
        last = json.loads(outs[1][0].strip().splitlines()[-1])
        assert stale_domain in last["lost"], (stale_domain, last, outs[1][1][-2000:])

        # Every firing exactly once, counted at the far end by key.
        payloads = list(far.payloads.values())
        assert far.twice() == {}
        by_key = Counter((p["domain"], p["key"]) for p in payloads)
        assert set(by_key) == set(keys) and set(by_key.values()) == {1}
        assert Commit.objects.count() == total and not Timer.objects.filter(status="armed").exists()

    # The killed worker's domain was taken over after its lease expired, under a later epoch.
    for domain in killed_domains:
        dead = LeaseTerm.objects.filter(domain=domain, holder=_holder(procs[0])).order_by("-epoch").first()
        assert dead.released_at is None  # it never let go
        after = LeaseTerm.objects.filter(domain=domain, epoch__gt=dead.epoch).order_by("epoch").first()
        assert after is not None and after.holder != dead.holder

    # One holder at a time: in each domain's commit order, the epochs the firings ran under never go back
    # (a fenced-out holder wrote nothing after its successor), and each epoch is one holder's (the terms).
    epoch_of = {(p["domain"], p["key"]): (p["epoch"], p["holder"]) for p in payloads}
    terms = {(t.domain, t.epoch): t.holder for t in LeaseTerm.objects.all()}
    holders = defaultdict(set)
    for domain in {d for d, _ in keys}:
        # A batch reads its "now" after its fence, so commits' instants follow the order batches were written.
        order = list(Commit.objects.filter(domain=domain).order_by("at").values_list("key", "at"))
        assert len(order) == PER_BRAND
        epochs = [epoch_of[(domain, k)][0] for k, _ in order]
        assert epochs == sorted(epochs), (domain, epochs)
        for k, _ in order:
            epoch, holder = epoch_of[(domain, k)]
            assert terms[(domain, epoch)] == holder
            holders[domain].add(holder)
    assert len(set().union(*holders.values())) >= 2  # the domains were shared out among the workers


def test_a_taker_waits_for_the_holders_batch_and_finds_the_lease_renewed(db):
    held = leases.take("live_lock", as_holder="w1")
    Lease.objects.filter(domain="live_lock").update(expires=wall_now() - timedelta(seconds=1))  # due to expire
    got = []
    with transaction.atomic():
        assert held.fence()  # the batch begins: renewed, and the row is locked until the batch commits

        def taker() -> None:
            try:
                got.append(leases.take("live_lock", as_holder="w2"))
            finally:
                connection.close()

        t = threading.Thread(target=taker)
        t.start()
        t.join(5)
    assert got == [None]  # it waited on the row (or gave up on the lock), and never took a held lease
    assert Lease.objects.get(domain="live_lock").holder == "w1" and held.fence()


def test_arming_live_wakes_the_worker_with_its_domain_after_the_commit(db):
    brand = brand_get_or_create(name="wake.test")
    with psycopg.connect(_dsn(), autocommit=True) as listener:
        listener.execute("LISTEN keeping_time_wake")
        with transaction.atomic():
            timer_arm(brand=brand, key="job_1:deadline:soon:1", owed_at=wall_now() + timedelta(seconds=2),
                      handler="noop")
            assert not list(listener.notifies(timeout=0.3, stop_after=1))  # nothing before the commit
        notes = list(listener.notifies(timeout=5, stop_after=1))
    assert [n.payload.partition(" ")[0] for n in notes] == [live_domain(brand.id)]



def test_a_busy_worker_takes_every_wake_that_waited_and_then_sleeps(db):
    """Every live arming notifies; what arrives while the worker is busy waits in its connection. A sleep takes
    all of it (each domain once), and the next sleep sleeps: taking one a sleep let the backlog grow with the
    arming rate (the soak's worker grew 2.5 MB a minute and never slept)."""
    from timers.clock import WallClock
    from timers.worker import Worker

    worker = Worker(WallClock(max_sleep=0.3), test_clocks=False)
    worker._sleep(None)  # it listens from here
    with psycopg.connect(_dsn(), autocommit=True) as sender:
        for i in range(200):
            sender.execute("SELECT pg_notify('keeping_time_wake', %s)", [f"live_{i % 3}"])
    with connection.cursor() as cur:  # busy: the notifications arrive during a statement
        cur.execute("SELECT pg_sleep(0.2)")
    worker._sleep(None)
    assert sorted(worker.woken) == ["live_0", "live_1", "live_2"]
    worker.woken.clear()
    started = time.monotonic()
    worker._sleep(None)  # nothing waited: it sleeps its while
    assert time.monotonic() - started >= 0.25 and worker.woken == []


HOLD = """
import os, sys, time
sys.path.insert(0, os.getcwd())
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "keeping_time.settings")
import django
django.setup()
from timers.lease import take
held = take("live_killed")
print(held.epoch, flush=True)
time.sleep(120)
"""


def test_a_holder_killed_with_9_frees_its_lease_at_once_its_session_gone(db):
    env = dict(os.environ, DATABASE_URL=_dsn(), DJANGO_SETTINGS_MODULE="keeping_time.settings",
               KT_LEASE_SECONDS="120")
    proc = subprocess.Popen([sys.executable, "-c", HOLD], cwd=ROOT, env=env, stdout=subprocess.PIPE, text=True)
    assert proc.stdout.readline().strip() == "1"
    assert leases.take("live_killed") is None  # held for two minutes by a live session
    proc.send_signal(signal.SIGKILL)
    proc.wait(10)
    started = time.monotonic()
    _wait(lambda: leases.take("live_killed") is not None, 10, "the dead holder's lease was not freed")
    assert time.monotonic() - started < 10 and Lease.objects.get(domain="live_killed").epoch == 2
