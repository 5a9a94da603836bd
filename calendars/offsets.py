"""Offsets and rungs as Service files write them, pure: '30d', '5d before file', '1mo after end',
'notice 90d', 'ack daily 7d', 'run tentative 3d'."""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import date

from dateutil.relativedelta import relativedelta

_SPAN = re.compile(r"^(\d+)(d|w|mo|y)$")
_UNITS = {"d": "days", "w": "weeks", "mo": "months", "y": "years"}


class OffsetError(ValueError):
    """A malformed offset or rung; the message says what is wrong (the loader adds file and field)."""


def parse_span(text: str) -> relativedelta:
    m = _SPAN.match(text.strip())
    if not m:
        raise OffsetError(f"{text!r} is not a span: a whole number and d, w, mo or y (30d, 2w, 1mo, 1y)")
    n = int(m[1])
    if n == 0:
        raise OffsetError(f"{text!r} is zero; a span is at least 1")
    # The stubs type a keyword unpacked from a dict as the first positional (a date), whatever its name.
    return relativedelta(**{_UNITS[m[2]]: n})  # type: ignore[arg-type]


@dataclass(frozen=True)
class Offset:
    """``<span> before|after <anchor>``, or a bare span (after the anchor the caller names)."""

    text: str
    span: relativedelta
    direction: int  # -1 before, +1 after
    anchor: str | None

    def apply(self, d: date) -> date:
        return d + self.span if self.direction > 0 else d - self.span


def parse_offset(text: str, *, anchors: tuple[str, ...] | None = None) -> Offset:
    words = text.strip().split()
    if len(words) == 1:
        return Offset(text, parse_span(words[0]), +1, None)
    if len(words) == 3 and words[1] in ("before", "after"):
        anchor = words[2]
        if anchors is not None and anchor not in anchors:
            raise OffsetError(f"{text!r} names {anchor!r}; known here: {', '.join(anchors) or 'none'}")
        return Offset(text, parse_span(words[0]), -1 if words[1] == "before" else +1, anchor)
    raise OffsetError(f"{text!r} is not an offset: write '30d', '5d before file' or '1mo after end'")


RUNG_KINDS = ("notice", "escalate", "ack", "run")


@dataclass(frozen=True)
class Rung:
    """A step before a clock's date: notice, escalate, ack daily, or run <step>."""

    text: str
    kind: str
    span: relativedelta
    step: str | None = None

    @property
    def moves_with_clock(self) -> bool:
        # A run rung keeps its key when the clock moves, so a move can never arm a second run.
        return self.kind != "run"

    def day(self, due: date) -> date:
        return due - self.span


def parse_rung(text: str) -> Rung:
    try:
        return _parse_rung(text)
    except OffsetError as exc:
        if str(exc).startswith(repr(text)):
            raise
        raise OffsetError(f"{text!r}: {exc}") from None


def _parse_rung(text: str) -> Rung:
    words = text.strip().split()
    if len(words) == 2 and words[0] in ("notice", "escalate"):
        return Rung(text, words[0], parse_span(words[1]))
    if len(words) == 3 and words[0] == "ack" and words[1] == "daily":
        return Rung(text, "ack", parse_span(words[2]))
    if len(words) == 3 and words[0] == "run":
        return Rung(text, "run", parse_span(words[2]), step=words[1])
    raise OffsetError(
        f"{text!r} is not a rung: write 'notice 90d', 'escalate 7d', 'ack daily 7d' or 'run <step> 3d'"
    )
