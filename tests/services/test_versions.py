"""Versions pin code: open work runs the bundle it opened under, from its stored source, across deploys."""

from __future__ import annotations

import re
import sys
import textwrap
from datetime import UTC, date, datetime, timedelta

import pytest
from django.core.management import call_command
from django.db import transaction
from django.test import override_settings

from calendars import specs
from calendars.models import Clock
from calendars.specs import DueInput
from services import bundles, registry
from services.models import Job
from services.repin import job_repin
from services.versions import version_deploy, versions_summary
from tests.support.acme import tax_plan_subscribers
from tests.support.versions import LIVE_PATHS, START
from timers.advance import advance
from timers.armer import DirectArmer
from timers.arming import timer_arm
from timers.compare import compare
from timers.errors import KeepingTimeError
from timers.models import Event, TestClock, Timer, Version
from timers.test_clocks import test_clock_create

JUNE_PATHS = [p.replace("annual_return", "annual_return_2027_06") for p in LIVE_PATHS]


@pytest.fixture
def registry_state():
    """Deploying code reloads the registry: put the process's Services back afterwards."""
    saved = (dict(registry._services), dict(registry._bundles), dict(registry._versioned), dict(specs._registry))
    yield
    for live, old in zip((registry._services, registry._bundles, registry._versioned, specs._registry), saved,
                         strict=True):
        live.clear()
        live.update(old)


def _armed(domain: str) -> list[tuple]:
    return list(Timer.objects.filter(domain=domain).order_by("key")
                .values_list("id", "key", "status", "owed_at", "version", "by"))


def test_a_deploy_leaves_open_work_on_the_version_it_opened_under(brand, registry_state):
    clock = test_clock_create(brand=brand, frozen_time=START)
    tax_plan_subscribers(brand, clock, 1)
    advance(clock.id, datetime(2027, 3, 1, 14, tzinfo=UTC))
    old = Job.objects.get(domain=clock.id, service="annual-return", period="2026")
    stored = Version.objects.get(pk=old.version)
    assert "services.examples.apis_tax.tax" in stored.sources  # the bundle holds what it imports

    # June 2027: the process restarts on the new code. The old code is not loaded any more.
    registry.load(JUNE_PATHS)
    registry._versioned.pop(old.version)
    new_digest = registry.bundle("annual-return").digest
    assert new_digest != old.version

    advance(clock.id, datetime(2028, 2, 15, tzinfo=UTC))
    assert not Event.objects.filter(domain=clock.id, type="timer.failed").exists()
    # The 2026 return kept its rungs: its daily acks ran 7 days, from the stored source.
    acks = Timer.objects.filter(domain=clock.id, version=old.version, key__contains=":rung:ack daily 7d:")
    assert acks.filter(status="fired").count() >= 7
    pinned = registry.get("annual-return", old.version)
    assert pinned.clocks["file"].due.__module__.startswith("_kt_v_")
    assert pinned.price.late_cents(120_000) != registry.get("annual-return").price.late_cents(120_000)
    # The 2027 return, minted after the deploy, runs the new rungs.
    new = Job.objects.get(domain=clock.id, service="annual-return", period="2027")
    assert new.version == new_digest
    keys = set(Timer.objects.filter(domain=clock.id, version=new_digest).values_list("key", flat=True))
    assert any(":rung:ack daily 5d:" in k for k in keys) and any(":rung:notice 60d:" in k for k in keys)
    assert not any(":rung:ack daily 7d:" in k for k in keys)


def test_the_example_deploys_on_its_clock_and_the_four_ways_agree_across_it(brand):
    call_command("loadexample", "apis_tax", stdout=open("/dev/null", "w"))  # noqa: SIM115
    clock = TestClock.objects.get(name="Acme Robotics", status="ready")
    to = datetime(2028, 2, 15, tzinfo=UTC)
    ways = compare(clock.id, to, redeliver=True)
    assert len({w.sha256 for w in ways}) == 1, [(w.label, w.sha256) for w in ways]
    advance(clock.id, to)
    jobs = {j.period: j for j in Job.objects.filter(domain=clock.id, service="annual-return")}
    assert Version.objects.get(pk=jobs["2026"].version).label == "2027-01"
    assert Version.objects.get(pk=jobs["2027"].version).label == "2027-06"
    assert not Event.objects.filter(domain=clock.id, type="timer.failed").exists()
    summary = {p.version.label: p for p in versions_summary(now=to, live_domain=clock.id)}
    assert summary["2027-06"].live and summary["2027-06"].armed > 0
    assert not summary["2027-01"].live


def test_a_deploy_and_a_rollback_arm_nothing_and_rewrite_nothing(brand):
    clock = test_clock_create(brand=brand, frozen_time=START)
    tax_plan_subscribers(brand, clock, 1)
    advance(clock.id, datetime(2027, 3, 1, 14, tzinfo=UTC))
    before = _armed(clock.id)
    at = datetime(2027, 3, 1, 14, tzinfo=UTC)
    june = version_deploy(domain=clock.id, at=at, module="services.examples.apis_tax.annual_return_2027_06")[0]
    assert _armed(clock.id) == before
    back = version_deploy(domain=clock.id, at=at + timedelta(hours=1), to=registry.bundle("annual-return").digest)[0]
    assert _armed(clock.id) == before
    assert back.version.digest != june.version.digest
    assert registry.live_version("annual-return", domain=clock.id, now=at + timedelta(hours=2)) == back.version.digest
    assert registry.live_version("annual-return", domain=clock.id, now=at + timedelta(minutes=30)) == \
        june.version.digest


def test_a_pinned_version_is_never_deleted_or_edited(brand):
    clock = test_clock_create(brand=brand, frozen_time=START)
    tax_plan_subscribers(brand, clock, 1)
    advance(clock.id, datetime(2027, 3, 1, 14, tzinfo=UTC))
    row = Version.objects.get(pk=Job.objects.get(domain=clock.id, period="2026").version)
    with pytest.raises(KeepingTimeError) as exc, transaction.atomic():
        row.delete()
    assert exc.value.code == "version_pinned"
    row.sources = {**row.sources, "x": {"path": "x.py", "source": ""}}
    with pytest.raises(KeepingTimeError) as exc, transaction.atomic():
        row.save()
    assert exc.value.code == "version_immutable"
    assert Version.objects.filter(pk=row.pk).exists()


def test_a_stored_bundle_runs_its_own_source_in_its_own_namespace(brand):
    b = registry.bundle("annual-return")
    stored = b.stored()
    tax = stored["services.examples.apis_tax.tax"]
    # The stored tax.py says returns are due on 1 March; the working tree's says otherwise.
    tax["source"] += textwrap.dedent('''

        def file_due(x):
            from datetime import date
            return date(int(x.period) + 1, 3, 1)
    ''')
    sources = [bundles.Source(m, s["path"], s["source"]) for m, s in stored.items()]
    digest = bundles.digest_of(sources)
    Version.objects.create(digest=digest, module=b.module, services=["annual-return"], sources=stored,
                           created_at=START)
    before = dict(sys.modules)
    svc = registry.get("annual-return", digest)
    x = DueInput(input={}, keeps={}, period="2027", item="US")
    assert svc.clocks["file"].due(x) == date(2028, 3, 1)
    assert registry.get("annual-return").clocks["file"].due(x) == date(2028, 4, 15)
    # Nothing of the working tree was re-imported or replaced.
    assert all(sys.modules[name] is mod for name, mod in before.items() if not name.startswith("_kt_v_"))
    assert specs.get(registry.clock_spec_name("annual-return", "file", digest)) is svc.clocks["file"]


def test_services_from_a_brands_own_package_outside_the_project(db, tmp_path, registry_state, monkeypatch):
    pkg = tmp_path / "acme_brand"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "rules.py").write_text("from datetime import date\n\ndef due(x):\n    return date(int(x.period) + 1, 6, 30)\n")
    (pkg / "plan.py").write_text(textwrap.dedent('''
        from services.declare import Price, Service, SubjectSpec, clock

        from . import rules

        report = Service(name="acme-report", subject=SubjectSpec(kind="company", key="id"),
                         price=Price(usd=100), clocks={"file": clock("file", due=rules.due)})
    '''))
    monkeypatch.syspath_prepend(str(tmp_path))
    with override_settings(KEEPING_TIME_SERVICES=[*LIVE_PATHS, "acme_brand.plan"]):
        registry.load()
    b = registry.bundle("acme-report")
    assert {s.module for s in b.sources} == {"acme_brand.plan", "acme_brand.rules"}
    assert b.files == ("acme_brand/plan.py", "acme_brand/rules.py")
    row = registry.store(b, services=["acme-report"])
    registry._versioned.pop(b.digest)
    loaded = registry.get("acme-report", row.digest)
    assert loaded.clocks["file"].due(DueInput(input={}, keeps={}, period="2027", item="")) == date(2028, 6, 30)


@pytest.mark.django_db(transaction=True)
def test_get_versions_pinned_over_http_counts_only_the_callers_timers(brand, live_server):
    from tests.support.api import Client
    from timers import tenants

    clock = test_clock_create(brand=brand, frozen_time=START)
    tax_plan_subscribers(brand, clock, 2)
    advance(clock.id, datetime(2027, 3, 1, 14, tzinfo=UTC))
    _, secret = tenants.api_key_create(brand=brand)
    r = Client(live_server.url, secret).get(f"/versions?pinned=true&test_clock={clock.id}")
    assert r.status == 200, r.body
    by_service = {tuple(v["services"]): v for v in r.body["data"]}
    ar = by_service[("annual-return",)]
    armed = Timer.objects.filter(domain=clock.id, version=ar["id"], status__in=["armed", "held"])
    assert ar["armed_timers"] == armed.count() > 0 and ar["subjects"] == 2 and ar["live"] is True
    assert "services/examples/apis_tax/tax.py" in ar["files"]
    other = tenants.brand_get_or_create(name="globex")
    _, globex = tenants.api_key_create(brand=other)
    theirs = test_clock_create(brand=other, frozen_time=START)
    r = Client(live_server.url, globex).get(f"/versions?pinned=true&test_clock={theirs.id}")
    assert r.status == 200 and r.body["data"] == []


def test_the_versions_cli_deploys_lists_and_refuses_in_one_line(brand):
    import io

    from django.core.management.base import CommandError

    clock = test_clock_create(brand=brand, frozen_time=START)
    tax_plan_subscribers(brand, clock, 1)
    advance(clock.id, datetime(2027, 3, 1, 14, tzinfo=UTC))
    out = io.StringIO()
    call_command("versions", "deploy", "--module", "services.examples.apis_tax.annual_return_2027_06",
                 "--test-clock", clock.id, stdout=out)
    assert "deployed" in out.getvalue() and "annual-return" in out.getvalue()
    out = io.StringIO()
    call_command("versions", "list", "--pinned", "--test-clock", clock.id, stdout=out)
    lines = out.getvalue().splitlines()
    old = registry.bundle("annual-return").digest
    assert any(old[:15] in line and " pinned · " in line and "armed timers on 1 subjects" in line for line in lines), lines
    with pytest.raises(CommandError) as exc:
        call_command("versions", "show", "sha256:nope")
    assert str(exc.value).startswith("invalid_version: no version 'sha256:nope'")
    with pytest.raises(CommandError) as exc:
        call_command("versions", "deploy", "--module", "services.examples.nowhere", "--test-clock", clock.id)
    assert str(exc.value).startswith("invalid_version: cannot import")


def _open_2026_return_and_store_june(brand):
    clock = test_clock_create(brand=brand, frozen_time=START)
    tax_plan_subscribers(brand, clock, 1)
    advance(clock.id, datetime(2027, 3, 1, 14, tzinfo=UTC))
    june = version_deploy(domain=clock.id, at=datetime(2027, 3, 1, 14, tzinfo=UTC),
                          module="services.examples.apis_tax.annual_return_2027_06", name="2027-06")[0].version
    return clock, Job.objects.get(domain=clock.id, service="annual-return", period="2026"), june


def test_a_repin_prints_its_diff_then_supersedes_by_repin(brand):
    import io

    clock, job, june = _open_2026_return_and_store_june(brand)
    before = _armed(clock.id)
    out = io.StringIO()
    call_command("versions", "repin", job.id, "--to", "2027-06", "--dry-run", stdout=out)
    text = out.getvalue()
    assert _armed(clock.id) == before  # a dry run changes nothing
    assert text.startswith(f"would repin {job.id} · annual-return 2026 · to 2027-06 ·")
    assert "supersede" in text and ":rung:ack daily 7d:2026 day 1@0" in text
    assert "arm" in text and ":rung:ack daily 5d:2026 day 1@0" in text
    assert ":rung:notice 30d:" not in text  # unchanged: kept, not listed
    rows = text.splitlines()[1:]
    dry = job_repin(armer=DirectArmer(brand=brand, domain=clock.id), job=job, to=june, dry_run=True)
    arm = next(c for c in dry if c.action == "arm" and ":rung:notice 60d:2026@0" in c.key)
    assert f"arm {arm.key} {arm.owed_at:%Y-%m-%d %H:%M}Z" in rows  # as the seed's dry-run rows
    assert all(re.fullmatch(r"(arm|supersede) \S.*\S \d{4}-\d\d-\d\d \d\d:\d\dZ", r) for r in rows), rows
    changes = job_repin(armer=DirectArmer(brand=brand, domain=clock.id), job=job, to=june)
    superseded = Timer.objects.filter(domain=clock.id, by="repin")
    assert set(superseded.values_list("key", flat=True)) == {c.key for c in changes if c.action == "supersede"}
    assert all(":ack daily 7d:" in k for k in superseded.values_list("key", flat=True))
    job.refresh_from_db()
    assert job.version == june.digest
    assert Event.objects.filter(domain=clock.id, type="job.repinned", subject=job.id).exists()
    assert Event.objects.filter(domain=clock.id, type="clock.repinned").count() == 2  # file and pay
    advance(clock.id, datetime(2027, 5, 1, 14, tzinfo=UTC))
    assert not Event.objects.filter(domain=clock.id, type="timer.failed").exists()
    acks = Timer.objects.filter(domain=clock.id, key__contains=":rung:ack daily 5d:2026 day", status="fired")
    assert acks.count() >= 5 and set(acks.values_list("version", flat=True)) == {june.digest}


@pytest.mark.django_db(transaction=True)
def test_repin_over_http_dry_run_then_real(brand, live_server):
    from tests.support.api import Client
    from timers import tenants

    clock, job, june = _open_2026_return_and_store_june(brand)
    _, secret = tenants.api_key_create(brand=brand)
    api = Client(live_server.url, secret)
    r = api.post(f"/owner/jobs/{job.id}/repin", {"to": "2027-06", "dry_run": True})
    assert r.status == 200, r.body
    assert r.body["dry_run"] is True and r.body["label"] == "2027-06"
    assert {c["action"] for c in r.body["changes"]} == {"arm", "supersede", "keep"}
    assert not Timer.objects.filter(domain=clock.id, by="repin").exists()
    r = api.post(f"/owner/jobs/{job.id}/repin", {"to": "2027-06"})
    assert r.status == 200 and Timer.objects.filter(domain=clock.id, by="repin").exists()
    r = api.post(f"/owner/jobs/{job.id}/repin", {"to": "sha256:0000000000"})
    assert r.status == 404 and r.code == "resource_missing"
    r = api.post(f"/owner/jobs/{job.id}/repin", {"to": "sha256:nope"})
    assert r.status == 400


def test_versions_check_prints_what_a_deploy_would_change_and_changes_nothing(brand):
    import io

    clock = test_clock_create(brand=brand, frozen_time=START)
    tax_plan_subscribers(brand, clock, 1)
    advance(clock.id, datetime(2027, 3, 1, 14, tzinfo=UTC))
    before, deploys = _armed(clock.id), list(Version.objects.values_list("pk", flat=True))
    out = io.StringIO()
    call_command("versions", "check", "services.examples.apis_tax.annual_return_2027_06", "--test-clock", clock.id,
                 stdout=out)
    lines = out.getvalue().splitlines()
    assert "rungs   clocks.file: + notice 60d · ack daily 7d → ack daily 5d" in lines
    assert "price   late: {'usd': 200} → {'usd': 300}" in lines
    assert any(line.startswith("lib     services/examples/apis_tax/tax.py: ") and line.endswith(" unchanged")
               for line in lines)
    assert any(line.startswith("armed   job_") and "they keep it, rungs and price both" in line for line in lines)
    assert any(line.startswith("pinned  ") and "armed timers on 1 subjects" in line for line in lines)
    assert _armed(clock.id) == before and list(Version.objects.values_list("pk", flat=True)) == deploys


def _two_versions(tmp_path, monkeypatch, brand, package: str, v1: str, v2: str):
    """A brand's package with two versions of one Service module; v1 is loaded live. Returns a test clock."""
    pkg = tmp_path / package
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "v1.py").write_text(v1)
    (pkg / "v2.py").write_text(v2)
    monkeypatch.syspath_prepend(str(tmp_path))
    with override_settings(KEEPING_TIME_SERVICES=[*LIVE_PATHS, f"{package}.v1"]):
        registry.load()
    return test_clock_create(brand=brand, frozen_time=START)


CARRY = '''
from datetime import date

from services.declare import Price, Service, SubjectSpec, clock

carry = Service(name="carry-watch", subject=SubjectSpec(kind="taxpayer", key="ein"), price=Price(usd=10),
                clocks={"expires": clock("expires", due=lambda x: date(int(x.period) + 20, 12, 31),
                                         rungs=({rungs}), lives_on="subject")})
'''


def test_a_subject_clock_repins_when_a_newer_job_of_its_service_joins(brand, tmp_path, registry_state, monkeypatch):
    from services.jobs import job_open
    from tests.support.acme import acme_subject

    clock = _two_versions(tmp_path, monkeypatch, brand, "carry_brand", CARRY.replace("{rungs}", '"notice 90d",'),
                          CARRY.replace("{rungs}", '"notice 90d", "notice 30d"'))
    subject = acme_subject(brand, clock.id)
    armer = DirectArmer(brand=brand, domain=clock.id, now=START)
    first = job_open(armer=armer, brand_id=brand.id, domain=clock.id, service="carry-watch", subject=subject,
                     period="2026", input={})
    with override_settings(KEEPING_TIME_SERVICES=[*LIVE_PATHS, "carry_brand.v2"]):
        registry.load()
    second = job_open(armer=armer, brand_id=brand.id, domain=clock.id, service="carry-watch", subject=subject,
                      period="2027", input={})
    assert first.version != second.version
    old_clock = Clock.objects.get(owner_ref=first.id)
    assert old_clock.version == second.version
    assert Event.objects.filter(domain=clock.id, type="clock.repinned", subject=old_clock.id).exists()
    armed = set(Timer.objects.filter(domain=clock.id, owner__startswith=old_clock.id, status="armed")
                .values_list("key", "version"))
    assert any(":rung:notice 30d:2026@0" in k and v == second.version for k, v in armed)
    # The rung both bundles arm alike stays under its key and time, pinned to the newer one: the older
    # version keeps no timer of the clock.
    assert any(":rung:notice 90d:2026@0" in k for k, _ in armed)
    assert {v for _, v in armed} == {second.version}


def test_a_subject_clock_opened_in_a_batch_repins_when_a_newer_job_joins_in_the_same_batch(
        brand, tmp_path, registry_state, monkeypatch, handler):
    # The batch reads a subject's clocks once (calendars.clock_reads.subject_clocks) and keeps the list current
    # as clocks open: the repin of the first job's clock must not be skipped by the batch's older list.
    from calendars.clock_reads import subject_clocks
    from services.jobs import job_open
    from tests.support.acme import acme_subject
    from timers.armer import FiringArmer

    clock = _two_versions(tmp_path, monkeypatch, brand, "carry_batch", CARRY.replace("{rungs}", '"notice 90d",'),
                          CARRY.replace("{rungs}", '"notice 90d", "notice 30d"'))
    subject = acme_subject(brand, clock.id)
    opened = {}

    def reads(f):
        assert subject_clocks(domain=f.domain, subject_id=subject.id, ahead=set) == []

    def opens(f):
        period = f.timer.data["period"]
        opened[period] = job_open(armer=FiringArmer(f), brand_id=brand.id, domain=f.domain,
                                  service="carry-watch", subject=subject, period=period, input={})
        if period == "2026":  # a deploy between the two jobs
            with override_settings(KEEPING_TIME_SERVICES=[*LIVE_PATHS, "carry_batch.v2"]):
                registry.load()

    handler("t.reads", reads, atomic=True)
    handler("t.opens", opens, atomic=True)
    for key, hour, name, data in (("job_0:task:reads:1", 15, "t.reads", {}),
                                  ("job_1:task:opens:1", 16, "t.opens", {"period": "2026"}),
                                  ("job_2:task:opens:1", 17, "t.opens", {"period": "2027"})):
        timer_arm(brand=brand, key=key, owed_at=START.replace(hour=hour), domain=clock.id, handler=name, data=data)
    stats = advance(clock.id, START.replace(hour=18))
    assert stats.fired == 3 and stats.batches == 1
    first, second = opened["2026"], opened["2027"]
    assert first.version != second.version
    old_clock = Clock.objects.get(owner_ref=first.id)
    assert old_clock.version == second.version
    assert Event.objects.filter(domain=clock.id, type="clock.repinned", subject=old_clock.id).exists()
    # Inside the tick too: the kept rung is pinned to the newer bundle by the batch's own write.
    armed = Timer.objects.filter(domain=clock.id, owner__startswith=old_clock.id, status="armed")
    assert armed.filter(key__contains=":rung:notice 90d:2026@0").exists()
    assert set(armed.values_list("version", flat=True)) == {second.version}


def test_a_stored_subject_clock_repinned_by_a_firing_keeps_its_alike_timers_pinned_to_the_newer_bundle(
        brand, tmp_path, registry_state, monkeypatch, handler):
    # The first job's timers are in the table before the tick; the newer job opens inside a firing, so the
    # repin of the kept rung is the batch's own write of a stored timer (not an insert of a new one).
    from services.jobs import job_open
    from tests.support.acme import acme_subject
    from timers.armer import FiringArmer

    clock = _two_versions(tmp_path, monkeypatch, brand, "carry_stored", CARRY.replace("{rungs}", '"notice 90d",'),
                          CARRY.replace("{rungs}", '"notice 90d", "notice 30d"'))
    subject = acme_subject(brand, clock.id)
    first = job_open(armer=DirectArmer(brand=brand, domain=clock.id, now=START), brand_id=brand.id,
                     domain=clock.id, service="carry-watch", subject=subject, period="2026", input={})
    with override_settings(KEEPING_TIME_SERVICES=[*LIVE_PATHS, "carry_stored.v2"]):
        registry.load()
    opened = {}

    def opens(f):
        opened["job"] = job_open(armer=FiringArmer(f), brand_id=brand.id, domain=f.domain,
                                 service="carry-watch", subject=subject, period="2027", input={})

    handler("t.opens", opens, atomic=True)
    timer_arm(brand=brand, key="job_2:task:opens:1", owed_at=START.replace(hour=16), domain=clock.id,
              handler="t.opens")
    advance(clock.id, START.replace(hour=18))
    second = opened["job"]
    assert first.version != second.version
    old_clock = Clock.objects.get(owner_ref=first.id)
    armed = Timer.objects.filter(domain=clock.id, owner__startswith=old_clock.id, status="armed")
    assert armed.filter(key__contains=":rung:notice 90d:2026@0").exists()
    assert set(armed.values_list("version", flat=True)) == {second.version}

PLAN = '''
from services.declare import Price, Service, SubjectSpec

plan = Service(name="watch-plan", subject=SubjectSpec(kind="taxpayer", key="ein"), price=Price(usd={usd}, every="year"))
'''


def test_a_subscription_renews_at_the_price_of_the_plan_it_was_made_under(brand, tmp_path, registry_state,
                                                                         monkeypatch):
    from services.models import MoneyLine
    from services.subscriptions import subscription_create
    from tests.support.acme import acme_subject

    clock = _two_versions(tmp_path, monkeypatch, brand, "plan_brand", PLAN.replace("{usd}", "1_000"),
                          PLAN.replace("{usd}", "1_500"))
    old = subscription_create(brand=brand, domain=clock.id, subject=acme_subject(brand, clock.id),
                              service="watch-plan", now=START)
    with override_settings(KEEPING_TIME_SERVICES=[*LIVE_PATHS, "plan_brand.v2"]):
        registry.load()  # the price rises in the working tree; the old plan is not loaded any more
    registry._versioned.pop(old.version)
    advance(clock.id, START + timedelta(days=400))
    charges = MoneyLine.objects.filter(domain=clock.id, subscription=old, kind="charge").order_by("owed_at")
    assert [c.amount_cents for c in charges] == [100_000, 100_000]  # cycle 1 and its renewal: the plan it was made under
