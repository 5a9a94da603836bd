"""A deleted brand leaves nothing behind, and no worker keeps its domains (issue 36, item 3).

`manage.py brands delete NAME --confirm NAME` (services/brands.py). Proved by a sweep of every table: no row
names the brand or one of its clock domains (a foreign key, a domain column, or its id anywhere in a text or
JSON column: commits, leases and their terms, the live clock, the tally, the outbox, the record…), while the
other brand's rows are as they were and what /metrics counted stays counted. On PostgreSQL with a real
`tick --forever` that holds the brand's live domain and advances its test clock: the delete waits for the
worker's batch, the worker goes on with the other brand and never writes for the deleted one again.
"""

from __future__ import annotations

import signal
import subprocess
import time
from datetime import timedelta
from io import StringIO

import pytest
from django.apps import apps
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.db import models
from django.db.models import Q, Sum
from django.db.models.functions import Cast

from tests.conftest import T0
from tests.support.cli import one_line, run
from tests.support.processes import spawn, worker_env
from timers import test_clocks, transports
from timers.advance import advance
from timers.arming import timer_arm
from timers.clock import FrozenClock, wall_now
from timers.live import live_domains, live_step
from timers.models import Brand, FireTally, LeaseTerm, Membership, Timer, live_domain
from timers.tenants import api_key_create, brand_get_or_create
from timers.webhooks import endpoint_create


def _text_fields(model) -> list[str]:
    return [f.name for f in model._meta.get_fields() if getattr(f, "concrete", False) and not f.is_relation
            and isinstance(f, models.CharField | models.TextField | models.JSONField)]


def left_of(brand_id: str, domains: list[str]) -> dict[str, int]:
    """Every row anywhere that names the brand or one of its domains: {model: rows}."""
    needles = [brand_id, *domains]
    found = {}
    for model in apps.get_models():
        qs = model._base_manager.all()
        where = Q(pk__in=[])
        for f in model._meta.get_fields():
            if getattr(f, "many_to_one", False) and f.related_model is Brand:
                where |= Q(**{f"{f.name}_id": brand_id})
        for name in _text_fields(model):
            if isinstance(model._meta.get_field(name), models.JSONField):  # its text, not its containment
                qs = qs.annotate(**{f"{name}_text": Cast(name, models.TextField())})
                name = f"{name}_text"
            for needle in needles:
                where |= Q(**{f"{name}__contains": needle})
        n = qs.filter(where).count()
        if n:
            found[model._meta.label] = n
    return found


def _fires() -> dict[bool, int]:
    rows = FireTally.objects.values_list("domain", "fires")
    return {live: sum(n for d, n in rows if d.startswith("live_") == live) for live in (True, False)}


def _load(example: str) -> str:
    out = StringIO()
    call_command("loadexample", example, stdout=out)
    return out.getvalue().split("test clock ")[1].split()[0]


@pytest.mark.django_db
def test_deleting_a_brand_leaves_no_row_of_it_and_touches_no_other(settings):
    transports.register("notices", transports.RecordingTransport())
    tc = _load("apis_tax")
    advance(tc, T0.replace(year=2027, month=6))
    doomed = Brand.objects.get(name="apis.tax")
    other_tc = _load("api_forsale")
    advance(other_tc, T0.replace(year=2027, month=10, day=25))
    kept = Brand.objects.get(name="api.forsale")
    # Everything else a brand has: keys, an endpoint, an owner (staff), live timers fired and armed, a second
    # test clock, a lease and its terms.
    api_key_create(brand=doomed, live=True)
    endpoint_create(brand=doomed, url="https://crm.example/kt", enabled_events=["*"], livemode=False)
    owner = get_user_model().objects.create_user(username="olive", email="olive@example.com", is_staff=True)
    Membership.objects.create(user=owner, brand=doomed, role="owner", name="Olive Owner")
    now = wall_now()
    timer_arm(brand=doomed, key="job_a:deadline:late:1", owed_at=now - timedelta(minutes=1), handler="noop")
    timer_arm(brand=doomed, key="job_b:deadline:late:1", owed_at=now + timedelta(days=1), handler="noop")
    live_step(FrozenClock(now))
    second = test_clocks.test_clock_create(brand=doomed, frozen_time=T0, name="second")
    domains = [live_domain(doomed.id), tc, second.id]
    assert LeaseTerm.objects.filter(domain=live_domain(doomed.id)).exists()
    assert set(left_of(doomed.id, domains)) >= {"timers.Timer", "timers.Commit", "timers.Event", "timers.Lease",
                                                "timers.LeaseTerm", "timers.LiveClock", "timers.FireTally",
                                                "timers.Outbox", "calendars.Subject", "services.Job"}
    theirs = left_of(kept.id, [live_domain(kept.id), other_tc])
    fires = _fires()

    one_line(["brands", "delete", "apis.tax"], "confirm_required")
    one_line(["brands", "delete", "apis.tax", "--confirm", "api.forsale"], "confirm_required")
    one_line(["brands", "delete", "nobody.example", "--confirm", "nobody.example"], "resource_missing")
    assert left_of(doomed.id, domains)  # refused: nothing deleted
    out = run("brands", "delete", "apis.tax", "--confirm", "apis.tax")
    assert out.startswith("deleted apis.tax · its live clock and 2 test clocks · ") and "nothing of it is left" in out

    assert left_of(doomed.id, domains) == {}
    assert left_of(kept.id, [live_domain(kept.id), other_tc]) == theirs
    assert _fires() == fires  # counted stays counted, folded into the retired rows
    assert FireTally.objects.filter(domain=FireTally.LIVE_RETIRED).aggregate(n=Sum("fires"))["n"] == 1
    owner.refresh_from_db()
    assert not owner.is_staff  # owns no brand any more; the account stays

    # A worker that listed the live domain just before the delete and turns it just after (the one race left:
    # its lease row and term come back) never makes its live clock again, so no later tick turns it.
    live_step(FrozenClock(wall_now()), domain=live_domain(doomed.id))
    assert "timers.LiveClock" not in left_of(doomed.id, domains)
    assert live_domain(doomed.id) not in live_domains()
    terms = LeaseTerm.objects.filter(domain=live_domain(doomed.id)).count()
    live_step(FrozenClock(wall_now()))  # a one-shot tick: every live clock
    assert LeaseTerm.objects.filter(domain=live_domain(doomed.id)).count() == terms
    assert "apis.tax" not in run("brands", "list") and "api.forsale" in run("brands", "list")


@pytest.mark.postgresql("a real worker holding the brand's domains: PostgreSQL")
@pytest.mark.processes
@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
@pytest.mark.xdist_group("processes")
def test_a_brand_deleted_under_a_worker_is_let_go_and_the_worker_goes_on():
    doomed, kept = brand_get_or_create(name="doomed.example"), brand_get_or_create(name="kept.example")
    now = wall_now()
    for i in range(400):  # owed through the next 40 s: the worker turns the live domain all along
        timer_arm(brand=doomed, key=f"job_d{i}:deadline:late:1", owed_at=now + timedelta(seconds=i / 10),
                  handler="noop")
    clock = test_clocks.test_clock_create(brand=doomed, frozen_time=T0, name="doomed run")
    for i in range(3000):
        timer_arm(brand=doomed, key=f"job_t{i}:deadline:late:1", owed_at=T0 + timedelta(minutes=i),
                  domain=clock.id, handler="noop")
    test_clocks.test_clock_request_advance(clock=clock, to=T0 + timedelta(days=30))
    later = [timer_arm(brand=kept, key=f"job_k{i}:deadline:late:1", owed_at=now + timedelta(seconds=20 + i),
                       handler="noop") for i in range(5)]
    domains = [live_domain(doomed.id), clock.id]

    env = worker_env(batch=50)
    env["PYTHONUNBUFFERED"] = "1"
    worker = spawn("tick", "--forever", env=env)
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not (
                LeaseTerm.objects.filter(domain=domains[0]).exists()
                and Timer.objects.filter(domain=domains[0], status="fired").count() >= 20
                and Timer.objects.filter(domain=clock.id, status="fired").exists()):
            time.sleep(0.2)
        assert LeaseTerm.objects.filter(domain=domains[0]).exists(), "the worker never held the live domain"
        assert Timer.objects.filter(domain=clock.id, status="fired").exists(), "the worker never advanced"

        rm = spawn("brands", "delete", "doomed.example", "--confirm", "doomed.example", env=env)
        out, err = rm.communicate(timeout=180)
        assert rm.returncode == 0, err
        assert "nothing of it is left" in out
        assert left_of(doomed.id, domains) == {}
        time.sleep(3)  # the worker's next turns: nothing of the brand comes back
        assert left_of(doomed.id, domains) == {}
        assert worker.poll() is None, "the worker died"
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and Timer.objects.filter(pk__in=[t.pk for t in later],
                                                                   status="fired").count() < len(later):
            time.sleep(0.3)
        assert Timer.objects.filter(pk__in=[t.pk for t in later], status="fired").count() == len(later)
        assert left_of(doomed.id, domains) == {}
    finally:
        worker.send_signal(signal.SIGTERM)
        try:
            out, err = worker.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            worker.kill()
            out, err = worker.communicate()
    assert worker.returncode == 0, err
    assert "Traceback" not in err, err
