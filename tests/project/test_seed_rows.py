"""The seed's last partial rows (issue 27): schedule names, a hard date that only a postponement moves, a proposal
near the close, versions as the seed prints them, and docs/kinds/. Each test fails when its row is taken out."""

from __future__ import annotations

import re
from datetime import date
from io import StringIO

import pytest
from django.core.management import call_command
from django.db import IntegrityError, transaction
from rest_framework.test import APIClient

from calendars import specs
from calendars.clocks import clock_open
from calendars.models import ClockItem
from calendars.proposals import clock_propose, proposal_approve, proposals_commit
from calendars.specs import ClockSpec
from services.declare import Service, ServiceError, SubjectSpec
from services.declare import clock as declared
from tests.conftest import at
from tests.support import ROOT
from tests.support.acme import acme_subject, open_return
from timers import keys
from timers.armer import DirectArmer
from timers.errors import KeepingTimeError
from timers.models import Event, Schedule, TestClock, Timer
from timers.schedule_targets import ScheduleError
from timers.schedules import schedule_create
from timers.tenants import api_key_create, brand_get_or_create
from timers.test_clocks import test_clock_create

HOOK = {"url": "https://example.com/hooks/fire"}


# -- schedules: a name pattern, unique per brand and clock -------------------------------------------------
@pytest.mark.parametrize("name", ["Nightly", "9am", "-x", "nightly report", "a" * 64, "nightly_report", "é",
                                  "nightly\n", " nightly", "\t", 5, ["x"]])
def test_a_schedule_name_off_the_pattern_is_400_invalid_name(api, clock, name):
    r = api.post("/schedules", {"test_clock": clock.id, "name": name, "spec": {"every": "1h"}, "target": HOOK},
                 format="json")
    assert r.status_code == 400, r.content
    assert r.json()["error"]["code"] == "invalid_name" and r.json()["error"]["param"] == "name"
    assert not Schedule.objects.exists()


def test_a_schedule_name_on_the_pattern_is_taken(api, clock):
    for name in ("n", "nightly-report", "a" + "b" * 62, ""):
        r = api.post("/schedules", {"test_clock": clock.id, "name": name, "spec": {"every": "1h"}, "target": HOOK},
                     format="json")
        assert r.status_code == 200, r.content
        assert r.json()["name"] == name


def test_a_schedule_name_is_unique_per_brand_and_clock(api, brand, clock):
    body = {"test_clock": clock.id, "name": "nightly", "spec": {"every": "1h"}, "target": HOOK}
    assert api.post("/schedules", body, format="json").status_code == 200
    r = api.post("/schedules", {**body, "spec": {"cron": "30 2 * * *"}}, format="json")
    assert r.status_code == 409 and r.json()["error"]["code"] == "schedule_name_taken", r.content
    assert Schedule.objects.filter(name="nightly").count() == 1
    # Another clock of the brand, and another brand on the live clock, each may use the name.
    other = test_clock_create(brand=brand, frozen_time=clock.frozen_time, name="other")
    assert api.post("/schedules", {**body, "test_clock": other.id}, format="json").status_code == 200
    schedule_create(brand=brand, domain="live", spec={"every": "1h"}, target=HOOK, name="nightly")
    schedule_create(brand=brand_get_or_create(name="apis.other"), domain="live", spec={"every": "1h"},
                    target=HOOK, name="nightly")
    with pytest.raises(ScheduleError) as exc:
        schedule_create(brand=brand, domain="live", spec={"every": "1h"}, target=HOOK, name="nightly")
    assert exc.value.code == "schedule_name_taken" and exc.value.status == 409
    # Unnamed schedules are many.
    for _ in range(2):
        schedule_create(brand=brand, domain=clock.id, spec={"every": "1h"}, target=HOOK)


def test_the_database_keeps_a_schedule_name_once_not_a_check_before(brand, clock):
    sch = schedule_create(brand=brand, domain=clock.id, spec={"every": "1h"}, target=HOOK, name="nightly")
    with pytest.raises(IntegrityError), transaction.atomic():
        Schedule.objects.create(id="sch_twin", brand=brand, domain=clock.id, name="nightly", spec=sch.spec,
                                target_kind=sch.target_kind, target=sch.target, created_at=sch.created_at)


# -- a hard date moves only by a postponement ---------------------------------------------------------------
def _statute(x) -> date:
    return date.fromisoformat(x.get("statute_extended_to", "2030-04-15"))


def test_a_hard_clock_that_declares_moves_stops_the_load_naming_file_and_field():
    subject = SubjectSpec(kind="account", key="domain")
    bad = Service(name="t-hard-moves", subject=subject, where="brand/annual_return.py",
                  clocks={"pay": declared("pay", due=_statute, hard=True, moves={"extend": _statute})})
    with pytest.raises(ServiceError, match=r"^brand/annual_return.py: clocks.pay.moves: a hard date moves only by "
                                           r"a postponement"):
        bad.check({})
    Service(name="t-hard", subject=subject, where="brand/annual_return.py",
            clocks={"pay": declared("pay", due=_statute, hard=True)}).check({})  # hard alone loads


def test_new_inputs_never_move_a_hard_date_a_postponement_does(api, brand, clock):
    specs.register("tests.seed_rows.statute", ClockSpec(name="assess", due=_statute, items=("US",), hard=True,
                                                                lives_on="subject"))
    subject = acme_subject(brand, clock.id)
    armer = DirectArmer(brand=brand, domain=clock.id)
    hard = clock_open(armer=armer, brand=brand, domain=clock.id, subject=subject, spec_name="tests.seed_rows.statute",
                      owner_ref=subject.id, period="2026")
    before = set(Timer.objects.filter(domain=clock.id).values_list("key", "status", "owed_at"))
    r = api.post(f"/clocks/{hard.id}/inputs", {"inputs": {"statute_extended_to": "2031-12-31"}}, format="json")
    assert r.status_code == 409 and r.json()["error"]["code"] == "hard_date", r.content
    assert "postponement" in r.json()["error"]["message"]
    item = ClockItem.objects.get(clock=hard)
    assert item.due_date == date(2030, 4, 15) and item.moves == 0
    hard.refresh_from_db()
    assert "statute_extended_to" not in hard.inputs  # nothing kept
    assert set(Timer.objects.filter(domain=clock.id).values_list("key", "status", "owed_at")) == before
    assert not Event.objects.filter(domain=clock.id, type="clock.moved").exists()
    # Inputs that leave the date where it is are taken; a postponement moves it.
    r = api.post(f"/clocks/{hard.id}/inputs", {"inputs": {"statute_extended_to": "2030-04-15"}}, format="json")
    assert r.status_code == 200, r.content
    r = api.post(f"/clocks/{hard.id}/items/US/postpone", {"to": "2030-06-17", "notice": "IR-2030-1"}, format="json")
    assert r.status_code == 200, r.content
    item.refresh_from_db()
    assert item.due_date == date(2030, 6, 17)
    assert Event.objects.get(domain=clock.id, type="clock.moved", subject=f"{hard.id}#US").data["by"] == "calendar"


# -- a proposal near the close: whose time decides -------------------------------------------------------
CLOSE_MINUS_2S = "2028-04-19T03:59:58Z"  # 23:59:58 in New York on 2028-04-18, the rolled pay date
AFTER_CLOSE_3S = "2028-04-19T04:00:03Z"  # 00:00:03 the next day


@pytest.fixture
def pay_item(brand):
    tc = test_clock_create(brand=brand, frozen_time=at("2028-04-18T12:00Z"), name="close")
    subject = acme_subject(brand, tc.id)
    _, pay = open_return(brand, tc, subject, now=at("2028-02-01T14:00Z"))
    item = ClockItem.objects.select_related("clock__subject__calendar").get(clock=pay, item="US")
    assert item.due_date == date(2028, 4, 18) and item.clock.hard
    return tc, item


def test_a_proposal_in_the_gate_at_235958_committed_at_000003_is_on_time(brand, pay_item):
    tc, item = pay_item
    p = clock_propose(armer=DirectArmer(brand=brand, domain=tc.id, now=at(CLOSE_MINUS_2S)), item=item, step="pay")
    assert p.state == "queued"
    [done] = proposals_commit(armer=DirectArmer(brand=brand, domain=tc.id, now=at(AFTER_CLOSE_3S)))
    assert (done.id, done.state, done.outcome, done.on_time) == (p.id, "committed", "committed", True)
    assert done.judged_at == at(CLOSE_MINUS_2S) and done.committed_at == at(AFTER_CLOSE_3S)
    assert Event.objects.filter(domain=tc.id, type="clock.step", subject=item.owner_key).count() == 1
    assert proposals_commit(armer=DirectArmer(brand=brand, domain=tc.id, now=at(AFTER_CLOSE_3S))) == []  # once


def test_a_proposal_that_waited_on_a_person_is_judged_when_it_commits(brand, pay_item):
    tc, item = pay_item
    p = clock_propose(armer=DirectArmer(brand=brand, domain=tc.id, now=at(CLOSE_MINUS_2S)), item=item, step="pay",
                      waits_on="Ada Lovelace")
    assert p.state == "waiting"
    assert proposals_commit(armer=DirectArmer(brand=brand, domain=tc.id, now=at(AFTER_CLOSE_3S))) == []
    done = proposal_approve(armer=DirectArmer(brand=brand, domain=tc.id, now=at(AFTER_CLOSE_3S)), proposal=p)
    assert (done.state, done.outcome, done.on_time) == ("refused", "date_passed", False)
    assert done.judged_at == at(AFTER_CLOSE_3S)
    assert not Event.objects.filter(domain=tc.id, type="clock.step", subject=item.owner_key).exists()
    # Said yes a second before the close, the same proposal would have been on time.
    early = clock_propose(armer=DirectArmer(brand=brand, domain=tc.id, now=at(CLOSE_MINUS_2S)), item=item,
                          step="pay", waits_on="Ada Lovelace")
    done = proposal_approve(armer=DirectArmer(brand=brand, domain=tc.id, now=at("2028-04-19T03:59:59Z")),
                            proposal=early)
    assert (done.state, done.on_time) == ("committed", True)
    with pytest.raises(KeepingTimeError) as exc:
        proposal_approve(armer=DirectArmer(brand=brand, domain=tc.id, now=at(AFTER_CLOSE_3S)), proposal=early)
    assert exc.value.code == "proposal_not_waiting"


# -- versions, as the seed prints them ----------------------------------------------------------------------
LIB = '''
from datetime import date


def file_due(x):
    return date(int(x.period) + 1, 4, 15)


def extended_due(x):
    return date(int(x.period) + 1, 10, 15)


def late_filing(days):
    return {factor} * days
'''
RETURN = '''
from services.declare import Price, Service, SubjectSpec, clock

from . import lib

ret = Service(name="lib-return", subject=SubjectSpec(kind="taxpayer", key="ein"), price=Price(usd=10),
              clocks={{"file": clock("file", due=lib.file_due, moves={{"extend": lib.extended_due}},
                                    rungs=({rungs}))}})
'''


def test_versions_check_prints_bundle_rungs_lib_armed_pinned_and_next_as_the_seed(brand, tmp_path, monkeypatch):
    from django.test import override_settings

    from services import registry
    from services.jobs import job_open
    from services.versions import version_deploy
    from tests.support.versions import LIVE_PATHS, START

    saved = (dict(registry._services), dict(registry._bundles), dict(registry._versioned), dict(specs._registry))
    pkg = tmp_path / "lib_brand"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "lib.py").write_text(LIB.format(factor=5))
    (pkg / "v1.py").write_text(RETURN.format(rungs='"notice 30d", "ack daily 7d"'))
    (pkg / "v2.py").write_text(RETURN.format(rungs='"notice 90d", "notice 30d", "ack daily 5d"'))
    monkeypatch.syspath_prepend(str(tmp_path))
    try:
        with override_settings(KEEPING_TIME_SERVICES=[*LIVE_PATHS, "lib_brand.v1"]):
            registry.load()
        tc = test_clock_create(brand=brand, frozen_time=START)
        version_deploy(domain=tc.id, at=START, module="lib_brand.v1", name="2027-01")
        job = job_open(armer=DirectArmer(brand=brand, domain=tc.id, now=START), brand_id=brand.id, domain=tc.id,
                       service="lib-return", subject=acme_subject(brand, tc.id), period="2026", input={})
        armed = Timer.objects.filter(domain=tc.id, status="armed", version=job.version).count()
        (pkg / "lib.py").write_text(LIB.format(factor=7))  # the June deploy changes late_filing only
        before = list(Timer.objects.filter(domain=tc.id).values_list("key", "status", "owed_at", "version"))
        out = StringIO()
        call_command("versions", "check", "lib_brand.v2", "--test-clock", tc.id, stdout=out)
    finally:
        for live, old in zip((registry._services, registry._bundles, registry._versioned, specs._registry), saved,
                             strict=True):
            live.clear()
            live.update(old)
    lines = out.getvalue().splitlines()
    head, *rest = lines
    assert "lib_brand/v2.py · against live 2027-01 · sha256:" in head and " · deploys as sha256:" in head
    assert rest[0] == "bundle  the Service file and every module it imports: lib_brand/lib.py"
    assert "rungs   clocks.file: + notice 90d · ack daily 7d → ack daily 5d" in rest
    assert "lib     lib_brand/lib.py: late_filing changed · file_due and extended_due unchanged" in rest
    assert f"armed   {job.id} · {armed} armed timers on 2027-01 · they keep it, rungs and lib_brand/lib.py both" in rest
    assert ("pinned  2027-01 stays runnable until its last timer closes · "
            f"{armed} armed timers on 1 subjects · a rollback to it arms nothing and rewrites nothing") in rest
    assert rest[-1].startswith("next    jobs opened and minted from the deploy run sha256:")
    assert list(Timer.objects.filter(domain=tc.id).values_list("key", "status", "owed_at", "version")) == before


CARRY = '''
from datetime import date

from services.declare import Price, Service, SubjectSpec, clock

carry = Service(name="carry-held", subject=SubjectSpec(kind="taxpayer", key="ein"), price=Price(usd=10),
                clocks={"expires": clock("expires", due=lambda x: date(int(x.period) + 20, 12, 31),
                                         rungs=("notice 90d",), lives_on="subject")})
'''


def test_get_versions_pinned_names_a_version_held_only_by_a_subjects_clock(brand, api, tmp_path, monkeypatch):
    from django.test import override_settings

    from services import registry
    from services.jobs import job_open
    from services.models import Job
    from services.versions import version_deploy
    from tests.support.versions import LIVE_PATHS, START

    saved = (dict(registry._services), dict(registry._bundles), dict(registry._versioned), dict(specs._registry))
    pkg = tmp_path / "held_brand"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "v1.py").write_text(CARRY)
    monkeypatch.syspath_prepend(str(tmp_path))
    try:
        with override_settings(KEEPING_TIME_SERVICES=[*LIVE_PATHS, "held_brand.v1"]):
            registry.load()
        tc = test_clock_create(brand=brand, frozen_time=START)
        version_deploy(domain=tc.id, at=START, module="held_brand.v1", name="2026-01")
        subject = acme_subject(brand, tc.id)
        job = job_open(armer=DirectArmer(brand=brand, domain=tc.id, now=START), brand_id=brand.id, domain=tc.id,
                       service="carry-held", subject=subject, period="2026", input={})
        r = api.get(f"/versions?pinned=true&test_clock={tc.id}").json()
        [held] = [v for v in r["data"] if v["label"] == "2026-01"]
        assert held["summary"] == f"{held['armed_timers']} armed timers on 1 subjects"
        # The client leaves before a newer job joins its subject: only the subject's clock keeps the version.
        Job.objects.filter(pk=job.id).update(status=Job.Status.DELIVERED)
        r = api.get(f"/versions?pinned=true&test_clock={tc.id}").json()
        [held] = [v for v in r["data"] if v["label"] == "2026-01"]
        assert held["summary"] == f"1 clock · expiring on {subject.id}, to 2046-12-31"
        assert held["armed_timers"] > 0
        out = StringIO()
        call_command("versions", "list", "--pinned", "--test-clock", tc.id, stdout=out)
        assert f"1 clock · expiring on {subject.id}, to 2046-12-31" in out.getvalue()
    finally:
        for live, old in zip((registry._services, registry._bundles, registry._versioned, specs._registry), saved,
                             strict=True):
            live.clear()
            live.update(old)


# -- docs/kinds/: each kind of time is one key with one page that owns it ------------------------------------
KIND_PAGES = {"deadlines": ("deadline",), "asks": ("ask",), "grants": ("ask",), "tasks": ("task",),
              "clocks": ("rung", "due"), "schedules": ("schedule",), "cycles": ("cycle",), "money": ("money",),
              "windows": ("window",)}


@pytest.mark.parametrize("page", sorted(KIND_PAGES))
def test_each_kind_has_one_page_whose_example_keys_parse_with_the_key_grammar(page):
    text = (ROOT / "docs" / "kinds" / f"{page}.md").read_text()
    assert f"(docs/kinds/{page}.md)" in (ROOT / "README.md").read_text()  # linked from the README
    rows = dict(re.findall(r"^\| (Key|Place|Armed by|Re-armed by|Records) \| (.+) \|$", text, re.M))
    assert set(rows) >= {"Key", "Place", "Re-armed by", "Records"}, rows
    kinds = KIND_PAGES[page]
    place = int(rows["Place"].split(" · ")[0])
    assert {keys.PLACES[k] for k in kinds} == {place}
    examples = [line for block in re.findall(r"^```key\n(.*?)^```", text, re.M | re.S)
                for line in block.splitlines() if line]
    assert examples
    for example in examples:
        key = keys.parse(example)
        assert key.kind in kinds and key.place == place and str(key) == example
        assert f":{key.kind}:" in rows["Key"]  # the grammar the page gives names the kind its example uses


def test_the_queue_over_http_a_proposal_in_the_gate_commits_and_one_waiting_on_a_person_waits(brand, api, pay_item):
    tc, item = pay_item
    TestClock.objects.filter(pk=tc.id).update(frozen_time=at(CLOSE_MINUS_2S))
    path = f"/clocks/{item.clock_id}/items/US/proposals"
    r = api.post(path, {"step": "pay"}, format="json")
    assert r.status_code == 200, r.content
    assert {k: r.json()[k] for k in ("object", "state", "outcome", "on_time", "proposed_at")} == {
        "object": "proposal", "state": "committed", "outcome": "committed", "on_time": True,
        "proposed_at": "2028-04-19T03:59:58Z"}
    waiting = api.post(path, {"step": "pay", "waits_on": "Ada Lovelace"}, format="json").json()
    assert waiting["state"] == "waiting" and waiting["committed_at"] is None
    assert api.get(f"/proposals/{waiting['id']}").json()["state"] == "waiting"
    TestClock.objects.filter(pk=tc.id).update(frozen_time=at(AFTER_CLOSE_3S))  # the person says yes after the close
    r = api.post(f"/proposals/{waiting['id']}/approve", {}, format="json")
    assert r.status_code == 200, r.content
    assert {k: r.json()[k] for k in ("state", "outcome", "on_time", "judged_at")} == {
        "state": "refused", "outcome": "date_passed", "on_time": False, "judged_at": "2028-04-19T04:00:03Z"}
    r = api.post(f"/proposals/{waiting['id']}/approve", {}, format="json")
    assert r.status_code == 409 and r.json()["error"]["code"] == "proposal_not_waiting"
    assert api.get("/proposals/prp_nope").status_code == 404
    for bad in ({"step": "Pay"}, {}, {"step": "pay", "waits_on": "Ada\n"}):
        assert api.post(path, bad, format="json").status_code == 400
    other = brand_get_or_create(name="apis.other")
    _, key = api_key_create(brand=other)
    stranger = APIClient()
    stranger.credentials(HTTP_AUTHORIZATION=f"Bearer {key}")
    assert stranger.get(f"/proposals/{waiting['id']}").status_code == 404


@pytest.mark.django_db(transaction=True)
def test_two_workers_draining_the_queue_commit_each_proposal_once(brand, pay_item):
    """The drain locks what it takes (FOR UPDATE SKIP LOCKED): a second drain while the first is still in its
    transaction takes nothing. Without the lock it reads the proposal still queued and commits it again."""
    import threading

    from django.db import close_old_connections, connection

    if connection.vendor != "postgresql":
        pytest.skip("row locks: PostgreSQL")
    tc, item = pay_item
    p = clock_propose(armer=DirectArmer(brand=brand, domain=tc.id, now=at(CLOSE_MINUS_2S)), item=item, step="pay")
    took, go = threading.Event(), threading.Event()
    got: dict[str, list] = {}
    errors: list[BaseException] = []

    def first() -> None:
        try:
            with transaction.atomic():
                got["first"] = proposals_commit(armer=DirectArmer(brand=brand, domain=tc.id, now=at(AFTER_CLOSE_3S)))
                took.set()
                go.wait(10)
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)
            took.set()
        finally:
            close_old_connections()

    def second() -> None:
        try:
            took.wait(10)
            got["second"] = proposals_commit(armer=DirectArmer(brand=brand, domain=tc.id, now=at(AFTER_CLOSE_3S)))
        except BaseException as exc:  # noqa: BLE001
            errors.append(exc)
        finally:
            go.set()
            close_old_connections()

    threads = [threading.Thread(target=first), threading.Thread(target=second)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert not errors, errors
    assert [x.id for x in got["first"]] == [p.id] and got["second"] == []
    assert Event.objects.filter(domain=tc.id, type="clock.step", subject=item.owner_key).count() == 1
