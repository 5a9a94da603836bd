"""loadexample apis_tax | demo [--reset]: load an example brand onto a test clock and print the ids it made."""

from __future__ import annotations

from datetime import UTC, datetime

from django.db import transaction

from calendars.models import Calendar, Subject
from services.models import Job, MoneyLine, Subscription
from services.services import UPDATE, subscription_create
from timers.management.base import KTCommand
from timers.models import Brand, Commit, Event, Outbox, TestClock, Timer
from timers.services import brand_get_or_create, test_clock_create, timer_arm

START = datetime(2027, 1, 20, 14, 0, tzinfo=UTC)
BRANDS = {"apis_tax": "apis.tax", "demo": "demo.services"}


class Command(KTCommand):
    help = "Load an example brand onto a test clock and print the ids it made."

    def add_arguments(self, parser):
        parser.add_argument("example", choices=sorted(BRANDS))
        parser.add_argument("--reset", action="store_true", help="remove a previous load of the example first")

    @transaction.atomic
    def handle(self, *args, **o):
        name = BRANDS[o["example"]]
        if o["reset"]:
            _reset(name)
        brand = brand_get_or_create(name=name)
        getattr(self, f"_{o['example']}")(brand)

    def _apis_tax(self, brand: Brand) -> None:
        clock = test_clock_create(brand=brand, frozen_time=START, name="Acme Robotics")
        calendar, _ = Calendar.objects.get_or_create(
            brand=brand, name="apis.tax", defaults={"zone": "America/New_York", "holiday_country": "US",
                                                     "holiday_subdiv": "DC"})
        subject = Subject.objects.create(brand=brand, domain=clock.id, kind="taxpayer", key_name="ein",
                                         key="12-3456789", name="Acme Robotics", calendar=calendar,
                                         input={"entity": "C corp"}, created_at=START)
        sub = subscription_create(brand=brand, domain=clock.id, subject=subject, service="tax-plan",
                                  input={"entity": "C corp", "states": ["CA", "NY", "NJ"]}, now=START)
        # Acme adds Texas in March 2027: a subscription.update, scheduled on the clock so every way replays it.
        timer_arm(brand=brand, key=f"{sub.id}:window:add Texas:2027-03", owed_at=datetime(2027, 3, 15, 14, tzinfo=UTC),
                  domain=clock.id, handler=UPDATE,
                  data={"input": {"states": ["CA", "NY", "NJ", "TX"]}}, opened_at=START, version=sub.version)
        self.stdout.write(f"brand {brand.id} · {brand.name}")
        self.stdout.write(f"test clock {clock.id} · frozen at 2027-01-20 14:00Z")
        self.stdout.write(f"subject {subject.id} · taxpayer 12-3456789 · Acme Robotics · America/New_York")
        self.stdout.write(f"subscription {sub.id} · tax-plan · $2,400.00 a year · C corp · CA, NY, NJ (+TX in March)")
        self.stdout.write(f"next: python manage.py tick 1y --compare --redeliver --test-clock {clock.id}")

    def _demo(self, brand: Brand) -> None:
        clock = test_clock_create(brand=brand, frozen_time=START, name="demo clock")
        d = clock.id
        timer_arm(brand=brand, key="sbn_demo1:cycle:renew:#1", owed_at=datetime(2027, 2, 20, 14, tzinfo=UTC),
                  domain=d, handler="repeat", data={"every": {"months": 1}, "count": 12}, opened_at=START)
        timer_arm(brand=brand, key="job_demo1:deadline:at_risk:2027", owed_at=datetime(2027, 3, 1, 14, tzinfo=UTC),
                  domain=d, handler="noop", opened_at=START)
        self.stdout.write(f"brand {brand.id} · {brand.name}")
        self.stdout.write(f"test clock {clock.id} · demo clock · frozen at 2027-01-20 14:00Z")


def _reset(name: str) -> None:
    brand = Brand.objects.filter(name=name).first()
    if brand is None:
        return
    domains = list(TestClock.objects.filter(brand=brand).values_list("id", flat=True))
    for model in (MoneyLine, Job, Subscription, Subject, Timer, Event, Commit, Outbox):
        model.objects.filter(domain__in=domains).delete()
    brand.delete()
