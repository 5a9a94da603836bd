"""People's time (issue 9): steps, Tasks and holds, asks and grants, step deadlines, signals and policy.set,
windows, lapses heard — on api.forsale's two deals (`loadexample api_forsale`) and over real HTTP.

The example's script (services/management/commands/loadexample.py ``_api_forsale``), on a test clock from
2027-10-20 14:00Z: deal A is appraised by grace, then its offer link expires twice and it lapses on 11-04;
deal B's Task is taken by linus, extended once (a second extend refused), reopened at the hold's end, done
by grace, answered by the buyer, granted registrar for 5d, then stall_days goes 14 → 7 on 11-05.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from io import StringIO

import pytest
from django.contrib.auth import get_user_model
from django.core import mail
from django.core.management import call_command

from services import registry
from services.declare import Pool, Scope, Service, ServiceError, Signal, Step, SubjectSpec
from services.models import Ask, Grant, Job, MoneyLine, Notification, PolicyValue, Task, Window
from services.tasks import task_extend, task_release, task_take
from timers import transports
from timers.advance import advance
from timers.armer import DirectArmer
from timers.errors import KeepingTimeError
from timers.models import Brand, Event, Membership, Timer

END = datetime(2027, 12, 1, tzinfo=UTC)


def at(month: int, day: int, hour: int, minute: int = 0) -> datetime:
    return datetime(2027, month, day, hour, minute, tzinfo=UTC)


def load() -> dict:
    out = StringIO()
    call_command("loadexample", "api_forsale", stdout=out)
    text = out.getvalue()
    subjects = [line.split()[1] for line in text.splitlines() if line.startswith("subject ")]
    return {"tc": text.split("test clock ")[1].split()[0], "A": subjects[0], "B": subjects[1]}


def deal(tc: str, code: str) -> Job:
    return Job.objects.get(domain=tc, service="deal", period={"A": "A-1001", "B": "B-2001"}[code])


def events(tc: str, type: str, subject: str | None = None) -> list[Event]:
    qs = Event.objects.filter(domain=tc, type=type)
    if subject:
        qs = qs.filter(subject=subject)
    return list(qs.order_by("owed_at", "id"))


@pytest.fixture
def forsale(db):
    return load()


# -- the declaration ----------------------------------------------------------------------------------------
SUBJECT = SubjectSpec(kind="account", key="domain")


@pytest.mark.parametrize("kw, field", [
    ({"steps": (Step("a", pool="nobody"),)}, "deliver.a.pool"),
    ({"steps": (Step("a", needs="registrar"),)}, "deliver.a.needs"),
    ({"steps": (Step("a", expires="7d"),)}, "deliver.a.expires"),
    ({"steps": (Step("a", party="buyer", expires="1d"),)}, "deliver.a.expires"),
    ({"steps": (Step("a"), Step("a"))}, "deliver.a"),
    ({"steps": (Step("A b"),)}, "deliver.A b"),
    ({"pools": {"p": Pool(hold="2 days")}}, "pools.p.hold"),
    ({"scopes": {"s": Scope(party="buyer", term="forever")}}, "scope.s.for"),
    ({"policy": {"stall_days": 0}}, "policy.stall_days"),
    ({"steps": (Step("a"),), "signals": {"dark": Signal(silent="14d", goto="nowhere")}}, "signals.dark.goto"),
    ({"signals": {"dark": Signal(silent="stall_days")}}, "signals.dark.silent"),
])
def test_a_malformed_delivery_is_refused_at_load_naming_file_and_field(kw, field):
    svc = Service(name="t-bad", subject=SUBJECT, where="brand/deal.py", **kw)
    with pytest.raises(ServiceError) as exc:
        svc.check({})
    assert str(exc.value).startswith(f"brand/deal.py: {field}")


def test_the_example_declares_each_kind():
    svc = registry.get("deal")
    assert [s.name for s in svc.steps] == ["appraise", "offer", "transfer"]
    assert svc.pool_hold["brokers"] == timedelta(days=2) or svc.pool_hold["brokers"].days == 2
    assert svc.signals["gone_dark"].silent == "stall_days" and svc.policy == {"stall_days": 14}


# -- the example, ticked --------------------------------------------------------------------------------------
def test_a_task_hold_warns_at_three_quarters_and_reopens_at_its_end(forsale):
    tc = forsale["tc"]
    advance(tc, END)
    b = deal(tc, "B")
    task = Task.objects.get(job=b, step="appraise")
    # linus took it 10-21 09:00 (hold 2d), extended it once to 10-25 09:00; warned at 3/4 of the extension
    # (not of the first hold), reopened at the extended end; grace took it next and did it.
    warned = events(tc, "task.hold_warning", b.id)
    assert [e.owed_at for e in warned] == [at(10, 24, 21)]
    reopened = events(tc, "task.reopened", b.id)
    assert [(e.owed_at, e.data["member"], e.data["why"]) for e in reopened][0] == (at(10, 25, 9), "linus",
                                                                                      "hold_ended")
    assert task.status == "done" and task.member.username == "grace" and task.takes == 2
    hold = Timer.objects.get(domain=tc, key=f"{b.id}:task:hold appraise:#1 take 1")
    assert hold.status == "fired" and hold.owed_at == at(10, 23, 9)  # the extension never moved it
    assert Timer.objects.get(domain=tc, key=f"{b.id}:task:hold appraise:#1 take 1@1").owed_at == at(10, 25, 9)
    notice = Notification.objects.get(domain=tc, kind="task.hold_ending", recipient="linus")
    # In the brand's zone (api.forsale keeps Los Angeles time), named: not UTC.
    assert "ends Mon 25 Oct 2027, 02:00 PDT;" in notice.message and "Z;" not in notice.message


def test_a_hold_extends_once_and_the_second_extend_changes_nothing(forsale):
    tc = forsale["tc"]
    advance(tc, at(10, 22, 12))
    b = deal(tc, "B")
    refused = events(tc, "act.refused")
    assert [(e.owed_at, e.data["code"]) for e in refused] == [(at(10, 22, 11), "hold_extended")]
    task = Task.objects.select_related("job", "member").get(job=b, step="appraise")
    assert task.extended and task.hold_until == at(10, 25, 9)
    before = (task.hold_until, Event.objects.filter(domain=tc).count(), Timer.objects.filter(domain=tc).count())
    with pytest.raises(KeepingTimeError) as exc:
        task_extend(armer=DirectArmer(brand=b.brand_id, domain=tc), task=task, member="linus")
    assert exc.value.code == "hold_extended" and exc.value.status == 409
    task.refresh_from_db()
    assert (task.hold_until, Event.objects.filter(domain=tc).count(), Timer.objects.filter(domain=tc).count()) == before
    # Once per Task: given back and taken again, by the same member or another, it is not extended a second time.
    armer = DirectArmer(brand=b.brand_id, domain=tc)
    task_release(armer=armer, task=task, member="linus")
    task.refresh_from_db()
    task_take(armer=armer, task=task, member="linus")
    task.refresh_from_db()
    assert not task.extended and task.extensions == 1
    with pytest.raises(KeepingTimeError) as again:
        task_extend(armer=armer, task=task, member="linus")
    assert again.value.code == "hold_extended"


def test_a_link_reminds_a_day_before_reopens_once_and_the_second_expiry_lapses_the_job(forsale, settings):
    settings.KEEPING_TIME = {**settings.KEEPING_TIME,
                             "TRANSPORTS": {**settings.KEEPING_TIME["TRANSPORTS"], "email": "django-email"}}
    # The brand's owner, a member with an address (the buyer is Alpha's contact, as loadexample makes them).
    owner = get_user_model().objects.create_user("olive", email="owner@api.forsale")
    Membership.objects.create(user=owner, brand=Brand.objects.get(name="api.forsale"), role="owner", name="Olive")
    transports.registry.pop("email", None)
    try:
        tc = forsale["tc"]
        advance(tc, END)
        a = deal(tc, "A")
        assert a.status == "lapsed" and a.closed_at == at(11, 4, 16)
        assert [e.owed_at for e in events(tc, "ask.reminded", a.id)] == [at(10, 27, 16), at(11, 3, 16)]
        reopened = events(tc, "ask.reopened", a.id)
        assert [(e.owed_at, e.data["expires"]) for e in reopened] == [(at(10, 28, 16), "2027-11-04T16:00:00Z")]
        assert Ask.objects.get(job=a, step="offer").status == "expired"
        # The hold returns, less the appraisal grace already did: that act stays charged, and her pay for it
        # (its own line, to her) stays whole.
        lines = {(m.kind, m.amount_cents, m.status) for m in MoneyLine.objects.filter(job=a)}
        assert lines == {("hold", 150000, "collected"), ("charge", 20000, "collected"),
                         ("release", 130000, "collected"), ("pay", 12000, "collected")}
        assert MoneyLine.objects.get(job=a, kind="pay").member.username == "grace"
        lapsed = events(tc, "job.lapsed", a.id)[0]
        assert lapsed.data["released"] == 130000 and lapsed.data["acts_charged"] == 20000
        # Its timers stopped: the job's deadline never comes for a lapsed deal.
        assert not Timer.objects.filter(domain=tc, owner=a.id, status="armed").exists()
        assert not events(tc, "job.at_risk", a.id)
        heard = sorted(Notification.objects.filter(domain=tc, kind="job.lapsed", subject=a.id)
                       .values_list("recipient", flat=True))
        assert heard == ["Ana Alvarez", "Olive"]  # the party "the buyer" is Alpha's buyer, a person record
        lapse_mail = sorted(m.to[0] for m in mail.outbox if "Work stopped" in m.subject and "A-1001" in m.subject)
        assert lapse_mail == ["ana@alpha.example", "owner@api.forsale"]  # one each, at the far end
    finally:
        transports.registry.pop("email", None)


def test_a_step_that_needs_a_grant_is_refused_by_the_gate_once_the_term_ended(forsale):
    tc = forsale["tc"]
    advance(tc, at(11, 9, 13))
    b = deal(tc, "B")
    grant = Grant.objects.get(job=b, scope="registrar")
    assert grant.status == "ended" and grant.ends_at == at(11, 8, 10, 5)
    asked = Ask.objects.get(job=b, scope="registrar")  # the party is asked again
    assert asked.status == "open" and asked.party == "the buyer"
    refused = Event.objects.get(domain=tc, type="gate.refused")
    assert refused.owed_at == at(11, 9, 12) and refused.data["code"] == "needs_grant"
    assert b.step == "transfer" and Task.objects.get(job=b, step="transfer").status == "taken"
    assert not MoneyLine.objects.filter(job=b, step="transfer").exists()  # nothing of the refused act landed


def test_policy_set_brings_gone_dark_to_the_10th_from_the_last_reply_on_the_3rd(forsale):
    """The seed: stall_days 14 → 7, the account's last reply on 3 November → gone_dark on 10 November, not 17."""
    tc = forsale["tc"]
    advance(tc, END)
    b = deal(tc, "B")
    raised = events(tc, "signal.raised", b.id)
    assert [e.owed_at for e in raised] == [datetime(2027, 11, 10, 10, tzinfo=UTC)]
    assert raised[0].data["last_activity"] == "2027-11-03T10:00:00Z"
    # Every instant the record holds is UTC written with Z, never +00:00 (the seed's form for events).
    assert not Event.objects.filter(domain=tc, data__icontains="+00:00").exists()
    chain = {t.key.rsplit(":", 1)[1]: t for t in Timer.objects.filter(domain=tc, owner=b.id,
                                                                         key__contains=":gone_dark:")}
    assert chain["B-2001"].status == "fired"  # 11-03 14:00 read the reply at 10:00: next check 14d on
    assert chain["B-2001@1"].status == "superseded" and chain["B-2001@1"].by == "policy.set"
    assert chain["B-2001@1"].superseded_by == chain["B-2001@2"].id
    assert chain["B-2001@2"].status == "fired" and chain["B-2001@2"].owed_at == datetime(2027, 11, 10, 10, tzinfo=UTC)
    assert PolicyValue.objects.get(domain=tc, service="deal", name="stall_days").value == 7
    # Its goto moved the job back to the offer: the transfer's Task was canceled, a new link sent.
    assert Task.objects.get(job=b, step="transfer").status == "canceled"
    assert Ask.objects.filter(job=b, step="offer").count() == 2
    # Deal A was already at the offer when its own gone_dark came: it stayed there (one offer ask).
    assert Ask.objects.filter(job=deal(tc, "A"), step="offer").count() == 1


def test_without_the_policy_change_gone_dark_comes_on_the_17th(forsale):
    tc = forsale["tc"]
    b_subject = forsale["B"]
    Timer.objects.filter(domain=tc, owner=b_subject, key__contains="stall_days").delete()
    advance(tc, END)
    raised = events(tc, "signal.raised", deal(tc, "B").id)
    assert [e.owed_at for e in raised] == [datetime(2027, 11, 17, 10, tzinfo=UTC)]


def test_step_deadlines_warn_and_go_late_and_date_the_task(forsale):
    tc = forsale["tc"]
    advance(tc, END)
    b = deal(tc, "B")
    assert Task.objects.get(job=b, step="appraise").due_at == at(10, 25, 14)
    assert [(e.type, e.owed_at) for e in events(tc, "step.at_risk", b.id) + events(tc, "step.late", b.id)] == [
        ("step.at_risk", at(10, 24, 8)), ("step.at_risk", at(11, 4, 15)),
        ("step.late", at(10, 25, 14)), ("step.late", at(11, 5, 9))]
    a = deal(tc, "A")  # appraised a day in: its step deadline ended with the step, never warned
    assert not events(tc, "step.at_risk", a.id)
    ended = Timer.objects.get(domain=tc, key=f"{a.id}:deadline:appraise late:#1")
    assert ended.status == "superseded" and ended.by == "step.done"


def test_a_standby_window_closes_at_its_end(forsale):
    tc = forsale["tc"]
    advance(tc, END)
    win = Window.objects.get(domain=tc)
    assert (win.member.username, win.status, win.closed_at) == ("linus", "closed", at(11, 1, 17))
    assert Timer.objects.get(domain=tc, key=f"{win.id}:window:standby:open").status == "fired"


def test_people_never_re_arm_a_timer_off_the_closed_list(forsale):
    """Takes, extends, answers, grants and activity arm, end and read timers; only policy.set re-armed one."""
    tc = forsale["tc"]
    advance(tc, END)
    rearmed = Timer.objects.filter(domain=tc).exclude(by="").exclude(superseded_by="")
    assert {t.by for t in rearmed} == {"policy.set"}
    assert not Timer.objects.filter(domain=tc, by="resume").exists()


def test_the_example_runs_the_same_four_ways(forsale):
    out = StringIO()
    call_command("tick", "--to", "2027-12-01T00:00:00Z", "--compare", "--redeliver", "--test-clock", forsale["tc"],
                 stdout=out)
    text = out.getvalue()
    assert "all 4 agree" in text and " 0 submissions sent twice" in text


# -- over HTTP --------------------------------------------------------------------------------------------
@pytest.fixture
def http(live_server, transactional_db):
    from tests.support.api import Client
    from timers import tenants

    ids = load()
    _, secret = tenants.api_key_create(brand=Brand.objects.get(name="api.forsale"))
    return Client(live_server.url, secret), ids


def test_a_member_takes_extends_once_and_is_refused_the_second_time_over_http(http):
    api, ids = http
    tc = ids["tc"]
    advance(tc, at(10, 20, 14, 30))  # the deals opened; nothing of the script ran yet
    job = deal(tc, "A").id
    r = api.post(f"/jobs/{job}/steps/appraise/take", {"member": "mallory"})
    assert (r.status, r.body["error"]["code"]) == (403, "not_in_pool")
    r = api.post(f"/jobs/{job}/steps/appraise/take", {"member": "linus"})
    assert r.status == 200 and r.body["task"]["member"] == "linus" and r.body["step"] == "appraise"
    assert r.body["task"]["hold_until"] == "2027-10-22T14:30:00Z"
    r = api.post(f"/jobs/{job}/steps/appraise/extend", {"member": "linus"})
    assert r.status == 200 and r.body["task"]["hold_until"] == "2027-10-24T14:30:00Z"
    r = api.post(f"/jobs/{job}/steps/appraise/extend", {"member": "linus"})
    assert (r.status, r.body["error"]["code"]) == (409, "hold_extended")
    assert Task.objects.get(job_id=job, step="appraise").hold_until == datetime(2027, 10, 24, 14, 30, tzinfo=UTC)
    r = api.post(f"/jobs/{job}/steps/offer/done", {})
    assert (r.status, r.body["error"]["code"]) == (409, "step_not_current")
    r = api.post(f"/jobs/{job}/steps/appraise/done", {"member": "linus"})
    assert r.status == 200 and r.body["step"] == "offer"


def test_needs_grant_is_a_409_and_a_grant_lets_the_step_through_over_http(http):
    api, ids = http
    tc = ids["tc"]
    advance(tc, at(11, 9, 11))  # B at transfer, taken by grace; the registrar grant ended on 11-08
    job = deal(tc, "B").id
    r = api.post(f"/jobs/{job}/steps/transfer/done", {"member": "grace"})
    assert (r.status, r.body["error"]["code"]) == (409, "needs_grant")
    assert Task.objects.get(job_id=job, step="transfer").status == "taken"  # nothing changed
    r = api.post(f"/jobs/{job}/grants", {"scope": "registrar"})
    assert r.status == 200 and r.body["ends_at"] == "2027-11-14T11:00:00Z"
    assert Ask.objects.get(job_id=job, scope="registrar").status == "answered"
    r = api.post(f"/jobs/{job}/grants", {"scope": "registrar"})
    assert (r.status, r.body["error"]["code"]) == (409, "grant_active")
    r = api.post(f"/jobs/{job}/steps/transfer/done", {"member": "grace"})
    assert r.status == 200 and r.body["status"] == "delivered"
    money = dict(MoneyLine.objects.filter(job_id=job, kind="charge").values_list("memo", "amount_cents"))
    assert sorted(money.values()) == [20000, 30000, 100000]  # two acts, and the rest of the hold at delivery


def test_policy_set_over_http_re_arms_now_when_the_new_time_passed(http):
    api, ids = http
    tc = ids["tc"]
    advance(tc, at(11, 4, 12))
    r = api.post("/policies", {"service": "deal", "name": "stall_days", "value": 1, "test_clock": tc})
    b = deal(tc, "B")
    assert r.status == 200 and r.body["rearmed"] == [f"{b.id}:deadline:gone_dark:B-2001@2"]
    assert Timer.objects.get(domain=tc, key=r.body["rearmed"][0]).owed_at == at(11, 4, 12)  # 11-03 10:00 + 1d passed
    r = api.post("/policies", {"service": "deal", "name": "nope", "value": 3, "test_clock": tc})
    assert (r.status, r.body["error"]["code"]) == (404, "unknown_policy")


def test_deleting_the_test_clock_ends_its_tasks_links_and_windows(forsale):
    from timers.test_clocks import test_clock_delete

    tc = forsale["tc"]
    advance(tc, at(11, 1, 10))  # linus on standby; B's offer link open; A's offer link open
    assert Window.objects.filter(domain=tc, status="open").exists()
    from timers.models import TestClock

    test_clock_delete(clock=TestClock.objects.get(pk=tc))
    assert not Task.objects.filter(domain=tc, status__in=["open", "taken"]).exists()
    assert not Ask.objects.filter(domain=tc, status="open").exists()
    assert not Window.objects.filter(domain=tc, status="open").exists()


def test_a_clock_that_lives_on_the_subject_outlives_its_job(db):
    """Acme's 2026 return carries a carryforward clock (lives_on subject, to 2046): canceling the return voids
    its file and pay dates, never the carryforward."""
    from calendars.models import ClockItem
    from services.jobs import job_end

    out = StringIO()
    call_command("loadexample", "apis_tax", stdout=out)
    tc = out.getvalue().split("test clock ")[1].split()[0]
    advance(tc, datetime(2027, 3, 1, tzinfo=UTC))
    job = Job.objects.get(domain=tc, service="annual-return", period="2026")
    carry = ClockItem.objects.get(clock__owner_ref=job.id, clock__lives_on="subject")
    armed = Timer.objects.filter(domain=tc, owner=carry.owner_key, status="armed").count()
    assert carry.status == "open" and armed
    job_end(armer=DirectArmer(brand=job.brand_id, domain=tc), job=job, status=Job.Status.CANCELED, reason="test")
    carry.refresh_from_db()
    assert carry.status == "open"
    assert Timer.objects.filter(domain=tc, owner=carry.owner_key, status="armed").count() == armed
    assert not ClockItem.objects.filter(clock__owner_ref=job.id, clock__lives_on="job", status="open").exists()
