"""A brand's people: its members and owners (``timers.models.Membership``) and who is in each pool
(``PoolMember``). Keyword-only service functions the API, the console and the CLI share."""

from __future__ import annotations

from timers.models import Membership

STAFF_NAMES = ("the brand",)


def brand_people(brand_id: str) -> set[str]:
    """The names that stand for the brand: "the brand", and each member's and owner's name and username.
    A clock answered for by one of these is the brand's; any other name is the customer's."""
    names = set(STAFF_NAMES)
    for name, username in Membership.objects.filter(brand_id=brand_id).values_list("name", "user__username"):
        names.update(n for n in (name, username) if n)
    return names


def member_names(user) -> set[str]:
    """What clocks call this member: their username and their membership names."""
    names = {user.get_username()}
    names.update(n for n in Membership.objects.filter(user=user).values_list("name", flat=True) if n)
    return names
