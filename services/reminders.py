"""The owner's Remind: one email to the person who answers for a date, through the outbox's email transport,
with the date in that person's zone, what a miss costs, and a one-time link to their portal; on the record
(``clock.reminded {to, by}``) and a Notification row, as every notice. A role with nobody in it (a customer with
no contact yet) is refused ``no_one_to_remind``: there is nobody to email.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta
from zoneinfo import ZoneInfo

from calendars.answers import Person, clock_person
from calendars.entries import clock_what
from calendars.models import ClockItem, Contact
from calendars.words import day, local
from timers.armer import DirectArmer
from timers.errors import KeepingTimeError
from timers.ids import brand_domain

from .costs import clock_costs, customer_says
from .notifications import notify
from .portal_sessions import portal_session_create

LINK_LIFETIME = timedelta(days=7)  # an emailed link waits for its reader longer than one the brand hands over


@dataclass(frozen=True)
class Reminded:
    person: Person
    sent: bool  # False: already reminded this minute (nothing sent twice)


def _zone(person: Person, item: ClockItem) -> ZoneInfo:
    for name in (person.zone, item.clock.subject.calendar.zone if item.clock.subject.calendar_id else ""):
        if name:
            try:
                return ZoneInfo(name)
            except (KeyError, ValueError):
                continue
    return ZoneInfo("UTC")


def clock_remind(*, item: ClockItem, by: str, link_base: str) -> Reminded:
    """Email who answers for ``item`` a reminder (at most once a minute of domain time)."""
    clock = item.clock
    if item.status in (ClockItem.Status.SATISFIED, ClockItem.Status.VOIDED):
        raise KeepingTimeError(f"{item.owner_key} is {item.status}", code="clock_not_open", status=409)
    person = clock_person(clock)
    if person is None:
        raise KeepingTimeError(f"nobody answers for {item.owner_key} to remind: add a contact, or assign it",
                               code="no_one_to_remind", status=409)
    armer = DirectArmer(brand=clock.brand_id, domain=brand_domain(clock.domain, clock.brand_id))
    brand = clock.brand.name
    what = clock_what(item)
    zone = _zone(person, item)
    cost = clock_costs([clock])[clock.id]
    if person.contact_id is not None:
        contact = Contact.objects.get(pk=person.contact_id)
        session, path = portal_session_create(brand=clock.brand, subject=clock.subject, contact=contact,
                                              lifetime=LINK_LIFETIME)
        link = f"{link_base.rstrip('/')}{path}"
        then = (f"Open your dates with {brand} (the link works once, until {day(session.expires_at.astimezone(zone).date())}):"
                f"\n{link}")
        miss = customer_says(cost.says, clock.hard, brand)
    else:
        then = f"Your dates: {link_base.rstrip('/')}/portal/delivery/"
        miss = cost.says
    body = (f"Hello {person.name},\n\n{by} of {brand} reminds you: {what} for {clock.subject.name} is due "
            f"{local(item.due_at, zone)} ({zone.key}).\n\nIf it is missed: {miss}.\n\n{then}\n\n{brand}\n")
    sent = notify(armer, kind="clock.reminder", subject=item.owner_key, recipients=[person],
                  message=f"{what} for {clock.subject.name} is due {day(item.due_date)}", body=body,
                  key=f"{item.owner_key}|remind:{armer.now:%Y-%m-%dT%H:%M}")
    if sent:
        armer.record("clock.reminded", subject=item.owner_key,
                     data={"clock": clock.name, "item": item.item, "to": person.name, "by": by,
                           "channel": "email" if person.email else "console"})
    return Reminded(person, bool(sent))
