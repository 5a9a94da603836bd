"""loadexample demo [--reset]: a brand, a test clock and timers of several kinds to tick through a year."""

from __future__ import annotations

from datetime import UTC, datetime

from django.db import transaction

from timers.models import Brand, Event, TestClock, Timer
from timers.services import brand_get_or_create, test_clock_create, timer_arm

from ..base import KTCommand

START = datetime(2027, 1, 20, 14, 0, tzinfo=UTC)


class Command(KTCommand):
    help = "Load an example brand onto a test clock and print the ids it made."

    def add_arguments(self, parser):
        parser.add_argument("example", choices=["demo"])
        parser.add_argument("--reset", action="store_true", help="remove a previous load of the example first")

    @transaction.atomic
    def handle(self, *args, **o):
        name = "demo.services"
        if o["reset"]:
            brand = Brand.objects.filter(name=name).first()
            if brand is not None:
                clocks = list(TestClock.objects.filter(brand=brand).values_list("id", flat=True))
                Timer.objects.filter(domain__in=clocks).delete()
                Event.objects.filter(domain__in=clocks).delete()
                brand.delete()
        brand = brand_get_or_create(name=name)
        clock = test_clock_create(brand=brand, frozen_time=START, name="demo clock")
        d = clock.id
        timer_arm(brand=brand, key="sbn_demo1:cycle:renew:#1", owed_at=datetime(2027, 2, 20, 14, tzinfo=UTC),
                  domain=d, handler="repeat", data={"every": {"months": 1}, "count": 12}, opened_at=START)
        timer_arm(brand=brand, key="sbn_demo1:schedule:weekly:#1", owed_at=datetime(2027, 1, 25, 14, tzinfo=UTC),
                  domain=d, handler="repeat", data={"every": {"weeks": 1}, "count": 52}, opened_at=START)
        timer_arm(brand=brand, key="job_demo1:deadline:at_risk:2027", owed_at=datetime(2027, 3, 1, 14, tzinfo=UTC),
                  domain=d, handler="noop", opened_at=START)
        timer_arm(brand=brand, key="job_demo1:money:charge:#1", owed_at=datetime(2027, 2, 20, 14, tzinfo=UTC),
                  domain=d, handler="noop", opened_at=START)
        self.stdout.write(f"brand {brand.id} · {brand.name}")
        self.stdout.write(f"test clock {clock.id} · demo clock · frozen at 2027-01-20 14:00Z")
        self.stdout.write(f"{Timer.objects.filter(domain=d).count()} timers armed")
