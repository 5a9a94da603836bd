"""Who answers for a date: a clock's role (calendars/roles.py) resolved to a person record, a contact of the
customer's or a member of the brand, when the clock opens and again whenever that changes, each time on the
record (``clock.assigned {role, to}``), so nobody's dates move silently.

Inside the tick the contacts and the members of record are read once a batch for each subject (no query per
fire); an advance carries the contacts from batch to batch. Outside it, a change of contact (calendars/contacts.py) or of member of record re-resolves the subject's
open clocks through a DirectArmer.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from timers import batch as batches
from timers.armer import Armer, DirectArmer
from timers.ids import brand_domain
from timers.models import Membership

from .models import Clock, ClockItem, Contact, MemberOfRecord, Subject
from .roles import STEWARD, Role, parse_role

CONTACTS = "calendars.contacts"
OF_RECORD = "calendars.of_record"
MEMBERS = "calendars.members"
OPEN = (ClockItem.Status.OPEN, ClockItem.Status.DUE)


@dataclass(frozen=True)
class Person:
    """Someone a date goes to: a contact of the customer's or a member of the brand, with where to reach them."""

    name: str
    email: str = ""
    zone: str = ""
    contact_id: str | None = None
    member_id: int | None = None
    user_id: int | None = None

    @classmethod
    def of_contact(cls, c: Contact) -> Person:
        return cls(c.name, c.email, c.zone, contact_id=c.id)

    @classmethod
    def of_member(cls, m: Membership) -> Person:
        user = m.user
        return cls(m.name or user.get_full_name() or user.get_username(), user.email, m.zone, member_id=m.pk,
                   user_id=user.pk)


def subject_contacts(subject_id: str) -> list[Contact]:
    """The subject's contacts, primary first, then as they were added; once a batch inside the tick, and once an
    advance while they are carried from batch to batch (a subject's contacts are its clock's own rows: refused
    outside writes while it advances). Read once a batch, an advance of many batches read every subscriber's
    contacts again in each, one query a subscriber: its statements a fire grew with the subscribers."""
    b = batches.current()
    if b is None:
        return list(Contact.objects.filter(subject_id=subject_id).order_by(*Contact.ORDER))
    cache = b.cache(CONTACTS, tables=("calendars_contact",), carry=True)
    found = cache.get(subject_id)
    if found is None:
        with b.quiet():
            found = cache[subject_id] = list(Contact.objects.filter(subject_id=subject_id)
                                             .order_by(*Contact.ORDER))
    return found


def _of_record(subject_id: str) -> dict[tuple[str, str], Membership]:
    """(owner_ref, role) → the member of record, for one subject; once a batch inside the tick."""
    def read() -> dict[tuple[str, str], Membership]:
        return {(r.owner_ref, r.role): r.member for r in
                MemberOfRecord.objects.filter(subject_id=subject_id).select_related("member__user")}

    b = batches.current()
    if b is None:
        return read()
    cache = b.cache(OF_RECORD, tables=("calendars_memberofrecord",))
    found = cache.get(subject_id)
    if found is None:
        with b.quiet():
            found = cache[subject_id] = read()
    return found


def contact_for(role: Role, contacts: Iterable[Contact]) -> Contact | None:
    """The customer's person in a role: the contact of that role (the primary one first), else the primary
    contact; ``customer`` alone is the primary one. None: the customer has no contact yet."""
    listed = list(contacts)
    if role.name:
        found = next((c for c in listed if c.role == role.name), None)
        if found is not None:
            return found
    return next((c for c in listed if c.primary), listed[0] if listed else None)


def resolve(role: Role, *, subject_id: str, owner_ref: str) -> Contact | Membership | None:
    """The person a role names for one clock now: a contact, a member, or None (the brand; or nobody yet)."""
    if role.kind == "customer":
        return contact_for(role, subject_contacts(subject_id))
    if role.kind == "member":
        members = _of_record(subject_id)
        return members.get((owner_ref, role.name)) or members.get(("", role.name))
    return None


def person_name(found: Contact | Membership | None, role: Role) -> str:
    """How the record and the pages name who answers: the person, the brand, or nobody yet ("")."""
    if isinstance(found, Contact):
        return found.name
    if isinstance(found, Membership):
        return Person.of_member(found).name
    return STEWARD if role.kind == "brand" else ""


def place(clock: Clock, found: Contact | Membership | None, role: Role) -> None:
    """Put who answers on the clock row (not saved)."""
    clock.contact = found if isinstance(found, Contact) else None
    clock.member = found if isinstance(found, Membership) else None
    clock.answers_for = person_name(found, role)


def record_assigned(armer: Armer, clock: Clock, *, why: str, was: str | None = None, by: str = "") -> None:
    data = {"clock": clock.name, "role": clock.role, "to": clock.answers_for, "why": why}
    if was is not None:
        data["was"] = was
    if by:
        data["by"] = by
    armer.record("clock.assigned", subject=clock.id, data=data)


def party_person(subject_id: str, party: str) -> Person | str:
    """A Service's party ("the buyer") as the customer's contact in that role (``buyer``), else their primary
    contact; with no contact, the party's name alone (a row for the apps, no email)."""
    role = party[4:] if party.startswith("the ") else party
    found = contact_for(Role("customer", role.strip().replace(" ", "-")), subject_contacts(subject_id))
    return Person.of_contact(found) if found is not None else party


def _members(brand_id: str) -> dict[int, Membership]:
    """The brand's memberships by id, with their users; once a batch inside the tick."""
    def read() -> dict[int, Membership]:
        return {m.pk: m for m in Membership.objects.filter(brand_id=brand_id, user__isnull=False).select_related("user")}

    b = batches.current()
    if b is None:
        return read()
    cache = b.cache(MEMBERS, tables=("timers_membership", "auth_user"))
    found = cache.get(brand_id)
    if found is None:
        with b.quiet():
            found = cache[brand_id] = read()
    return found


def clock_person(clock: Clock) -> Person | None:
    """Who answers for the clock, to reach them: None for the brand and for nobody yet. Inside the tick from the
    batch's reads of the subject's contacts and the brand's members (no query per fire)."""
    if clock.contact_id is not None:
        found = next((c for c in subject_contacts(clock.subject_id) if c.pk == clock.contact_id), None)
        return Person.of_contact(found) if found is not None else None
    if clock.member_id is not None:
        member = _members(clock.brand_id).get(clock.member_id)
        return Person.of_member(member) if member is not None else None
    return None


def role_of(clock: Clock) -> Role:
    try:
        return parse_role(clock.role)
    except ValueError:  # a clock made before roles, or assigned to a member on the clock itself ("member")
        return Role("member", "assigned") if clock.member_id else Role("brand")


def customers_clock(clock: Clock) -> bool:
    """Whether the customer answers for the clock (theirs to keep or choose on), as its role says."""
    return not clock.assigned and clock.role.split(":", 1)[0] == "customer"


def reresolve(*, subject: Subject, why: str, by: str = "", roles: tuple[str, ...] = ("customer", "member"),
              armer: Armer | None = None) -> int:
    """Resolve again who answers for each of the subject's open clocks whose role is of ``roles`` and that no
    one assigned on the clock itself; each that changed hands is saved and recorded (through ``armer`` inside
    the tick, else a DirectArmer of the subject's clock). Returns how many moved."""
    clocks = (Clock.objects.filter(subject=subject, assigned=False, items__status__in=OPEN)
              .select_related("contact", "member__user").distinct().order_by("opened_at", "id"))
    moved = 0
    for clock in clocks:
        role = role_of(clock)
        if role.kind not in roles:
            continue
        found = resolve(role, subject_id=subject.id, owner_ref=clock.owner_ref)
        was = clock.answers_for
        if (clock.contact_id, clock.member_id) == (
                found.pk if isinstance(found, Contact) else None, found.pk if isinstance(found, Membership) else None) \
                and was == person_name(found, role):
            continue
        place(clock, found, role)
        clock.save(update_fields=["contact", "member", "answers_for"])
        armer = armer or DirectArmer(brand=subject.brand_id, domain=brand_domain(subject.domain, subject.brand_id))
        record_assigned(armer, clock, why=why, was=was, by=by)
        moved += 1
    return moved


def member_of_record_set(*, subject: Subject, owner_ref: str, role: str, member: Membership, by: str,
                         armer: Armer | None = None) -> int:
    """``member`` answers in ``role`` for the job ``owner_ref`` (empty: all of the subject's work): every open date
    of that role moves to them, each on the record. Returns how many moved."""
    if member.brand_id != subject.brand_id:
        raise ValueError("a member of the subject's brand")
    MemberOfRecord.objects.update_or_create(subject=subject, owner_ref=owner_ref, role=role,
                                            defaults={"brand_id": subject.brand_id, "member": member})
    return reresolve(subject=subject, why=f"the {role} of record", by=by, roles=("member",), armer=armer)
