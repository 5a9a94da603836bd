"""The portals' shared reads: what the delivery portal and the console both read of a member.

Kept apart from ``calendars.words`` (which says a time in a zone and reads nothing) so that the words stay
pure and a page asks the database for its reader's zone once.
"""

from __future__ import annotations

from zoneinfo import ZoneInfo

from django.contrib.auth.models import User

from calendars.models import Calendar
from calendars.words import UTC_ZONE
from timers.models import Membership


def member_zone(brand_ids: list[str], *, user: User | None = None) -> ZoneInfo:
    """A member's zone: the one they chose (their profile, ``Membership.zone``), else their brand's calendar
    (its default; the first brand's when they are in several), else UTC."""
    chosen = (Membership.objects.filter(user=user).exclude(zone="").values_list("zone", flat=True).first()
              if user is not None else None)
    zone = chosen or (Calendar.objects.filter(brand_id__in=brand_ids, is_default=True).order_by("brand__name")
                      .values_list("zone", flat=True).first())
    try:
        return ZoneInfo(zone) if zone else UTC_ZONE
    except (KeyError, ValueError):
        return UTC_ZONE
