"""subjects create --kind taxpayer --key 12-3456789 --name "Acme Robotics" [--calendar cal_…] [--test-clock tc_…]
· subjects list [--kind] [--key] [--test-clock tc_…] · subjects show sbj_…
· subjects calendar sbj_… [--from 2027-02-01] [--test-clock tc_…] [--rungs] · subjects feed sbj_… [--rotate|--revoke]
· subjects portal sbj_… [--contact ctc_…] (a customer portal link, valid for an hour, for one of their contacts)
· subjects contacts list sbj_… · subjects contacts add sbj_… --name --email [--role --phone --zone --primary]
· subjects contacts change sbj_… ctc_… [--name --email --role --phone --zone --primary]
· subjects contacts remove sbj_… ctc_…
· subjects timeline sbj_… [--test-clock tc_…] [--zone Europe/Paris] [--limit 20] (what happened, then what comes)"""

from __future__ import annotations

import re

from django.conf import settings
from django.core.management.base import CommandError

from calendars import feed
from calendars.contacts import contact_create, contact_get, contact_remove, contact_update
from calendars.entries import subject_calendar
from calendars.feed_tokens import subject_feed_revoke, subject_feed_rotate
from calendars.models import Contact, Subject
from services.management.cli import brand_and_domain, pairs_option
from services.portal_sessions import portal_session_create
from services.subjects import get_calendar, subject_create
from services.timeline import ARMED, subject_timeline
from timers.api.inputs import parse_from
from timers.domains import domain_now, domain_writable
from timers.management.base import KTCommand
from timers.models import brand_domain, is_live
from timers.timeutil import zone_named

COLUMNS = ("date", "what", "kind", "answers for", "status")
CONTACT = re.compile(r"^\s*(?P<name>[^<>]+?)\s*<(?P<email>[^<>\s]+)>\s*(?P<role>\S+)?\s*$")


def _contact_option(text: str) -> dict[str, str]:
    """ "Ada Lovelace <ada@acme.example> officer" → a contact's fields (the role is optional)."""
    m = CONTACT.match(text)
    if m is None:
        raise CommandError(f'invalid_request: --contact is "Name <email>" and optionally a role, not {text!r}')
    return {k: v for k, v in m.groupdict().items() if v}


def contact_line(c: Contact) -> str:
    return " · ".join([c.id, c.name, c.email, c.role, *(["primary"] if c.primary else []),
                       *([c.phone] if c.phone else []), *([c.zone] if c.zone else [])])


def table(rows: list[tuple[str, ...]]) -> list[str]:
    """Columns padded to their widest cell, two spaces apart; the last one free."""
    widths = [max(len(r[i]) for r in rows) for i in range(len(COLUMNS) - 1)]
    return ["  ".join([c.ljust(w) for c, w in zip(r, widths, strict=False)] + [r[-1]]).rstrip() for r in rows]


class Command(KTCommand):
    help = "A brand's customers: make, list and show them; a subject's calendar and the webcal feed that publishes it."

    def add_arguments(self, parser):
        sub = parser.add_subparsers(dest="action", required=True)
        mk = sub.add_parser("create", help="a customer of the brand (a kind a Service takes, its key in its grammar)")
        mk.add_argument("--kind", required=True, help="taxpayer, account …")
        mk.add_argument("--key", required=True, help="its key: an EIN 12-3456789, a domain …")
        mk.add_argument("--name", required=True)
        mk.add_argument("--calendar", help="cal_…: its own calendar (default: its Service's, else the brand's)")
        mk.add_argument("--contact", action="append", metavar="NAME <EMAIL>[ ROLE]",
                        help='one of their people, e.g. "Ada Lovelace <ada@acme.example> officer" (the first is '
                             "primary); again for each")
        mk.add_argument("--metadata", action="append", metavar="KEY=VALUE")
        mk.add_argument("--test-clock", help="tc_…: on a test clock (default: the brand's live clock)")
        mk.add_argument("--brand")
        ls = sub.add_parser("list", help="the brand's subjects on the live clock or a test clock")
        ls.add_argument("--kind")
        ls.add_argument("--key")
        ls.add_argument("--test-clock")
        ls.add_argument("--brand")
        sh = sub.add_parser("show", help="one subject")
        sh.add_argument("subject_id")
        cal = sub.add_parser("calendar", help="every date the subject keeps, from a date")
        cal.add_argument("subject_id")
        cal.add_argument("--from", dest="from_date", help="YYYY-MM-DD (default: today in the calendar's zone)")
        cal.add_argument("--test-clock")
        cal.add_argument("--rungs", action="store_true", help="list each date's rungs (reminders, steps) under it")
        tl = sub.add_parser("timeline", help="what happened to the customer, read from the record, then what is "
                                             "armed ahead: one line per entry, in the viewer's zone")
        tl.add_argument("subject_id")
        tl.add_argument("--test-clock")
        tl.add_argument("--zone", help="the IANA zone times are said in (default: the customer's calendar's)")
        tl.add_argument("--limit", type=int, help="only the last N entries of the past, and what is ahead")
        fd = sub.add_parser("feed", help="the subject's webcal URL")
        fd.add_argument("subject_id")
        which = fd.add_mutually_exclusive_group()
        which.add_argument("--rotate", action="store_true", help="issue a new token; the old URL stops working")
        which.add_argument("--revoke", action="store_true", help="no URL works until the next --rotate")
        pt = sub.add_parser("portal", help="a customer portal link for the subject, valid for an hour")
        pt.add_argument("subject_id")
        pt.add_argument("--contact", help="ctc_…: who it is for (default: the primary contact)")
        ct = sub.add_parser("contacts", help="the customer's people: list, add, change, remove")
        cts = ct.add_subparsers(dest="contacts_action", required=True)
        cl = cts.add_parser("list", help="their contacts, primary first")
        cl.add_argument("subject_id")
        for verb in ("add", "change"):
            ca = cts.add_parser(verb, help="a contact of theirs" if verb == "add" else "change a contact")
            ca.add_argument("subject_id")
            if verb == "change":
                ca.add_argument("contact_id")
            ca.add_argument("--name", required=verb == "add")
            ca.add_argument("--email", required=verb == "add")
            ca.add_argument("--role", help="the brand's word for them: officer, bookkeeper")
            ca.add_argument("--phone")
            ca.add_argument("--zone", help="an IANA zone their times are said in (default: the customer's calendar's)")
            ca.add_argument("--primary", action="store_true", help="the one a customer's date goes to first")
        cr = cts.add_parser("remove", help="remove a contact (their dates go to whoever their role names now)")
        cr.add_argument("subject_id")
        cr.add_argument("contact_id")

    def handle(self, *args, **o):
        getattr(self, f"_{o['action']}")(o)

    def _create(self, o):
        brand, domain = brand_and_domain(self, brand=o["brand"], test_clock=o["test_clock"])
        cal = get_calendar(brand=brand, calendar_id=o["calendar"], param="--calendar") if o["calendar"] else None
        subject = subject_create(brand=brand, domain=domain, kind=o["kind"], key=o["key"], name=o["name"],
                                 calendar=cal, metadata=pairs_option(o["metadata"], option="--metadata"),
                                 contacts=[_contact_option(c) for c in o["contact"] or []],
                                 now=domain_now(domain=domain))
        self.stdout.write(self.line(subject))
        for c in subject.contacts.order_by(*Contact.ORDER):
            self.stdout.write("  " + contact_line(c))

    def _list(self, o):
        brand, domain = brand_and_domain(self, brand=o["brand"], test_clock=o["test_clock"])
        qs = Subject.objects.filter(brand=brand, domain=domain).select_related("calendar").order_by("created_at", "id")
        if o["kind"]:
            qs = qs.filter(kind=o["kind"])
        if o["key"]:
            qs = qs.filter(key=o["key"])
        for subject in qs:
            self.stdout.write(self.line(subject))

    def _show(self, o):
        subject = self.subject(o["subject_id"])
        self.stdout.write(self.line(subject))
        for sub in subject.subscriptions.order_by("opened_at", "id"):
            self.stdout.write(f"  subscription {sub.id} · {sub.service} · {sub.status}")
        for job in subject.jobs.order_by("opened_at", "id"):
            self.stdout.write(f"  job {job.id} · {job.service} {job.period} · {job.status}")

    @staticmethod
    def line(subject: Subject) -> str:
        cal = subject.calendar
        where = "live" if is_live(subject.domain) else f"test clock {subject.domain}"
        return " · ".join([subject.id, f"{subject.kind} {subject.key}", subject.name,
                           f"{cal.zone} ({cal.name}, {cal.id})" if cal else "UTC", where])

    def _portal(self, o):
        subject = self.subject(o["subject_id"])
        contact = contact_get(subject=subject, contact_id=o["contact"], param="--contact") if o["contact"] else None
        session, path = portal_session_create(brand=subject.brand, subject=subject, contact=contact)
        self.stdout.write(f"http://{settings.KEEPING_TIME['FEED_HOST']}{path}")
        who = session.contact.name if session.contact_id else "the customer"
        self.stdout.write(f"{session.id} · {subject.name} · for {who} · expires {session.expires_at:%Y-%m-%d %H:%MZ}")

    def _contacts(self, o):
        subject = self.subject(o["subject_id"])
        action = o["contacts_action"]
        if action == "list":
            for c in subject.contacts.order_by(*Contact.ORDER):
                self.stdout.write(contact_line(c))
            return
        if action == "remove":
            contact = contact_get(subject=subject, contact_id=o["contact_id"])
            self._writable(subject)
            contact_remove(contact=contact)
            self.stdout.write(f"{contact.name} is no longer a contact of {subject.name}")
            return
        values = {k: o[k] for k in ("name", "email", "role", "phone", "zone") if o[k] is not None}
        if o["primary"]:
            values["primary"] = True
        self._writable(subject)
        if action == "add":
            contact = contact_create(subject=subject, values=values, now=domain_now(domain=subject.domain))
        else:
            contact = contact_update(contact=contact_get(subject=subject, contact_id=o["contact_id"]), values=values)
        self.stdout.write(contact_line(contact))

    @staticmethod
    def _writable(subject: Subject) -> None:
        domain_writable(domain=brand_domain(subject.domain, subject.brand_id))

    def subject(self, subject_id: str) -> Subject:
        subject = Subject.objects.select_related("calendar").filter(pk=subject_id).first()
        if subject is None:
            raise CommandError(f"resource_missing: no subject {subject_id!r}")
        return subject

    def _calendar(self, o):
        subject = self.subject(o["subject_id"])
        clock = self.test_clock(o["test_clock"])
        domain = clock.id if clock else brand_domain(subject.domain, subject.brand_id)
        if clock and not is_live(subject.domain) and subject.domain != clock.id:
            raise CommandError(f"invalid_request: subject {subject.id} lives on test clock {subject.domain}, "
                               f"not {clock.id}")
        sc = subject_calendar(subject, domain=domain, from_date=parse_from(o["from_date"], param="--from"))
        n = len(sc.entries)
        self.stdout.write(" · ".join([
            subject.id, f"{subject.kind} {subject.key}", subject.name, sc.zone,
            f"{n} date" if n == 1 else f"{n} dates", f"webcal at {feed.feed_path(subject)}",
        ]))
        rows = [COLUMNS]
        for e in sc.entries:
            rows.append((e.date.isoformat(), e.what, e.kind, e.answers_for, e.status))
            if o["rungs"]:
                rows += [(f"  {r.date.isoformat()}", r.what, r.kind, r.answers_for, r.status) for r in e.rungs]
        for line in table(rows):
            self.stdout.write(line)

    def _timeline(self, o):
        subject = self.subject(o["subject_id"])
        clock = self.test_clock(o["test_clock"])
        domain = clock.id if clock else brand_domain(subject.domain, subject.brand_id)
        if clock and not is_live(subject.domain) and subject.domain != clock.id:
            raise CommandError(f"invalid_request: subject {subject.id} lives on test clock {subject.domain}, "
                               f"not {clock.id}")
        if o["limit"] is not None and o["limit"] < 1:
            raise CommandError(f"invalid_request: --limit is a whole number of entries, at least 1, not {o['limit']}")
        tl = subject_timeline(subject=subject, domain=domain, zone=zone_named(o["zone"]) if o["zone"] else None)
        past = [e for e in tl.entries if e.kind != ARMED]
        ahead = [e for e in tl.entries if e.kind == ARMED]
        shown = past[-o["limit"]:] if o["limit"] else past
        self.stdout.write(" · ".join([subject.id, subject.name, tl.zone.key, f"{len(past)} happened",
                                      f"{len(ahead)} ahead"] + ([f"the last {len(shown)} shown"]
                                                                 if len(shown) < len(past) else [])))
        for e in shown + ahead:
            self.stdout.write(f"{e.line()} · {e.id}")

    def _feed(self, o):
        subject = self.subject(o["subject_id"])
        if o["revoke"]:
            subject_feed_revoke(subject=subject)
            self.stdout.write(f"{subject.id} · feed revoked · {feed.feed_path(subject)} answers 404 until "
                              "subjects feed --rotate")
            return
        if subject.feed_digest and not o["rotate"]:
            # Only the token's sha256 is stored: the URL cannot be shown again, only replaced.
            self.stdout.write(f"{subject.id} · feed active at {feed.feed_path(subject)} · the token is shown only "
                              "when issued; subjects feed --rotate issues a new one (the old URL stops working)")
            return
        token = subject_feed_rotate(subject=subject)
        self.stdout.write(feed.webcal_url(subject, token))
