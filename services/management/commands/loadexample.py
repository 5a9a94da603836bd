"""loadexample apis_tax | demo [--reset]: load an example brand onto a test clock and print the ids it made.

The example's clock is seeded with the example's name, so every id minted on it (subject, subscription,
jobs, clocks, money, timers, submissions) derives from that seed and what it names: loading it again, here
or on another database, prints the same ids (the test clock's own id aside) and `tick 1y --compare`
prints the same sha256. A load replaces the previous load of the same example.
"""

from __future__ import annotations

from datetime import UTC, datetime, time

from django.contrib.auth import get_user_model
from django.db import transaction

from calendars.contacts import check_contacts, contacts_add
from calendars.models import Calendar, ClosedDay, Subject, seeded_subject_id
from services import registry
from services.kinds import ACT, SUBJECT_EVENT, UPDATE
from services.members import pool_add, pools_of
from services.models import Job, MoneyLine, Notification, PolicyValue, Subscription, Window
from services.subscriptions import subscription_create
from services.versions import version_deploy
from timers import progress
from timers.arming import timer_arm
from timers.management.base import KTCommand
from timers.models import Brand, Commit, Deploy, Event, Membership, Outbox, TestClock, Timer, Version
from timers.tenants import brand_get_or_create
from timers.test_clocks import fire_tally_retire, test_clock_create

START = datetime(2027, 1, 20, 14, 0, tzinfo=UTC)
DEPLOY_AT = datetime(2027, 6, 15, 14, 0, tzinfo=UTC)
DEPLOY_MODULE = "services.examples.apis_tax.annual_return_2027_06"
DEPLOY_2027_06 = "2027-06"
BRANDS = {"apis_tax": "apis.tax", "api_forsale": "api.forsale", "demo": "demo.services"}
FORSALE_START = datetime(2027, 10, 20, 14, 0, tzinfo=UTC)


class Command(KTCommand):
    help = "Load an example brand onto a test clock (seeded with the example's name) and print the ids it made."
    bar = progress.Bar()  # what the load is doing, on a terminal only (handle sets it)

    def add_arguments(self, parser):
        parser.add_argument("example", choices=sorted(BRANDS))
        parser.add_argument("--reset", action="store_true",
                            help="also remove the brand's other test clocks and what is on them (a load always "
                                 "replaces the example's previous load)")

    @transaction.atomic
    def handle(self, *args, **o):
        seed = o["example"]
        with progress.terminal_bar(self, f"loading {seed}: the brand") as self.bar:
            brand = brand_get_or_create(name=BRANDS[seed])
            self.bar.step(f"loading {seed}: removing its previous load")
            remove_example(brand, seed=seed, every=o["reset"])
            getattr(self, f"_{seed}")(brand, seed)

    def _apis_tax(self, brand: Brand, seed: str) -> None:
        self.bar.step("loading apis_tax: the test clock, the calendar and the taxpayer")
        clock = test_clock_create(brand=brand, frozen_time=START, name="Acme Robotics", seed=seed)
        # The calendar is part of the example: an edit left from an earlier load would move its dates.
        calendar, _ = Calendar.objects.update_or_create(
            brand=brand, name="apis.tax", defaults={"zone": "America/New_York", "holiday_country": "US",
                                                     "holiday_subdiv": "DC", "weekends": [5, 6],
                                                     "closes": time(23, 59)})
        ClosedDay.objects.filter(calendar=calendar).delete()
        if not Calendar.objects.filter(brand=brand, is_default=True).exists():
            # The brand's calendar: a customer added over the API or the console keeps its dates on it.
            Calendar.objects.filter(pk=calendar.pk).update(is_default=True)
        subject = Subject.objects.create(
            id=seeded_subject_id(brand=brand, domain=clock.id, kind="taxpayer", key="12-3456789"),
            brand=brand, domain=clock.id, kind="taxpayer", key_name="ein", key="12-3456789", name="Acme Robotics",
            calendar=calendar, input={"entity": "C corp"}, created_at=START,
            # A federal credit from the 2026 tax year, carried forward: the 2026 return's carryforward clock.
            keeps={"carryforwards": {"2026": ["US"]}})
        # Acme's people are data: its officer answers for the returns the Services write "customer:officer" on.
        contacts_add(subject=subject, now=START, contacts=check_contacts([
            {"name": "Ada Lovelace", "email": "ada@acme-robotics.example", "role": "officer", "zone": "America/New_York",
             "primary": True}]))
        self.bar.step("loading apis_tax: the tax-plan subscription")
        sub = subscription_create(brand=brand, domain=clock.id, subject=subject, service="tax-plan",
                                  input={"entity": "C corp", "states": ["CA", "NY", "NJ"]}, now=START)
        # Acme adds Texas in March 2027: a subscription.update, scheduled on the clock so every way replays it.
        timer_arm(brand=brand, key=f"{sub.id}:window:add Texas:2027-03", owed_at=datetime(2027, 3, 15, 14, tzinfo=UTC),
                  domain=clock.id, handler=UPDATE,
                  data={"input": {"states": ["CA", "NY", "NJ", "TX"]}}, opened_at=START, version=sub.version)
        # The organizer's books arrive for each return: a subject event on the clock resumes its deadline.
        for year, at in (("2026", datetime(2027, 2, 15, 14, tzinfo=UTC)), ("2027", datetime(2028, 2, 20, 14, tzinfo=UTC))):
            timer_arm(brand=brand, key=f"{subject.id}:window:books arrive:{year}", owed_at=at, domain=clock.id,
                      handler=SUBJECT_EVENT, opened_at=START,
                      data={"subject": subject.id, "type": "books.received", "key": f"books-{year}"})
        # The June 2027 deploy of annual-return (a rung added, ack 7d → 5d, the late price raised), on the clock:
        # returns opened before it keep their version; the 2027 return, minted in February 2028, runs it.
        self.bar.step("loading apis_tax: the annual-return bundles and the June 2027 deploy")
        v1 = registry.store(registry.bundle("annual-return"))
        if not v1.name and not Version.objects.filter(name="2027-01").exists():
            v1 = registry.store(registry.bundle("annual-return"), name="2027-01")
        named = Version.objects.filter(name=DEPLOY_2027_06).first()
        v2 = version_deploy(domain=clock.id, at=DEPLOY_AT, module=DEPLOY_MODULE,
                            name="" if named else DEPLOY_2027_06)[0].version
        self.stdout.write(f"brand {brand.id} · {brand.name}")
        self.stdout.write(f"test clock {clock.id} · seed {seed} · frozen at 2027-01-20 14:00Z")
        self.stdout.write(f"versions annual-return {v1.label} until {v2.label} · deployed on the clock 2027-06-15 14:00Z")
        self.stdout.write(f"subject {subject.id} · taxpayer 12-3456789 · Acme Robotics · America/New_York")
        self.stdout.write(f"subscription {sub.id} · tax-plan · $2,400.00 a year · C corp · CA, NY, NJ (+TX in March)")
        self.stdout.write(f"next: python manage.py tick 1y --compare --redeliver --test-clock {clock.id}")

    def _api_forsale(self, brand: Brand, seed: str) -> None:
        """Two deals, every kind of people's time at once: a broker's Task held, extended once (the second
        refused), warned and reopened; the buyer's link reminded, reopened and expired twice (deal A lapses,
        its hold returned less the appraisal already done); a registrar grant that ends and refuses the
        transfer needs_grant; a standby window; and gone_dark, which stall_days 14 → 7 brings to 10 November
        from the account's last reply on 3 November."""
        self.bar.step("loading api_forsale: the test clock, the members and the calendar")
        clock = test_clock_create(brand=brand, frozen_time=FORSALE_START, name="api.forsale deals", seed=seed)
        for username, name in (("grace", "Grace Hopper"), ("linus", "Linus Pauling")):
            user, made = get_user_model().objects.get_or_create(username=username, defaults={"first_name": name})
            if made:
                user.set_unusable_password()
                user.save(update_fields=["password"])
            membership, _ = Membership.objects.get_or_create(user=user, brand=brand, defaults={
                "role": Membership.Role.MEMBER, "name": name})
            # The deal's pool names no one in code: who is a broker is the brand's data, as the console sets it.
            if "brokers" not in pools_of(membership):
                pool_add(brand=brand, pool="brokers", membership=membership)
        calendar, _ = Calendar.objects.update_or_create(
            brand=brand, name="api.forsale", defaults={"zone": "America/Los_Angeles", "weekends": [5, 6],
                                                        "closes": time(17, 0)})
        if not Calendar.objects.filter(brand=brand, is_default=True).exists():
            Calendar.objects.filter(pk=calendar.pk).update(is_default=True)
        self.bar.step("loading api_forsale: the accounts and their deal-desk subscriptions")
        subjects = {}
        buyers = {"A": ("Ana Alvarez", "ana@alpha.example"), "B": ("Bo Bergström", "bo@beta.example")}
        for code, domain, name in (("A", "alpha.example", "Alpha Labs"), ("B", "beta.example", "Beta Foods")):
            subjects[code] = Subject.objects.create(
                id=seeded_subject_id(brand=brand, domain=clock.id, kind="account", key=domain), brand=brand,
                domain=clock.id, kind="account", key_name="domain", key=domain, name=name, calendar=calendar,
                created_at=FORSALE_START)
            # The account's buyer: the deal's party ("the buyer") is their contact in that role.
            contacts_add(subject=subjects[code], now=FORSALE_START, contacts=check_contacts([
                {"name": buyers[code][0], "email": buyers[code][1], "role": "buyer", "primary": True}]))
            subscription_create(brand=brand, domain=clock.id, subject=subjects[code], service="deal-desk",
                                now=FORSALE_START)

        def at(month: int, day: int, hour: int, minute: int = 0) -> datetime:
            return datetime(2027, month, day, hour, minute, tzinfo=UTC)

        self.bar.step("loading api_forsale: the deals' script")
        deals = {"A": "A-1001", "B": "B-2001"}
        for code, key in deals.items():
            timer_arm(brand=brand, key=f"{subjects[code].id}:window:deal opened:{key}", owed_at=FORSALE_START,
                      domain=clock.id, handler=SUBJECT_EVENT, opened_at=FORSALE_START,
                      data={"subject": subjects[code].id, "type": "deal.opened", "key": key})
        script = [
            ("A", at(10, 20, 15), "grace takes appraise", {"act": "take", "member": "grace"}),
            ("A", at(10, 21, 16), "grace appraised", {"act": "done", "step": "appraise", "member": "grace"}),
            ("B", at(10, 21, 9), "linus takes appraise", {"act": "take", "member": "linus"}),
            ("B", at(10, 22, 10), "linus extends", {"act": "extend", "member": "linus"}),
            ("B", at(10, 22, 11), "linus extends again", {"act": "extend", "member": "linus"}),
            ("B", at(10, 26, 10), "grace takes appraise", {"act": "take", "member": "grace"}),
            ("B", at(10, 26, 12), "grace appraised", {"act": "done", "step": "appraise", "member": "grace"}),
            ("B", at(11, 1, 9), "linus on standby", {"act": "window", "member": "linus", "hours": 8}),
            ("B", at(11, 2, 9), "the buyer accepts the offer", {"act": "answer", "step": "offer"}),
            ("B", at(11, 3, 10), "the account replies", {"act": "activity", "what": "the account replied"}),
            ("B", at(11, 3, 10, 5), "the buyer grants registrar", {"act": "grant", "scope": "registrar"}),
            ("B", at(11, 5, 14), "stall_days 14 to 7", {"act": "policy", "service": "deal", "name": "stall_days",
                                                         "value": 7}),
            ("B", at(11, 9, 10), "grace takes transfer", {"act": "take", "member": "grace"}),
            ("B", at(11, 9, 12), "grace transfers", {"act": "done", "step": "transfer", "member": "grace"}),
        ]
        for code, when, what, data in script:
            timer_arm(brand=brand, key=f"{subjects[code].id}:window:{what}:{deals[code]}", owed_at=when,
                      domain=clock.id, handler=ACT, opened_at=FORSALE_START,
                      data={"subject": subjects[code].id, "service": "deal", "period": deals[code], **data})
        self.stdout.write(f"brand {brand.id} · {brand.name}")
        self.stdout.write(f"test clock {clock.id} · seed {seed} · frozen at 2027-10-20 14:00Z")
        for code, key in deals.items():
            self.stdout.write(f"subject {subjects[code].id} · account {subjects[code].key} · deal {key}")
        self.stdout.write("members grace, linus · pool brokers · hold 2d · stall_days 14 (7 from 2027-11-05)")
        self.stdout.write(f"next: python manage.py tick --to 2027-12-01T00:00:00Z --compare --redeliver "
                          f"--test-clock {clock.id}")

    def _demo(self, brand: Brand, seed: str) -> None:
        clock = test_clock_create(brand=brand, frozen_time=START, name="demo clock", seed=seed)
        d = clock.id
        timer_arm(brand=brand, key="sbn_demo1:cycle:renew:#1", owed_at=datetime(2027, 2, 20, 14, tzinfo=UTC),
                  domain=d, handler="repeat", data={"every": {"months": 1}, "count": 12}, opened_at=START)
        timer_arm(brand=brand, key="job_demo1:deadline:at_risk:2027", owed_at=datetime(2027, 3, 1, 14, tzinfo=UTC),
                  domain=d, handler="noop", opened_at=START)
        self.stdout.write(f"brand {brand.id} · {brand.name}")
        self.stdout.write(f"test clock {clock.id} · seed {seed} · demo clock · frozen at 2027-01-20 14:00Z")


def remove_example(brand: Brand, *, seed: str, every: bool) -> None:
    """Remove the example's previous load (the brand's clock holding its seed, whatever its status), so its
    seed is free again; with ``every``, each of the brand's test clocks. The brand and its keys stay."""
    clocks = TestClock.objects.filter(brand=brand)
    if not every:
        clocks = clocks.filter(seed=seed)
    domains = list(clocks.values_list("id", flat=True))
    if not domains:
        return
    fire_tally_retire(domains=domains)  # what /metrics counted of them stays counted
    for model in (Notification, PolicyValue, Window, MoneyLine, Job, Subscription, Subject, Timer, Event, Commit,
                  Outbox, Deploy):
        model.objects.filter(domain__in=domains).delete()
    TestClock.objects.filter(pk__in=domains).delete()
