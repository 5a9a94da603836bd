"""A brand's owner for the console's tests: a staff user with an owner's membership, named after its username."""

from __future__ import annotations

from django.contrib.auth import get_user_model

from timers.models import Brand, Membership


def owner(brand: Brand, username: str):
    user = get_user_model().objects.create_user(username=username, password="pw", is_staff=True)
    Membership.objects.create(user=user, brand=brand, role=Membership.Role.OWNER, name=username.title())
    return user
