"""subjects calendar sbj_… [--from 2027-02-01] [--test-clock tc_…] [--rungs] · subjects feed sbj_… [--rotate|--revoke]
· subjects portal sbj_… (a customer portal link, valid for an hour)"""

from __future__ import annotations

from django.conf import settings
from django.core.management.base import CommandError

from calendars import feed
from calendars.api import parse_from
from calendars.entries import subject_calendar
from calendars.models import Subject
from calendars.services import subject_feed_revoke, subject_feed_rotate
from timers.management.base import KTCommand
from timers.models import brand_domain, is_live

COLUMNS = ("date", "what", "kind", "answers for", "status")


def table(rows: list[tuple[str, ...]]) -> list[str]:
    """Columns padded to their widest cell, two spaces apart; the last one free."""
    widths = [max(len(r[i]) for r in rows) for i in range(len(COLUMNS) - 1)]
    return ["  ".join([c.ljust(w) for c, w in zip(r, widths, strict=False)] + [r[-1]]).rstrip() for r in rows]


class Command(KTCommand):
    help = "A subject's calendar, and the webcal feed that publishes it."

    def add_arguments(self, parser):
        sub = parser.add_subparsers(dest="action", required=True)
        cal = sub.add_parser("calendar", help="every date the subject keeps, from a date")
        cal.add_argument("subject_id")
        cal.add_argument("--from", dest="from_date", help="YYYY-MM-DD (default: today in the calendar's zone)")
        cal.add_argument("--test-clock")
        cal.add_argument("--rungs", action="store_true", help="list each date's rungs (reminders, steps) under it")
        fd = sub.add_parser("feed", help="the subject's webcal URL")
        fd.add_argument("subject_id")
        which = fd.add_mutually_exclusive_group()
        which.add_argument("--rotate", action="store_true", help="issue a new token; the old URL stops working")
        which.add_argument("--revoke", action="store_true", help="no URL works until the next --rotate")
        pt = sub.add_parser("portal", help="a customer portal link for the subject, valid for an hour")
        pt.add_argument("subject_id")

    def handle(self, *args, **o):
        getattr(self, f"_{o['action']}")(o)

    def _portal(self, o):
        from services.portal_sessions import portal_session_create

        subject = self.subject(o["subject_id"])
        session, path = portal_session_create(brand=subject.brand, subject=subject)
        self.stdout.write(f"http://{settings.KEEPING_TIME['FEED_HOST']}{path}")
        self.stdout.write(f"{session.id} · {subject.name} · expires {session.expires_at:%Y-%m-%d %H:%MZ}")

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
