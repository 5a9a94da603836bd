"""apis.tax's clocks for the 2027 return, as the calendar tests use them (DESIGN.md's worked example)."""

from __future__ import annotations

from datetime import UTC, date, datetime

from calendars import specs
from calendars.clocks import clock_open
from calendars.contacts import check_contacts, contacts_add
from calendars.models import Calendar, Subject
from calendars.specs import ClockSpec, DueInput
from timers.armer import DirectArmer

STATES = ("US", "US-CA", "US-NY", "US-NJ")


def file_due(x: DueInput) -> date:
    year = int(x.period) + 1
    return date(year, 5, 15) if x.item == "US-NJ" else date(year, 4, 15)


def extended_due(x: DueInput) -> date:
    year = int(x.period) + 1
    return date(year, 11, 15) if x.item in ("US-CA", "US-NJ") else date(year, 10, 15)


def pay_due(x: DueInput) -> date:
    return date(int(x.period) + 1, 4, 15)


FILE = specs.register("tests.annual_return.file", ClockSpec(
    name="file", due=file_due, items=STATES,
    rungs=("notice 90d", "notice 30d", "escalate 7d", "ack daily 7d", "run tentative 3d"),
    moves={"extend": extended_due}, runs={"tentative": "extend"}, answers_for="customer:officer",
    options={"file late": "file", "let it lapse": None},
    title="file the {period} return",
))
PAY = specs.register("tests.annual_return.pay", ClockSpec(
    name="pay", due=pay_due, items=("US",), hard=True, rungs=("notice 30d",), answers_for="customer:officer",
    options={"pay late": "pay"}, guarantee={"cap_usd": 500},
    title="pay the {period} tax",
))


def acme_subject(brand, domain: str) -> Subject:
    cal, _ = Calendar.objects.get_or_create(
        brand=brand, name="Acme Robotics", defaults={"zone": "America/New_York", "holiday_country": "US",
                                                     "holiday_subdiv": "DC"})
    subject = Subject.objects.create(brand=brand, domain=domain, kind="taxpayer", key_name="ein", key="12-3456789",
                                     name="Acme Robotics", calendar=cal, created_at=datetime(2027, 1, 20, tzinfo=UTC))
    add_officer(subject)
    return subject


def add_officer(subject: Subject) -> None:
    """The customer's officer, Ada Lovelace, their primary contact (as loadexample makes Acme's)."""
    contacts_add(subject=subject, now=subject.created_at, contacts=check_contacts(
        [{"name": "Ada Lovelace", "email": "ada@acme-robotics.example", "role": "officer"}]))


def open_return(brand, tc, subject, *, now=None):
    """Open the 2027 return's file and pay clocks on a test clock, as a minted job would."""
    armer = DirectArmer(brand=brand, domain=tc.id, now=now)
    file = clock_open(armer=armer, brand=brand, domain=tc.id, subject=subject, spec_name="tests.annual_return.file",
                      owner_ref="job_4Tx9", period="2027")
    pay = clock_open(armer=armer, brand=brand, domain=tc.id, subject=subject, spec_name="tests.annual_return.pay",
                     owner_ref="job_4Tx9", period="2027")
    return file, pay


def tax_plan_subscribers(brand, clock, n: int) -> list:
    """``n`` C corps on the Tax Plan on one test clock, each as loadexample makes Acme (CA, NY, NJ)."""
    from services.subscriptions import subscription_create

    cal, _ = Calendar.objects.get_or_create(
        brand=brand, name="apis.tax", defaults={"zone": "America/New_York", "holiday_country": "US",
                                                 "holiday_subdiv": "DC"})
    subs = []
    for i in range(n):
        subject = Subject.objects.create(brand=brand, domain=clock.id, kind="taxpayer", key_name="ein",
                                         key=f"12-{3456789 + i:07d}", name=f"Customer {i}", calendar=cal,
                                         input={"entity": "C corp"}, created_at=clock.frozen_time)
        add_officer(subject)
        subs.append(subscription_create(brand=brand, domain=clock.id, subject=subject, service="tax-plan",
                                        input={"entity": "C corp", "states": ["CA", "NY", "NJ"]},
                                        now=clock.frozen_time))
    return subs
