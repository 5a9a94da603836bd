"""Money that adds up (issue 27): a member's pay on its own line as the act commits, left whole by a lapse and
by a guarantee's credit; the guarantee only on the brand's dates, leaving time held on the party out; and a
ledger that balances and says so (per job, per brand, per subject's cycle, per member), over real HTTP.

api.forsale's script (``loadexample api_forsale``) to 2027-12-01: grace appraises deal A (pay $120.00), whose
offer expires twice and it lapses; she appraises deal B too (another $120.00).
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from io import StringIO

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.db import IntegrityError, transaction

from calendars.models import Clock
from services.guarantees import penalty_notice
from services.jobs import job_end, job_open, job_resume_work, job_wait
from services.ledger import brand_balance, job_ledgers, member_earnings, subject_statements
from services.models import Job, MoneyLine
from services.money import post_money
from tests.support.acme import acme_subject
from tests.support.api import Client
from timers import tenants
from timers.advance import advance
from timers.armer import DirectArmer
from timers.errors import KeepingTimeError
from timers.models import Brand, Event, Membership
from timers.test_clocks import test_clock_create

END = datetime(2027, 12, 1, tzinfo=UTC)
START, STOP = datetime(1, 1, 1, tzinfo=UTC), datetime(9999, 1, 1, tzinfo=UTC)


def forsale() -> tuple[Brand, str, list[str]]:
    out = StringIO()
    call_command("loadexample", "api_forsale", stdout=out)
    text = out.getvalue()
    tc = text.split("test clock ")[1].split()[0]
    advance(tc, END)
    return Brand.objects.get(name="api.forsale"), tc, [ln.split()[1] for ln in text.splitlines()
                                                      if ln.startswith("subject ")]


def grace_id() -> int:
    return get_user_model().objects.get(username="grace").pk


def test_a_members_act_puts_their_pay_on_its_own_line_and_a_lapse_leaves_it_whole(db):
    brand, tc, _ = forsale()
    a = Job.objects.get(domain=tc, service="deal", period="A-1001")
    assert a.status == "lapsed"
    pay = MoneyLine.objects.get(job=a, kind="pay")
    appraised = Event.objects.get(domain=tc, type="step.done", subject=a.id, data__step="appraise")
    # As the act committed, to grace, on its own line: the lapse returned the hold less the act, not her pay.
    assert (pay.amount_cents, pay.member.username, pay.owed_at, pay.step) == (12_000, "grace", appraised.owed_at,
                                                                               "appraise")
    [ledger] = job_ledgers([a])
    assert (ledger.held, ledger.charged, ledger.released, ledger.pay) == (150_000, 20_000, 130_000, 12_000)
    earned = member_earnings(brand_id=brand.id, domain=tc, user_id=grace_id(), since=START, until=STOP)
    assert earned.earned == 24_000 and {x["job__service"] for x in earned.acts} == {"deal"}  # deals A and B
    # Only a pay line names a member, and a pay line always does: the database says so.
    with pytest.raises(IntegrityError), transaction.atomic():
        MoneyLine.objects.filter(pk=pay.pk).update(member=None)
    with pytest.raises(IntegrityError), transaction.atomic():
        MoneyLine.objects.filter(job=a, kind="charge").update(member_id=grace_id())


def test_the_ledger_balances_and_says_so_over_http(live_server, transactional_db):
    brand, tc, subjects = forsale()
    _, secret = tenants.api_key_create(brand=brand)
    api = Client(live_server.url, secret)
    bal = api.get(f"/balance?test_clock={tc}")
    assert bal.status == 200, bal.body
    b = bal.body
    lines = MoneyLine.objects.filter(domain=tc).exclude(status="void")
    total = {k: sum(lines.filter(kind=k).values_list("amount_cents", flat=True)) for k in MoneyLine.Kind.values}
    assert (b["charged"], b["credited"], b["pay"], b["currency"]) == (total["charge"], total["credit"], total["pay"],
                                                                      "usd")
    assert b["net"] == b["charged"] - b["credited"] - b["refunded"] - b["pay"]
    assert b["balanced"] is True and b["unbalanced_jobs"] == [] and b["lines"] == lines.count()
    # Per job: hold = charges + release once it ended. Take a release away and the balance says which job.
    a = Job.objects.get(domain=tc, service="deal", period="A-1001")
    MoneyLine.objects.filter(job=a, kind="release").update(amount_cents=1)
    assert api.get(f"/balance?test_clock={tc}").body["unbalanced_jobs"] == [a.id]
    # A member's earnings, and a subject's statements.
    got = api.get(f"/members/grace/earnings?test_clock={tc}&since=2027-10-01T00:00Z&until=2027-11-01T00:00Z")
    assert got.status == 200 and got.body["earned"] == 24_000 and got.body["name"] == "Grace Hopper", got.body
    assert [x["step"] for x in got.body["acts"]] == ["appraise", "appraise"]
    assert api.get(f"/members/grace/earnings?test_clock={tc}&since=2027-10-22T00:00Z").body["earned"] == 12_000
    # Unix seconds, as the schema offers them: a query writes them as digits (2027-10-22T00:00Z).
    assert api.get(f"/members/grace/earnings?test_clock={tc}&since=1824163200").body["earned"] == 12_000
    st = api.get(f"/subjects/{subjects[0]}/statements")
    assert st.status == 200 and st.body["data"], st.body
    assert sum(s["charged"] for s in st.body["data"]) == 20_000  # deal A: the appraisal, from the hold
    # Bad input is a clear 400; another test key's members and a live read without a live key are refused.
    assert api.get(f"/members/grace/earnings?test_clock={tc}&since=yesterday").status == 400
    assert api.get("/members/nobody/earnings").status == 404
    assert api.get("/balance").status == 403


def _tax_job(brand, *, guarantee: dict, answers_for: str = "the brand"):
    tc = test_clock_create(brand=brand, frozen_time=datetime(2027, 6, 1, 12, tzinfo=UTC), name="g")
    subject = acme_subject(brand, tc.id)
    job = job_open(armer=DirectArmer(brand=brand, domain=tc.id), brand_id=brand.id, domain=tc.id,
                   service="annual-return", subject=subject, period="2027", input={"states": ["CA"]})
    pay = Clock.objects.get(owner_ref=job.id, name="pay")
    # Who answers is the clock's role: the brand, or a person of the customer's.
    pay.guarantee, pay.answers_for = guarantee, answers_for
    pay.role = "brand" if answers_for == "the brand" else "customer"
    pay.save()
    return tc, job, pay


def test_a_guarantee_credits_off_the_brands_line_never_off_a_members_pay(brand):
    tc, job, pay = _tax_job(brand, guarantee={"cap_usd": 500})
    member = get_user_model().objects.create_user("hedy")
    armer = DirectArmer(brand=brand, domain=tc.id)
    post_money(armer=armer, brand_id=brand.id, domain=tc.id, kind="pay", cents=9_000, memo="prepared",
               owed_at=armer.now, key_owner=job.id, occurrence="prepare #1", job=job, step="prepare",
               member_id=member.pk)
    before = brand_balance(brand_id=brand.id, domain=tc.id)
    line = penalty_notice(armer=armer, clock=pay, amount_cents=60_000, notice="CP14")  # over the $500 cap
    after = brand_balance(brand_id=brand.id, domain=tc.id)
    assert (line.kind, line.amount_cents, line.member_id) == ("credit", 50_000, None)
    assert after.pay == before.pay == 9_000 and after.net == before.net - 50_000
    assert member_earnings(brand_id=brand.id, domain=tc.id, user_id=member.pk, since=START, until=STOP).earned == 9_000


def test_a_guarantee_covers_only_a_date_the_brand_answers_for(brand):
    tc, job, pay = _tax_job(brand, guarantee={"cap_usd": 500}, answers_for="Acme's controller")
    with pytest.raises(KeepingTimeError) as refused:
        penalty_notice(armer=DirectArmer(brand=brand, domain=tc.id), clock=pay, amount_cents=10_000, notice="CP14")
    assert (refused.value.code, refused.value.status) == ("guarantee_not_brands", 409)
    assert not MoneyLine.objects.filter(job=job, kind="credit").exists()
    assert not Event.objects.filter(domain=tc.id, type="clock.penalty").exists()


@pytest.mark.parametrize("excludes, credited", [("held", 20_000), (None, 30_000)])
def test_excludes_held_leaves_the_time_held_on_the_party_out_of_the_guarantee(brand, excludes, credited):
    guarantee = {"cap_usd": 500, **({"excludes": excludes} if excludes else {})}
    tc, job, pay = _tax_job(brand, guarantee=guarantee)
    due = pay.items.get().due_at

    def armer(days: int) -> DirectArmer:
        return DirectArmer(brand=brand, domain=tc.id, now=due + timedelta(days=days))

    # The return opens waiting on the organizer, who answers before the date. 30 days late by the notice; 10
    # of them the work was the party's again (their books): 2/3 of the late time is the brand's.
    job_resume_work(armer=armer(-1), job=job)
    job = Job.objects.get(pk=job.pk)
    job_wait(armer=armer(5), job=job, on="the customer's books")
    job = Job.objects.get(pk=job.pk)
    job_resume_work(armer=armer(15), job=job)
    line = penalty_notice(armer=armer(30), clock=pay, amount_cents=30_000, notice="CP14")
    assert line.amount_cents == credited
    penalty = Event.objects.get(domain=tc.id, type="clock.penalty")
    assert (penalty.data["amount"], penalty.data["currency"], penalty.data["credited"]) == (30_000, "usd", credited)


def test_amounts_are_whole_cents(brand):
    tc, job, pay = _tax_job(brand, guarantee={"cap_usd": 500})
    for bad in (300.0, 300.5, "300.00", "$300", True, 0, -5):
        with pytest.raises(KeepingTimeError) as refused:
            penalty_notice(armer=DirectArmer(brand=brand, domain=tc.id), clock=pay, amount_cents=bad, notice="CP1")
        assert refused.value.code == "invalid_amount", bad


def test_a_statement_for_each_cycle(brand, django_assert_num_queries, django_assert_max_num_queries):
    from services.subscriptions import subscription_create

    tc = test_clock_create(brand=brand, frozen_time=datetime(2027, 1, 20, 12, tzinfo=UTC), name="s")
    subject = acme_subject(brand, tc.id)
    subscription_create(brand=brand, domain=tc.id, subject=subject, service="tax-plan",
                        input={"entity": "C corp", "states": ["CA"]}, now=tc.frozen_time)
    advance(tc.id, datetime(2028, 1, 21, tzinfo=UTC))
    with django_assert_num_queries(3):  # set queries, whatever the number of cycles and lines
        statements = subject_statements(subject=subject)
    assert [(s.cycle, s.charged) for s in statements if s.subscription] == [(2, 240_000), (1, 240_000)]
    first = statements[-1]
    assert first.ends == statements[0].starts and first.included.get("annual-return") == 1, first
    # A job whose hold is returned at a cancel: hold = charges + release.
    job = job_open(armer=DirectArmer(brand=brand, domain=tc.id), brand_id=brand.id, domain=tc.id,
                   service="annual-return", subject=subject, period="2030", input={"states": ["NY"]})
    job_end(armer=DirectArmer(brand=brand, domain=tc.id), job=job, status="canceled")
    assert all(x.balanced for x in job_ledgers(Job.objects.filter(domain=tc.id)))
    with django_assert_max_num_queries(2):
        assert brand_balance(brand_id=brand.id, domain=tc.id).balanced


def test_the_console_says_the_balance_earnings_and_statements_and_exports_them_as_csv(db, client):
    from portals.owner.scope import AS_OF

    brand, tc, _ = forsale()
    owner = get_user_model().objects.create_user(username="olive", password="pw", is_staff=True)
    Membership.objects.create(user=owner, brand=brand, role=Membership.Role.OWNER, name="Olive")
    client.force_login(owner)
    session = client.session
    session[AS_OF] = tc
    session.save()
    page = client.get("/admin/services/moneyline/money/?month=2027-10")
    text = page.content.decode()
    assert page.status_code == 200
    assert "It adds up" in text and "Grace Hopper" in text and "$240.00" in text, text[-3000:]
    assert "October 2027" in text and "mny_" not in text and "job_" not in text
    csv_text = client.get("/admin/services/moneyline/money/?month=2027-10&export=earnings").content.decode()
    assert csv_text.splitlines()[1] == "api.forsale,Grace Hopper,October 2027,2,240.00,240.00", csv_text
    statements = client.get("/admin/services/moneyline/money/?export=statements")
    assert statements["Content-Type"].startswith("text/csv") and "200.00" in statements.content.decode()
    # Another brand's owner sees none of it.
    other = get_user_model().objects.create_user(username="otto", password="pw", is_staff=True)
    Membership.objects.create(user=other, brand=tenants.brand_get_or_create(name="globex"), role="owner")
    client.force_login(other)
    assert "Grace Hopper" not in client.get("/admin/services/moneyline/money/?month=2027-10").content.decode()


def test_the_customer_portal_shows_their_statements_in_their_words(db):
    from django.test import Client as Browser

    from calendars.models import Subject
    from services.portal_sessions import portal_session_create

    _, tc, subjects = forsale()
    subject = Subject.objects.get(pk=subjects[0])
    browser = Browser()
    _, path = portal_session_create(brand=subject.brand, subject=subject)
    browser.get(path)
    page = browser.get("/portal/customer/statements")
    text = page.content.decode()
    assert page.status_code == 200 and "Your statements" in text
    assert "$200.00" in text and "$1,500.00" not in text  # the appraisal charged; the rest of the hold returned
    assert "mny_" not in text and "job_" not in text and "UTC" not in text
    assert Browser().get("/portal/customer/statements").status_code == 403  # signed out: the expired-link page


def test_the_cli_takes_whole_cents_and_says_a_bad_amount_in_one_line(brand):
    from django.core.management.base import CommandError

    tc, job, pay = _tax_job(brand, guarantee={"cap_usd": 500})
    for bad in ("300.00", "$300", "3e4", "-5", "0"):
        with pytest.raises(CommandError) as refused:
            call_command("money", "penalty", "--clock", pay.id, "--notice", "CP14", "--amount", bad)
        assert str(refused.value).startswith("invalid_amount: --amount:") and "\n" not in str(refused.value), bad
    out = StringIO()
    call_command("money", "penalty", "--clock", pay.id, "--notice", "CP14", "--amount", "30000", stdout=out)
    assert "30000 usd ($300.00) · credited 30000 usd ($300.00)" in out.getvalue()
    out = StringIO()
    call_command("money", "balance", "--brand", brand.name, "--test-clock", tc.id, stdout=out)
    assert "credited  30000 usd ($300.00)" in out.getvalue() and "balanced" in out.getvalue(), out.getvalue()
