"""Who sees what in the owner console: a brand's owners (staff users with an owner Membership) see only
their brands' objects; a superuser sees every brand's. And which clock domain the console is viewed "as of".

Every model registered on the console is scoped by the path from it to its Brand (``brand_path``); a model
with no such path (versions, deploys, users) is the superuser's alone.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from functools import cache
from zoneinfo import ZoneInfo

from django.db.models import Model, QuerySet

from calendars.models import Calendar, Subject
from timers.domains import domain_now
from timers.models import LIVE, LIVE_PREFIX, Brand, Commit, Membership, TestClock, Timer, in_domain

AS_OF = "owner_as_of"  # the session key: "live" (the brands' live clocks) or a test clock id


def owner_brand_ids(user) -> frozenset[str]:
    """The brands a user owns (cached on the user object for the request)."""
    if user is None or not user.is_authenticated or not user.is_active:
        return frozenset()
    cached = getattr(user, "_kt_owner_brands", None)
    if cached is None:
        cached = frozenset(Membership.objects.filter(user=user, role=Membership.Role.OWNER)
                           .values_list("brand_id", flat=True))
        user._kt_owner_brands = cached
    return cached


def is_owner(user) -> bool:
    return bool(user and user.is_authenticated and user.is_active and user.is_staff and owner_brand_ids(user))


def sees_all(user) -> bool:
    return bool(user and user.is_active and user.is_superuser)


@cache
def brand_path(model: type[Model]) -> str | None:
    """The lookup from ``model`` to its Brand's id: ``pk`` for Brand, ``brand`` for a model with a brand, one
    hop (``clock__brand``) for a model whose parent has one; None when there is no path."""
    if model is Brand:
        return "pk"
    if model is Commit:
        return "timer_id"  # by its timer's brand (scope() below): a commit names its timer, not a brand
    fks = [f for f in model._meta.concrete_fields if f.many_to_one]
    for f in fks:
        if f.name == "brand" and f.related_model is Brand:
            return "brand_id"
    for f in fks:
        parent = f.related_model
        if any(p.name == "brand" and p.many_to_one and p.related_model is Brand for p in parent._meta.concrete_fields):
            return f"{f.name}__brand_id"
    return None


def scopable(model: type[Model]) -> bool:
    return brand_path(model) is not None


def scope(qs: QuerySet, brands: frozenset[str] | None) -> QuerySet:
    """``qs`` within ``brands`` (None: every brand, the superuser's view)."""
    if brands is None:
        return qs
    path = brand_path(qs.model)
    if path is None:
        return qs.none()
    if qs.model is Commit:
        return qs.filter(timer_id__in=Timer.objects.filter(brand_id__in=brands).values("id"))
    return qs.filter(**{f"{path}__in": brands})


def request_brands(request) -> frozenset[str] | None:
    """The brands this request may see: None for a superuser (all), else the user's owned brands."""
    if sees_all(request.user):
        return None
    return owner_brand_ids(request.user)


# -- as of: the clock domain the console shows ---------------------------------------------------------------
@dataclass(frozen=True)
class AsOf:
    domain: str  # "live" (the brands' live clocks, live_<brand id> each) or a test clock id
    clock: TestClock | None
    now: datetime
    zone: str  # the brand's zone: its subjects' calendar (the first), else UTC
    brand_ids: frozenset[str] | None  # who the dashboard is for (None: every brand)
    chosen: bool  # picked in the header (lists then show only this domain), not the default

    @property
    def label(self) -> str:
        if self.clock is None:
            return "the live clock"
        return f"test clock {self.clock.name or self.clock.id}"

    @property
    def tz(self) -> ZoneInfo:
        return ZoneInfo(self.zone)


def test_clocks(brands: frozenset[str] | None) -> QuerySet:
    qs = TestClock.objects.exclude(status__in=TestClock.GONE).select_related("brand").order_by("created_at", "id")
    return qs if brands is None else qs.filter(brand_id__in=brands)


def _default_domain(brands: frozenset[str] | None) -> str:
    """The live clock when it has any of the brands' timers; else the brands' first test clock (the demo's
    data lives on one), else live."""
    live = Timer.objects.filter(domain__startswith=LIVE_PREFIX)
    if brands is not None:
        live = live.filter(brand_id__in=brands)
    if live.exists():
        return LIVE
    first = test_clocks(brands).values_list("id", flat=True).first()
    return first or LIVE


def brand_zone(brands: frozenset[str] | None, domain: str) -> str:
    subjects = Subject.objects.filter(in_domain(domain), calendar__isnull=False)
    cals = Calendar.objects.all()
    if brands is not None:
        subjects, cals = subjects.filter(brand_id__in=brands), cals.filter(brand_id__in=brands)
    zone = subjects.order_by("created_at", "id").values_list("calendar__zone", flat=True).first()
    if zone is None and brands is not None and len(brands) == 1:
        zone = cals.order_by("name").values_list("zone", flat=True).first()
    try:
        ZoneInfo(zone or "UTC")
    except Exception:  # a zone the calendar could not hold: never a 500 for it
        return "UTC"
    return zone or "UTC"


def as_of(request) -> AsOf:
    cached = getattr(request, "_kt_as_of", None)
    if cached is not None:
        return cached
    brands = request_brands(request)
    chosen = request.session.get(AS_OF) if hasattr(request, "session") else None
    clock = None
    if chosen and chosen != LIVE:
        clock = test_clocks(brands).filter(pk=chosen).first()
        if clock is None:
            chosen = None  # gone, or not the user's: back to the default
    domain = chosen or _default_domain(brands)
    if clock is None and domain != LIVE:
        clock = test_clocks(brands).filter(pk=domain).first()
    dash_brands = brands if clock is None else frozenset({clock.brand_id})
    result = AsOf(domain=domain, clock=clock, now=domain_now(domain=domain), brand_ids=dash_brands,
                  zone=brand_zone(dash_brands, domain), chosen=bool(chosen))
    request._kt_as_of = result
    return result
