"""A timeline, drawn for a page: what happened (the record, read by ``services.timeline``) and what happens next,
as a list, above it a server-side SVG strip with the past and the dates ahead on one time axis and today marked.

Shared by the owner console's History (a customer, a date), the customer portal's per-date history and the
delivery portal's. Every word comes from the timeline's sentences (``calendars.words``): no id, no runtime word.
``now`` is the clock domain's own (``timers.domains.domain_now``: a test clock's frozen time), never the wall's.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from zoneinfo import ZoneInfo

from django.utils.html import format_html, format_html_join
from django.utils.safestring import SafeString

from calendars.words import day, local
from services.timeline import ARMED, SENT, Entry, Timeline

# What a send's status says beside it (the sentence says the rest).
STATUS_WORDS = {"waiting": "waiting", "sending": "sending", "sent": "sent", "answered": "received",
                "in_doubt": "in doubt", "failed": "failed", "dead_lettered": "given up", "voided": "not sent"}
WINDOW = timedelta(days=400)  # how far the strip reaches either side of today
# A row's small label: what kind of thing happened, in people's words.
KIND_WORDS = {"fired": "happened", "moved": "moved", "reminded": "reminded", "acted": "done by a person",
              "sent": "sent", "armed": "next"}


@dataclass
class History:
    """A page's history: the strip, what happened (newest last, as the record has it) and what happens next."""

    title: str
    zone: ZoneInfo
    past: list[Entry]
    ahead: list[Entry]
    strip: SafeString
    now: str

    @property
    def zone_name(self) -> str:
        return self.zone.key


def history(timeline: Timeline, *, now: datetime) -> History:
    """The page's view of ``timeline`` as of the clock domain's ``now``."""
    past = [e for e in timeline.entries if e.kind != ARMED]
    ahead = [e for e in timeline.entries if e.kind == ARMED]
    return History(title=timeline.title, zone=timeline.zone, past=past, ahead=ahead,
                   strip=strip(timeline, now=now), now=local(now, timeline.zone))


BRANDS_OWN_SENDS = ("webhook", "http")  # the brand's own systems' calls: not the customer's to read


def for_customer(timeline: Timeline, *, you: str = "", address: str = "") -> Timeline:
    """What a customer reads of a date's timeline: everything but the calls to the brand's own systems (its
    webhook endpoints, a schedule's HTTP target), the brand's emails as "we" ("We emailed you on Wed 19 Jan
    2028: sent."), and the reader (``you``: the contact the link was for, ``address`` their email) named as
    "you" ("Olive Owner reminded you (Ada Lovelace) of …", "A notice for you (Ada Lovelace) was sent")."""
    entries = [e for e in timeline.entries if not (e.kind == SENT and e.type in BRANDS_OWN_SENDS)]
    entries = [replace(e, sentence=_we_emailed(e, address)) if e.kind == SENT and e.type == "email" else e
               for e in entries]
    if you:
        entries = [replace(e, sentence=_as_you(e.sentence, you)) for e in entries]
    return Timeline(title=timeline.title, zone=timeline.zone, entries=entries)


def _we_emailed(entry: Entry, address: str) -> str:
    """The brand's email as its customer hears it: "Emailed ada@…: sent." → "We emailed you on Wed 12 Apr 2028:
    sent." (the reader's own address is "you"; a colleague's stays their address)."""
    said = entry.sentence
    if not said.startswith("Emailed "):
        return said
    head, sep, rest = said[len("Emailed "):].partition(":")
    to, tried, attempt = head.partition(" (try ")
    names = [("you" if address and a.strip().lower() == address.lower() else a.strip()) for a in to.split(",")]
    on = f" on {day(entry.at.astimezone(entry.zone).date())}" if entry.at is not None else ""
    return f"We emailed {', '.join(names)}{on}{tried}{attempt}{sep}{rest}"


def _as_you(sentence: str, name: str) -> str:
    said = sentence.replace(f"{name}'s to ", "yours to ").replace(f"{name}'s ", "your ")
    said = re.sub(rf"(?<![\w@.]){re.escape(name)}(?![\w@])", f"you ({name})", said)
    return said[:1].upper() + said[1:] if said.startswith("you") else said


def _pct(at: datetime, start: datetime, span: float) -> float:
    return round(4 + 92 * ((at - start).total_seconds() / span), 2) if span else 50.0


def strip(timeline: Timeline, *, now: datetime) -> SafeString:
    """The strip: one axis from the first thing that happened to the last date ahead (today always on it), a
    filled dot for each thing that happened, a ring for each date ahead, a line for today. Sized in percent,
    so it fits a phone without scaling its words; its title and description say what it shows in words."""
    zone = timeline.zone
    dated = [e for e in timeline.entries if e.at is not None and e.kind != SENT]  # a send sits on its event's dot
    past = [e for e in dated if e.kind != ARMED]
    ahead = [e for e in dated if e.kind == ARMED]
    times = [e.at for e in dated if e.at is not None] + [now]
    # Thirteen months either side of today at most: a date twenty years out would squeeze the rest to a dot.
    start, end = max(min(times), now - WINDOW), min(max(times), now + WINDOW)
    earlier = [e for e in past if e.at is not None and e.at < start]
    past = [e for e in past if e.at is not None and e.at >= start]
    beyond = [e for e in ahead if e.at is not None and e.at > end]
    ahead = [e for e in ahead if e.at is not None and e.at <= end]
    span = (end - start).total_seconds()
    today = _pct(now, start, span)
    ahead_words = (f"{len(ahead)} thing{'s' if len(ahead) != 1 else ''} ahead, the next on "
                   f"{local(min(e.at for e in ahead if e.at), zone)}" if ahead else "nothing ahead")
    said = (f"{len(past)} thing{'s' if len(past) != 1 else ''} happened"
            + (f" from {local(min(e.at for e in past if e.at), zone)}" if past else "")
            + f"; {ahead_words}; today is {local(now, zone)} ({zone.key})."
            + (f" {len(beyond)} more later, the last on {local(max(e.at for e in beyond if e.at), zone)}: "
               "listed below." if beyond else "")
            + (f" {len(earlier)} earlier, listed below." if earlier else ""))
    dots = format_html_join("", '<circle cx="{}%" cy="30" r="5" class="kt-past"><title>{}: {}</title></circle>',
                            ((_pct(e.at, start, span), e.when, e.sentence) for e in past if e.at is not None))
    rings = format_html_join("", '<circle cx="{}%" cy="30" r="6" class="kt-ahead"><title>{}: {}</title></circle>',
                             ((_pct(e.at, start, span), e.when, e.sentence) for e in ahead if e.at is not None))
    anchor = "start" if today < 20 else "end" if today > 80 else "middle"
    return format_html(
        '<svg class="kt-strip" width="100%" height="64" role="img" aria-labelledby="kt-strip-title kt-strip-desc" '
        'data-testid="history-strip">'
        '<title id="kt-strip-title">{title}: what happened and what is ahead, on one time line</title>'
        '<desc id="kt-strip-desc">{said}</desc>'
        '<line x1="4%" x2="96%" y1="30" y2="30" class="kt-axis"/>'
        '{dots}{rings}'
        '<line x1="{today}%" x2="{today}%" y1="16" y2="44" class="kt-today"/>'
        '<text x="{today}%" y="12" text-anchor="{anchor}" class="kt-today-label">today</text>'
        '<text x="4%" y="60" class="kt-end">{first}</text>'
        '<text x="96%" y="60" text-anchor="end" class="kt-end">{last}</text>'
        '</svg>',
        title=timeline.title, said=said, dots=dots, rings=rings, today=today, anchor=anchor,
        first=start.astimezone(zone).strftime("%b %Y"), last=end.astimezone(zone).strftime("%b %Y"))
