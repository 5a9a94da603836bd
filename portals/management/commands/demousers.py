"""demousers: the demo's sign-ins: an owner of each example brand (the owner console) and its members (the
delivery portal), each with a fresh password printed once. Run after the examples are loaded."""

from __future__ import annotations

import secrets

from django.contrib.auth import get_user_model

from timers.management.base import KTCommand
from timers.models import Brand, Membership

OWNERS = {"owner": "Olive Owner"}
MEMBERS = {"api.forsale": ("grace", "linus")}


class Command(KTCommand):
    help = "Make the demo's owner and members (passwords printed once)."

    def handle(self, *args, **o):
        users = get_user_model()
        brands = list(Brand.objects.filter(name__in=["apis.tax", "api.forsale"]))
        for username, name in OWNERS.items():
            password = secrets.token_urlsafe(9)
            user, _ = users.objects.get_or_create(username=username, defaults={"first_name": name})
            user.is_staff = True
            user.set_password(password)
            user.save()
            for brand in brands:
                Membership.objects.update_or_create(user=user, brand=brand,
                                                    defaults={"role": Membership.Role.OWNER, "name": name})
            self.stdout.write(f"owner console   {username} / {password}  ({', '.join(b.name for b in brands)})")
        for brand in brands:
            for username in MEMBERS.get(brand.name, ()):
                user = users.objects.filter(username=username).first()
                if user is None:
                    continue
                password = secrets.token_urlsafe(9)
                user.set_password(password)
                user.save()
                Membership.objects.get_or_create(user=user, brand=brand,
                                                 defaults={"role": Membership.Role.MEMBER, "name": user.first_name})
                self.stdout.write(f"delivery portal {username} / {password}  ({brand.name})")
