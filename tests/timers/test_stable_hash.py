"""The same scenario gives the same record hash on every load and every machine (issue 8).

Ids minted inside a clock domain derive from the domain's seed and what they name (timers.ids.domain_seed),
never from a test clock's random id: `loadexample apis_tax` twice, or on another database, prints the same
ids and the same sha256 for `tick 1y --compare --redeliver`.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from dataclasses import dataclass
from datetime import timedelta
from io import StringIO

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.db import IntegrityError, transaction
from django.test import Client

from calendars.models import Clock, Subject, seeded_subject_id
from services.management.commands.loadexample import START, remove_example
from services.models import Job, MoneyLine, Subscription
from services.subscriptions import subscription_create
from tests.support import ROOT
from timers import transports
from timers.advance import advance
from timers.arming import timer_arm
from timers.domains import domain_id, domain_seed
from timers.errors import KeepingTimeError
from timers.ids import live_domain, new_id
from timers.models import Outbox, TestClock, Timer
from timers.tenants import api_key_create, brand_get_or_create
from timers.test_clocks import test_clock_create, test_clock_delete
from timers.transports import RecordingTransport

AGREE = re.compile(r"^all 4 agree · sha256:([0-9a-f]{64})$", re.M)


@dataclass
class Load:
    tc: str
    subject: str
    sub: str


def _load(out: str) -> Load:
    return Load(tc=out.split("test clock ")[1].split()[0], subject=out.split("subject ")[1].split()[0],
                sub=out.split("subscription ")[1].split()[0])


def load_example() -> Load:
    out = StringIO()
    call_command("loadexample", "apis_tax", stdout=out)
    return _load(out.getvalue())


def year_hash(tc: str) -> str:
    out = StringIO()
    call_command("tick", "1y", "--compare", "--redeliver", "--test-clock", tc, stdout=out)
    found = AGREE.search(out.getvalue())
    assert found, out.getvalue()
    return found.group(1)


# -- the example: twice on one database, and on a second one -------------------------------------------
def test_loading_the_example_twice_prints_the_same_ids_and_hash(db):
    first = load_example()
    timers = dict(Timer.objects.filter(domain=first.tc).values_list("key", "id"))
    first_hash = year_hash(first.tc)
    second = load_example()  # no --reset: a load replaces the example's previous one
    assert year_hash(second.tc) == first_hash
    assert second.tc != first.tc  # the clock's own id stays random; nothing hashed may depend on it
    assert not TestClock.objects.filter(pk=first.tc).exists()
    assert TestClock.objects.get(pk=second.tc).seed == "apis_tax"
    assert (second.subject, second.sub) == (first.subject, first.sub)
    assert dict(Timer.objects.filter(domain=second.tc).values_list("key", "id")) == timers


@pytest.mark.slow
def test_a_second_database_prints_the_same_hash(db, tmp_path):
    """Another machine, as near as one process can get: a fresh SQLite file, the settings a user runs,
    and another Python process (so another str hash seed: set order cannot leak into the record)."""
    here = year_hash(load_example().tc)
    env = {**os.environ, "DATABASE_URL": f"sqlite:///{tmp_path / 'second.sqlite3'}", "DEBUG": "1",
           "DJANGO_SETTINGS_MODULE": "keeping_time.settings"}

    def manage(*args: str) -> str:
        done = subprocess.run([sys.executable, "manage.py", *args], cwd=ROOT, env=env, capture_output=True,
                              text=True, timeout=600)
        assert done.returncode == 0, done.stderr[-2000:]
        return done.stdout

    manage("migrate", "--noinput", "-v0")
    there = _load(manage("loadexample", "apis_tax"))
    found = AGREE.search(manage("tick", "1y", "--compare", "--redeliver", "--test-clock", there.tc))
    assert found is not None
    assert found.group(1) == here


# -- ids minted in a domain: the seed and what they name, nothing else ---------------------------------
def _send_and_arm(f) -> None:
    f.arm(f"{f.key.owner}:task:child:{f.key.occurrence}", owed_at=f.instant + timedelta(hours=1), handler="noop")
    f.send("recording", {"what": f.timer.key})


def _scenario(brand, seed: str) -> tuple[TestClock, dict[str, str]]:
    """A little of everything minted in a domain: a subject, a subscription and what its plan mints (a job,
    its clocks, money), timers armed outside and inside the tick, and a submission. Returns {what: id}."""
    clock = test_clock_create(brand=brand, frozen_time=START, seed=seed)
    subject = Subject.objects.create(
        id=seeded_subject_id(brand=brand, domain=clock.id, kind="taxpayer", key="12-3456789"), brand=brand,
        domain=clock.id, kind="taxpayer", key_name="ein", key="12-3456789", name="Acme", created_at=START)
    sub = subscription_create(brand=brand, domain=clock.id, subject=subject, service="tax-plan",
                              input={"entity": "C corp", "states": ["CA"]}, now=START)
    timer_arm(brand=brand, key="job_x:task:send:1", owed_at=START + timedelta(hours=1), domain=clock.id,
              handler="t.seed.send")
    with transports.capture(RecordingTransport()):
        advance(clock.id, START + timedelta(days=13))  # past the 2026 return's mint on 2027-02-01
    d = clock.id
    minted = {f"timer {k}": i for k, i in Timer.objects.filter(domain=d).values_list("key", "id")}
    minted |= {f"send {k} {a}": i for k, a, i in Outbox.objects.filter(domain=d).values_list("key", "attempt", "id")}
    for model in (Subject, Subscription, Job, Clock, MoneyLine):
        minted |= {f"{model.__name__} {n}": i for n, i in enumerate(
            model.objects.filter(domain=d).order_by("id").values_list("id", flat=True))}
    assert {"Job 0", "Clock 0", "MoneyLine 0", "send job_x:task:send:1 1"} <= set(minted)
    assert sub.id == minted["Subscription 0"]
    return clock, minted


def test_ids_minted_in_a_domain_depend_on_the_seed_and_key_only(db, handler):
    handler("t.seed.send", _send_and_arm)
    brand = brand_get_or_create(name="seeds.test")
    a, minted = _scenario(brand, "unit-a")
    assert domain_seed(a.id) == "unit-a"
    # The formula, where it is simplest to state: a timer is its domain's seed and its key.
    assert minted["timer job_x:task:send:1"] == new_id("tmr", seed="unit-a|job_x:task:send:1")
    assert minted["timer job_x:task:child:1"] == new_id("tmr", seed="unit-a|job_x:task:child:1")
    # A submission is the clock's own: a far end must see a second load's sends as new ones.
    assert minted["send job_x:task:send:1 1"] == new_id("sub", seed=f"{a.id}|job_x:task:send:1|1")
    sends = {k for k in minted if k.startswith("send ")}
    minted = {k: v for k, v in minted.items() if k not in sends}

    remove_example(brand, seed="unit-a", every=False)  # what a second load does first: the seed is free again
    again, minted_again = _scenario(brand, "unit-a")
    assert again.id != a.id
    assert all(minted_again.pop(k) != new_id("sub", seed=f"{a.id}|{k.split()[1]}|1") for k in sends)
    assert minted_again == minted  # another clock, the same seed: every id the same (but its submissions)

    other, minted_other = _scenario(brand, "unit-b")
    minted_other = {k: v for k, v in minted_other.items() if not k.startswith("send ")}
    assert not set(minted_other.values()) & set(minted.values())  # another seed: no id in common
    assert domain_id("x", other.id, "what") == new_id("x", seed="unit-b|what")


def test_an_unseeded_clock_and_the_live_domain(db):
    brand = brand_get_or_create(name="seeds.test")
    clock = test_clock_create(brand=brand, frozen_time=START)
    assert clock.seed == "" and domain_seed(clock.id) == clock.id  # as before seeds: its random id
    t = timer_arm(brand=brand, key="job_1:task:a:1", owed_at=START, domain=clock.id, handler="noop")
    assert t.id == new_id("tmr", seed=f"{clock.id}|job_1:task:a:1")
    # Each brand's live clock is its own domain, and its ids derive from it: two brands' keys never collide.
    assert domain_seed(live_domain(brand.id)) == f"live_{brand.id}"
    other = brand_get_or_create(name="seeds.other")
    ids = {seeded_subject_id(brand=b, domain=live_domain(b.id), kind="taxpayer", key="1") for b in (brand, other)}
    assert len(ids) == 2
    # A live subject keeps the id it had when every brand's live clock was the one domain "live".
    assert seeded_subject_id(brand=brand, domain=live_domain(brand.id), kind="taxpayer", key="1") == new_id(
        "sbj", seed=f"live|{brand.id}|taxpayer|1")


# -- one clock per seed ---------------------------------------------------------------------------------
def test_a_seed_is_held_by_one_clock_of_any_brand(db):
    apis, globex = brand_get_or_create(name="seeds.test"), brand_get_or_create(name="seeds.globex")
    mine = test_clock_create(brand=apis, frozen_time=START, seed="shared.1")
    with pytest.raises(KeepingTimeError) as taken:
        test_clock_create(brand=globex, frozen_time=START, seed="shared.1")
    assert taken.value.code == "test_clock_seed_taken" and taken.value.status == 409
    assert mine.id not in taken.value.message  # another brand's clock is never named
    with pytest.raises(KeepingTimeError, match=mine.id):
        test_clock_create(brand=apis, frozen_time=START, seed="shared.1")
    # A deleted clock keeps its timers and record, whose ids came from the seed: it still holds it.
    test_clock_delete(clock=mine)
    with pytest.raises(KeepingTimeError, match=r"\(deleted\)") as taken:
        test_clock_create(brand=apis, frozen_time=START, seed="shared.1")
    assert taken.value.code == "test_clock_seed_taken"


def test_the_database_refuses_a_second_clock_of_one_seed(db):
    brand = brand_get_or_create(name="seeds.test")
    TestClock.objects.create(brand=brand, frozen_time=START, seed="raced", created_at=START)
    TestClock.objects.create(brand=brand, frozen_time=START, seed="", created_at=START)
    TestClock.objects.create(brand=brand, frozen_time=START, seed="", created_at=START)  # blank: no seed
    with pytest.raises(IntegrityError), transaction.atomic():
        TestClock.objects.create(brand=brand, frozen_time=START, seed="raced", created_at=START)


@pytest.mark.parametrize("seed", ["a|b", "a b", "x" * 65, "live", "live_brd_Psf2iiuDtZ0w5u", "tc_Psf2iiuDtZ0w5u", "é", "apis_tax\n"])
def test_a_seed_is_short_and_plain(db, seed):
    with pytest.raises(KeepingTimeError) as bad:
        test_clock_create(brand=brand_get_or_create(name="seeds.test"), frozen_time=START, seed=seed)
    assert bad.value.code == "invalid_seed"


def test_the_cli_and_the_api_take_a_seed(db):
    brand = brand_get_or_create(name="seeds.test")
    out = StringIO()
    call_command("testclocks", "create", "--frozen-time", "2027-01-20T14:00Z", "--seed", "cli.1",
                 "--brand", brand.name, stdout=out)
    assert " · seed cli.1 · " in out.getvalue()
    with pytest.raises(CommandError) as taken:
        call_command("testclocks", "create", "--frozen-time", "2027-01-20T14:00Z", "--seed", "cli.1",
                     "--brand", brand.name, stdout=StringIO())
    assert str(taken.value).startswith("test_clock_seed_taken: ") and "\n" not in str(taken.value)

    _, secret = api_key_create(brand=brand)
    api = Client(HTTP_AUTHORIZATION=f"Bearer {secret}")
    r = api.post("/test_clocks", {"frozen_time": "2027-01-20T14:00Z", "seed": "api.1"},
                 content_type="application/json")
    assert r.status_code == 201 and r.json()["seed"] == "api.1", r.content
    r = api.post("/test_clocks", {"frozen_time": "2027-01-20T14:00Z", "seed": "api.1"},
                 content_type="application/json")
    assert r.status_code == 409 and r.json()["error"]["code"] == "test_clock_seed_taken"
    r = api.post("/test_clocks", {"frozen_time": "2027-01-20T14:00Z", "seed": "no|pipes"},
                 content_type="application/json")
    assert r.status_code == 400
    r = api.post("/test_clocks", {"frozen_time": "2027-01-20T14:00Z"}, content_type="application/json")
    assert r.status_code == 201 and r.json()["seed"] == ""


def test_a_load_refuses_a_seed_another_brand_holds(db):
    test_clock_create(brand=brand_get_or_create(name="seeds.globex"), frozen_time=START, seed="apis_tax")
    with pytest.raises(CommandError, match=r"^test_clock_seed_taken: "):
        call_command("loadexample", "apis_tax", stdout=StringIO())
