"""demousers: the demo's sign-ins: an owner of each example brand (the owner console) and its members (the
delivery portal), each with a fresh password printed once, and what each has to do. Run after the examples
are loaded and ticked.

apis.tax's preparers, hedy and katherine, come with a story told through the same acts as the apps: Acme
hands its late 2026 returns to apis.tax ("let apis.tax handle it"), and the owner gives them to Hedy, so
she has dates to mark done and someone of her own brand to hand them to."""

from __future__ import annotations

import secrets

from django.contrib.auth import get_user_model
from django.db import transaction

from calendars.acts import STEWARD, clock_reassign
from calendars.models import Clock
from timers.armer import DirectArmer
from timers.management.base import KTCommand
from timers.models import Brand, Membership

OWNERS = {"owner": "Olive Owner"}
MEMBERS = {"api.forsale": ("grace", "linus"), "apis.tax": ("hedy", "katherine")}
NAMES = {"hedy": "Hedy Lamarr", "katherine": "Katherine Johnson"}
DOES = {"grace": "holds a Task: mark it done, extend her hold once",
        "linus": "takes open work from his pool",
        "hedy": "answers for Acme's late 2026 returns: mark done, or hand them over",
        "katherine": "takes over Hedy's dates when she hands them over"}


class Command(KTCommand):
    help = "Make the demo's owner and members (passwords printed once)."

    def handle(self, *args, **o):
        users = get_user_model()
        brands = list(Brand.objects.filter(name__in=["apis.tax", "api.forsale"]))
        for username, name in OWNERS.items():
            password = secrets.token_urlsafe(9)
            user, _ = users.objects.get_or_create(username=username, defaults={"first_name": name})
            user.is_staff = True
            user.email = user.email or f"{username}@apis.tax.example"
            user.set_password(password)
            user.save()
            for brand in brands:
                Membership.objects.update_or_create(user=user, brand=brand,
                                                    defaults={"role": Membership.Role.OWNER, "name": name})
            self.stdout.write(f"owner console   {username} / {password}  ({', '.join(b.name for b in brands)})")
        for brand in brands:
            for username in MEMBERS.get(brand.name, ()):
                user = users.objects.filter(username=username).first()
                if user is None and username in NAMES:
                    user = users.objects.create(username=username, first_name=NAMES[username])
                if user is None:
                    continue
                # Where their dates' notices and reminders go: a member's own address.
                user.email = user.email or f"{username}@{brand.name.replace('.', '-')}.example"
                password = secrets.token_urlsafe(9)
                user.set_password(password)
                user.save()
                Membership.objects.get_or_create(user=user, brand=brand,
                                                 defaults={"role": Membership.Role.MEMBER, "name": user.first_name})
                self.stdout.write(f"delivery portal {username} / {password}  ({brand.name}: {DOES.get(username, '')})")
        self._hand_to_hedy()

    def _hand_to_hedy(self) -> None:
        """Acme's 2026 return dates that came unsatisfied go to apis.tax, and from the owner to Hedy."""
        hedy = Membership.objects.filter(brand__name="apis.tax", user__username="hedy").select_related("user").first()
        clock = (Clock.objects.filter(brand__name="apis.tax", subject__name="Acme Robotics", name="file",
                                      period="2026", items__status="due").exclude(member=hedy)
                 .order_by("-opened_at").first())
        if clock is None or hedy is None:
            return
        armer = DirectArmer(brand=clock.brand_id, domain=clock.domain)
        with transaction.atomic():
            clock_reassign(armer=armer, clock=clock, to=STEWARD, by=clock.answers_for or "Acme Robotics",
                           why="the customer handed it to the brand")
            clock_reassign(armer=armer, clock=clock, to=hedy, by="Olive Owner", why="the owner assigned it")
