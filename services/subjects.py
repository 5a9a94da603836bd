"""A brand's customers: subjects made, read and changed over the API, the console and the CLI.

A subject's kind is one a registered Service takes (a taxpayer, an account), and its key is checked against
the grammar that Service declares (an EIN is NN-NNNNNNN). Its (kind, key) is unique per brand and clock
domain (``subject_key_per_domain``: a constraint, and the id derives from it). Its calendar is the one it
names, else the calendar its Service declares (``Service(calendar=CalendarSpec(…))``), else the brand's
default; a brand with none is refused with ``calendar_required``, never silently UTC with no weekends. The
calendar is resolved when the subject is made and kept on it, so its dates never change under it because a
default changed later. It is the customer's own: its zone and closing minute judge each due, and its closed
days add to those of the calendar each date is bound to (the clock's or the Service's: calendars.closed_days).
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

from django.db import IntegrityError, transaction

from calendars.brand_calendars import brand_default_calendar, check_metadata, merge_metadata
from calendars.closed_days import calendar_of_spec
from calendars.contacts import check_contacts, contacts_add
from calendars.models import Calendar, ClockItem, Subject, seeded_subject_id
from timers.armer import DirectArmer
from timers.errors import KeepingTimeError, NotFound
from timers.models import Brand

from . import registry
from .declare import Service, SubjectSpec


def _bad(message: str, *, param: str, code: str = "invalid_request", status: int = 400) -> KeepingTimeError:
    err = KeepingTimeError(message, code=code, status=status)
    err.param = param
    return err


def subject_kinds() -> dict[str, SubjectSpec]:
    """Each kind of subject a registered Service takes, with its key's name and grammar."""
    kinds: dict[str, SubjectSpec] = {}
    for svc in sorted(registry.all_services().values(), key=lambda s: s.name):
        seen = kinds.setdefault(svc.subject.kind, svc.subject)
        if seen.pattern is None and svc.subject.pattern is not None:  # the grammar, where a Service writes it
            kinds[svc.subject.kind] = svc.subject
    return kinds


def services_for(kind: str) -> list[Service]:
    return sorted((s for s in registry.all_services().values() if s.subject.kind == kind), key=lambda s: s.name)


def check_kind_and_key(kind: Any, key: Any) -> SubjectSpec:
    kinds = subject_kinds()
    if not isinstance(kind, str) or kind not in kinds:
        raise _bad(f"kind: no Service takes a subject of kind {kind!r}; kinds: {', '.join(kinds) or 'none'}",
                   param="kind", code="invalid_kind")
    spec = kinds[kind]
    if not isinstance(key, str) or not 1 <= len(key) <= 128 or "\x00" in key or key != key.strip():
        raise _bad(f"key: a {kind}'s {spec.key}, 1 to 128 characters with no space around it",
                   param="key", code="invalid_subject_key")
    wrong = spec.key_problem(key)
    if wrong:
        raise _bad(f"key: {wrong}", param="key", code="invalid_subject_key")
    return spec


def resolve_calendar(*, brand: Brand, kind: str, calendar: Calendar | None = None) -> Calendar:
    """The calendar a new subject of ``kind`` keeps its dates on: its own, its Service's, else the brand's."""
    if calendar is not None:
        return calendar
    declared = {s.calendar.name: s.calendar for s in services_for(kind) if s.calendar is not None}
    if len(declared) == 1:
        return calendar_of_spec(brand_id=brand.id, spec=next(iter(declared.values())))
    default = brand_default_calendar(brand.id)
    if default is not None:
        return default
    raise _bad(f"calendar: {brand.name} has no calendar for a {kind}'s dates to fall on: make one (POST /calendars "
               "{name, zone, holidays…}; the brand's first is its default) or name one", param="calendar",
               code="calendar_required")


def get_calendar(*, brand: Brand, calendar_id: str, param: str = "calendar") -> Calendar:
    found = Calendar.objects.filter(brand=brand, pk=calendar_id).first() if isinstance(calendar_id, str) else None
    if found is None:
        err = NotFound(f"{param}: no calendar {calendar_id!r}")
        err.param = param
        raise err
    return found


def _check_name(name: Any) -> str:
    if not isinstance(name, str) or not name.strip() or len(name) > 200 or "\x00" in name:
        raise _bad("name: the subject's name, 1 to 200 characters", param="name")
    return name.strip()


@transaction.atomic
def subject_create(*, brand: Brand, domain: str, kind: str, key: str, name: str, calendar: Calendar | None = None,
                   metadata: Mapping[str, Any] | None = None, contacts: Any = None, now: datetime) -> Subject:
    """A customer of the brand on the live clock or a test clock, with their people (``contacts``: checked before
    anything is written): ``409 subject_exists`` names the one it is."""
    spec = check_kind_and_key(kind, key)
    name = _check_name(name)
    meta = check_metadata(metadata)
    people = check_contacts(contacts) if contacts is not None else []
    cal = resolve_calendar(brand=brand, kind=kind, calendar=calendar)
    subject = Subject(id=seeded_subject_id(brand=brand, domain=domain, kind=kind, key=key), brand=brand, domain=domain,
                      kind=kind, key_name=spec.key, key=key, name=name, calendar=cal, metadata=meta, created_at=now)
    try:
        with transaction.atomic():
            subject.save(force_insert=True)
    except IntegrityError:
        taken = (Subject.objects.filter(brand=brand, domain=domain, kind=kind, key=key).values_list("pk", flat=True)
                 .first())
        raise _bad(f"key: a {kind} {key} is a subject already: {taken}", param="key", code="subject_exists",
                   status=409) from None
    DirectArmer(brand=brand, domain=domain, now=now).record(
        "subject.created", subject=subject.id,
        data={"kind": kind, "key": key, "name": name, "calendar": cal.id, "zone": cal.zone})
    contacts_add(subject=subject, contacts=people, now=now)
    return subject


@transaction.atomic
def subject_update(*, subject: Subject, changes: Mapping[str, Any], now: datetime) -> Subject:
    """Its name, its metadata (merged, Stripe's rules) and, while it has no open date, its calendar."""
    subject = Subject.objects.select_for_update(of=("self",)).select_related("calendar").get(pk=subject.pk)
    changed: dict[str, Any] = {}
    if "name" in changes:
        subject.name = changed["name"] = _check_name(changes["name"])
    if "metadata" in changes:
        subject.metadata = merge_metadata(subject.metadata, changes["metadata"])
        changed["metadata"] = subject.metadata
    if "calendar" in changes:
        cal = get_calendar(brand=subject.brand, calendar_id=changes["calendar"])
        if cal.pk != subject.calendar_id:
            # Moving every date to another calendar is not on the closed re-arm list: only a subject with no
            # open date changes calendar; its next dates open on the new one.
            n = ClockItem.objects.filter(clock__subject=subject, status__in=[ClockItem.Status.OPEN,
                                                                             ClockItem.Status.DUE]).count()
            if n:
                raise _bad(f"calendar: {subject.name} has {n} open date{'s' if n != 1 else ''} on "
                           f"{subject.calendar.name if subject.calendar else 'its calendar'}; a subject changes "
                           "calendar only with none open (change the calendar's closed days instead)",
                           param="calendar", code="subject_has_open_dates", status=409)
            subject.calendar = cal
            changed["calendar"] = cal.id
    subject.save()
    if changed:
        DirectArmer(brand=subject.brand_id, domain=subject.domain, now=now).record(
            "subject.updated", subject=subject.id, data=changed)
    return subject
