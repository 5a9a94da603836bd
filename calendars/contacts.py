"""A customer's people: contacts made, changed and removed, as the API (services/subjects_api.py), the console
(the customer page) and the CLI (``manage.py subjects contacts``) all do, through these functions.

A contact has a name, an email, optionally a phone and a zone, and a role the brand names (officer, bookkeeper);
one is primary (a constraint: ``contact_one_primary``), and an address is one contact per customer
(``contact_email_per_subject``). Bad input is a coded 400 with its param and writes nothing. Every change
re-resolves who answers for the customer's open dates (calendars/answers.py), on the record.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

from django.core.exceptions import ValidationError
from django.core.validators import validate_email
from django.db import IntegrityError, transaction

from timers.domains import domain_id
from timers.errors import KeepingTimeError, NotFound

from .answers import reresolve
from .brand_calendars import check_zone
from .models import Contact, Subject
from .roles import RoleError, check_role_name

FIELDS = ("name", "email", "phone", "zone", "role", "primary")
MAX_CONTACTS = 50  # a customer's people, not a mailing list


def _bad(message: str, *, param: str, code: str, status: int = 400) -> KeepingTimeError:
    err = KeepingTimeError(message, code=code, status=status)
    err.param = param
    return err


def _control(text: str) -> bool:
    return any(ord(ch) < 32 or 127 <= ord(ch) < 160 for ch in text)


def _check(values: Mapping[str, Any], *, partial: bool, where: str = "") -> dict[str, Any]:
    """The contact's fields as given, checked: each problem a coded 400 naming its param (``contacts[1].email``
    in a subject's create)."""
    def p(name: str) -> str:
        return f"{where}{name}" if not where else f"{where}.{name}"

    unknown = [k for k in values if k not in FIELDS]
    if unknown:
        raise _bad(f"{p(unknown[0])}: a contact has {', '.join(FIELDS)}", param=p(unknown[0]),
                   code="parameter_unknown")
    out: dict[str, Any] = {}
    if "name" in values or not partial:
        name = values.get("name")
        if not isinstance(name, str) or not name.strip() or len(name) > 200 or _control(name) \
                or not name.strip().strip("\u200b\u200c\u200d\u2060\ufeff"):
            raise _bad(f"{p('name')}: their name, 1 to 200 characters of one line", param=p("name"),
                       code="invalid_name")
        out["name"] = name.strip()
    if "email" in values or not partial:
        email = values.get("email")
        try:
            if not isinstance(email, str) or len(email) > 254 or _control(email):
                raise ValidationError("not text")
            validate_email(email)
        except ValidationError:
            raise _bad(f"{p('email')}: an email address (ada@example.com), not {email!r}", param=p("email"),
                       code="invalid_email") from None
        out["email"] = email.strip()
    if "phone" in values:
        phone = values.get("phone") or ""
        digits = sum(ch.isdigit() for ch in phone) if isinstance(phone, str) else 0
        if not isinstance(phone, str) or (phone and (not 4 <= digits <= 20 or len(phone) > 32
                                                     or any(not (ch.isdigit() or ch in "+ ()-.") for ch in phone))):
            raise _bad(f"{p('phone')}: a phone number (+1 212 555 0100), or empty", param=p("phone"),
                       code="invalid_phone")
        out["phone"] = phone
    if "zone" in values:
        zone = values.get("zone") or ""
        if zone:
            try:
                check_zone(zone, param=p("zone"))
            except KeepingTimeError:
                raise _bad(f"{p('zone')}: an IANA zone such as America/Los_Angeles, or empty for the customer's "
                           "calendar's", param=p("zone"), code="invalid_zone") from None
        out["zone"] = zone
    if "role" in values:
        try:
            out["role"] = check_role_name(values.get("role"))
        except RoleError as exc:
            raise _bad(f"{p('role')}: {exc}", param=p("role"), code="invalid_role") from None
    if "primary" in values:
        if not isinstance(values["primary"], bool):
            raise _bad(f"{p('primary')}: true or false", param=p("primary"), code="invalid_request")
        out["primary"] = values["primary"]
    return out


def check_contacts(values: Any) -> list[dict[str, Any]]:
    """A subject's ``contacts`` as the create takes them: a list of contacts, checked before anything is written;
    the first is primary unless one says it is."""
    if not isinstance(values, list) or len(values) > MAX_CONTACTS:
        raise _bad(f"contacts: a list of up to {MAX_CONTACTS} contacts", param="contacts", code="invalid_request")
    checked = []
    for i, value in enumerate(values):
        if not isinstance(value, Mapping):
            raise _bad(f"contacts[{i}]: a contact {{name, email, phone, zone, role, primary}}",
                       param=f"contacts[{i}]", code="invalid_request")
        checked.append(_check(value, partial=False, where=f"contacts[{i}]"))
    if sum(1 for c in checked if c.get("primary")) > 1:
        raise _bad("contacts: one is primary", param="contacts", code="invalid_request")
    emails = [c["email"].lower() for c in checked]
    if len(set(emails)) != len(emails):
        raise _bad("contacts: each address once", param="contacts", code="invalid_email")
    if checked and not any(c.get("primary") for c in checked):
        checked[0]["primary"] = True
    return checked


def _contact_id(subject: Subject, email: str) -> str:
    # Derived from the clock domain's seed, the customer and the address, so a replayed scenario names it alike.
    return domain_id("ctc", subject.domain, subject.id, email.lower())


def _exists(subject: Subject, email: str) -> KeepingTimeError:
    return _bad(f"email: {subject.name} has a contact at {email} already", param="email", code="contact_exists",
                status=409)


@transaction.atomic
def contacts_add(*, subject: Subject, contacts: list[dict[str, Any]], now: datetime) -> list[Contact]:
    """Contacts checked by ``check_contacts`` (a subject's create), written in one go."""
    made = []
    for values in contacts:
        made.append(_make(subject, values, now))
    if made:
        reresolve(subject=subject, why="contact added")
    return made


def _make(subject: Subject, values: dict[str, Any], now: datetime) -> Contact:
    seq = Contact.objects.filter(subject=subject).count()
    if seq >= MAX_CONTACTS:
        raise _bad(f"contacts: a customer has up to {MAX_CONTACTS}", param="contacts", code="invalid_request")
    # A customer with people has a primary one: their first is, whatever it says.
    primary = bool(values.get("primary")) or not Contact.objects.filter(subject=subject).exists()
    if primary:
        Contact.objects.filter(subject=subject, primary=True).update(primary=False)
    try:
        with transaction.atomic():
            return Contact.objects.create(
                id=_contact_id(subject, values["email"]), brand_id=subject.brand_id, subject=subject,
                name=values["name"], email=values["email"], phone=values.get("phone", ""),
                zone=values.get("zone", ""), role=values.get("role", "contact"), primary=primary, seq=seq,
                created_at=now)
    except IntegrityError:
        raise _exists(subject, values["email"]) from None


@transaction.atomic
def contact_create(*, subject: Subject, values: Mapping[str, Any], now: datetime) -> Contact:
    """A contact of the customer's: ``primary`` when asked, or when it is their first."""
    contact = _make(subject, _check(values, partial=False), now)
    reresolve(subject=subject, why="contact added")
    return contact


@transaction.atomic
def contact_update(*, contact: Contact, values: Mapping[str, Any]) -> Contact:
    """Its name, address, phone, zone, role; ``primary: true`` makes it the one a customer's date goes to first
    (``primary: false`` is refused, whoever it names: a customer's primary changes by naming another)."""
    changes = _check(values, partial=True)
    if changes.get("primary") is False:
        raise _bad("primary: only true (make another contact primary instead)", param="primary",
                   code="invalid_request")
    if changes.get("primary"):
        Contact.objects.filter(subject_id=contact.subject_id, primary=True).exclude(pk=contact.pk).update(primary=False)
    for name, value in changes.items():
        setattr(contact, name, value)
    try:
        with transaction.atomic():
            contact.save()
    except IntegrityError:
        raise _exists(contact.subject, changes.get("email", contact.email)) from None
    reresolve(subject=contact.subject, why="contact changed")
    return contact


@transaction.atomic
def contact_remove(*, contact: Contact) -> None:
    """Remove a contact: if it was the primary one, the next oldest becomes primary; the dates it answered for go
    to whoever their role now names (nobody, once the customer has no contact), each on the record."""
    subject = contact.subject
    was_primary = contact.primary
    contact.delete()
    if was_primary:
        nxt = Contact.objects.filter(subject=subject).order_by("seq", "id").first()
        if nxt is not None:
            Contact.objects.filter(pk=nxt.pk).update(primary=True)
    reresolve(subject=subject, why="contact removed")


def contact_get(*, subject: Subject, contact_id: Any, param: str = "contact") -> Contact:
    found = (Contact.objects.filter(subject=subject, pk=contact_id).select_related("subject").first()
             if isinstance(contact_id, str) and "\x00" not in contact_id else None)
    if found is None:
        err = NotFound(f"{param}: {subject.name} has no contact {contact_id!r}")
        err.param = param
        raise err
    return found


def contact_json(c: Contact) -> dict[str, Any]:
    return {"id": c.id, "object": "contact", "subject": c.subject_id, "name": c.name, "email": c.email,
            "phone": c.phone, "zone": c.zone or None, "role": c.role, "primary": c.primary,
            "created": c.created_at.isoformat().replace("+00:00", "Z")}
