"""Members of record (issue 37): a date a Service gives ``member:<role>`` answers to the job's member in that role:
whoever takes the job's Task of the pool of that name, or whom the owner names with Assign. Each change of hands
is on the record (``clock.assigned``), and a date that opens later finds them at once."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from django.contrib.auth import get_user_model

from calendars.models import Calendar, Clock, Subject
from portals.owner.actions import item_reassign
from services import registry
from services.jobs import job_open
from services.members import pool_add
from services.models import Task
from services.tasks import task_release, task_take
from timers.armer import DirectArmer
from timers.models import Event, Membership
from timers.test_clocks import test_clock_create

pytestmark = pytest.mark.django_db

START = datetime(2027, 2, 1, 14, tzinfo=UTC)


@pytest.fixture
def firm(brand, monkeypatch):
    monkeypatch.setattr(registry, "_services", dict(registry._services))
    registry.load(["tests.support.svc_of_record"])
    tc = test_clock_create(brand=brand, frozen_time=START, name="firm")
    cal = Calendar.objects.create(brand=brand, name="New York", zone="America/New_York", holiday_country="US")
    subject = Subject.objects.create(brand=brand, domain=tc.id, kind="firm", key_name="code", key="ABC",
                                     name="Abc Partners", calendar=cal, created_at=START)
    people = {}
    for username, name in (("grace", "Grace Hopper"), ("linus", "Linus Pauling")):
        user = get_user_model().objects.create_user(username, email=f"{username}@brand.example")
        people[username] = Membership.objects.create(user=user, brand=brand, role="member", name=name)
        pool_add(brand=brand, pool="preparers", membership=people[username])
    return {"brand": brand, "tc": tc, "subject": subject, "people": people,
            "armer": DirectArmer(brand=brand, domain=tc.id)}


def _clocks(subject: Subject) -> dict[str, Clock]:
    return {c.name: c for c in Clock.objects.filter(subject=subject)}


def _assigned(tc) -> list[tuple[str, str, str, str]]:
    return [(e.data["clock"], e.data.get("was", ""), e.data["to"], e.data["why"])
            for e in Event.objects.filter(domain=tc.id, type="clock.assigned").order_by("seq")]


def test_who_takes_the_pools_task_answers_for_the_jobs_dates_in_the_pools_name(firm):
    armer, subject = firm["armer"], firm["subject"]
    job = job_open(armer=armer, brand_id=firm["brand"].id, domain=firm["tc"].id, service="t-prepared",
                   subject=subject, period="2027", input={})
    clocks = _clocks(subject)
    assert {n: (c.role, c.answers_for, c.member_id) for n, c in clocks.items()} == {
        "file": ("member:preparers", "", None), "review": ("member:reviewer", "", None)}  # nobody yet

    task = Task.objects.get(job=job, step="prepare")
    task_take(armer=armer, task=task, member="grace")
    clocks = _clocks(subject)
    assert (clocks["file"].answers_for, clocks["file"].member_id) == ("Grace Hopper", firm["people"]["grace"].pk)
    assert clocks["review"].answers_for == ""  # another role: the take names no reviewer
    assert _assigned(firm["tc"])[-1] == ("file", "", "Grace Hopper", "the preparers of record")

    # Given back and taken by another: the date goes with the Task, on the record.
    task.refresh_from_db()
    task_release(armer=armer, task=task, member="grace")
    task.refresh_from_db()
    task_take(armer=armer, task=task, member="linus")
    assert _clocks(subject)["file"].answers_for == "Linus Pauling"
    assert _assigned(firm["tc"])[-1] == ("file", "Grace Hopper", "Linus Pauling", "the preparers of record")


def test_the_owners_assign_names_a_member_of_record_and_a_take_after_it_moves_the_pools_dates_on(firm):
    armer, subject, people = firm["armer"], firm["subject"], firm["people"]
    job = job_open(armer=armer, brand_id=firm["brand"].id, domain=firm["tc"].id, service="t-prepared",
                   subject=subject, period="2027", input={})
    review = _clocks(subject)["review"].items.get()
    said = item_reassign(review, to=people["linus"], by="Olive Owner")
    assert said.startswith("Linus Pauling is the reviewer now, and answers for"), said
    assert _clocks(subject)["review"].answers_for == "Linus Pauling"
    assert _assigned(firm["tc"])[-1] == ("review", "", "Linus Pauling", "the reviewer of record")

    # The filing date of the same job, in the preparers' role: Assign moves it, and the take after it moves it on.
    item_reassign(_clocks(subject)["file"].items.get(), to=people["grace"], by="Olive Owner")
    assert _clocks(subject)["file"].answers_for == "Grace Hopper"
    task_take(armer=armer, task=Task.objects.get(job=job, step="prepare"), member="linus")
    assert _clocks(subject)["file"].answers_for == "Linus Pauling"
    assert _clocks(subject)["review"].answers_for == "Linus Pauling"
