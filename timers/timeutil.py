"""Pure time helpers: spans (``6h``, ``7d``, ``1mo``, ``1y``), instant parsing, and UTC printing with Z."""

from __future__ import annotations

import functools
import re
from datetime import UTC, date, datetime, timedelta, tzinfo
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError, available_timezones

from dateutil.relativedelta import relativedelta

from .errors import InvalidSpan, KeepingTimeError

_SPAN_RE = re.compile(r"\s*([0-9]{1,9})\s*(s|m|min|h|d|w|mo|y)\s*")
# What parse_span takes, for a schema: _SPAN_RE with a count of at least 1.
SPAN_PATTERN = r"^\s*(?=[0-9]{1,9}\s*[a-z])0*[1-9][0-9]*\s*(s|m|min|h|d|w|mo|y)\s*$"
# An instant as the API and the CLI document it (RFC 3339): a date, T, hours and minutes, optional seconds and
# fraction, and Z or a numeric offset. fromisoformat alone also takes week dates (2027-W05-3), ordinal dates,
# basic forms (20270101T0000Z) and, in 3.11, trailing garbage such as NUL; none of those is documented.
_INSTANT_RE = re.compile(
    r"(?P<date>[0-9]{4}-[0-9]{2}-[0-9]{2})[Tt](?P<hm>[0-9]{2}:[0-9]{2})(?:(?P<s>:[0-9]{2})(?:\.(?P<frac>[0-9]{1,9}))?)?"
    r"(?P<zone>[Zz]|[+-][0-9]{2}:[0-9]{2})"
)


def parse_span(text: str) -> relativedelta:
    """A span as the CLI writes it. Months and years are calendar months and years (UTC)."""
    m = _SPAN_RE.fullmatch(text or "")
    if not m:
        raise InvalidSpan(f"span {text!r} is not a number (at most 9 digits) and a unit: s, m, h, d, w, mo or y "
                          "(e.g. 6h, 7d, 1mo, 1y)")
    n, unit = int(m[1]), m[2]
    if n <= 0:
        raise InvalidSpan(f"span {text!r} must be positive")
    return {
        "s": relativedelta(seconds=n),
        "m": relativedelta(minutes=n),
        "min": relativedelta(minutes=n),
        "h": relativedelta(hours=n),
        "d": relativedelta(days=n),
        "w": relativedelta(weeks=n),
        "mo": relativedelta(months=n),
        "y": relativedelta(years=n),
    }[unit]


def after_span(start: datetime, span: relativedelta, *, text: str = "") -> datetime:
    """``start`` plus ``span``, or InvalidSpan when that is past the last instant a clock can stand at
    (9999-12-31), rather than the OverflowError or ValueError the arithmetic raises."""
    try:
        return start + span
    except (OverflowError, ValueError):
        raise InvalidSpan(f"span {text or span!r} from {iso_z(start)} lands past 9999-12-31, the last date a clock "
                          "can reach") from None


def three_quarters(start: datetime, end: datetime) -> datetime:
    """Three quarters of the way from ``start`` to ``end`` (a deadline's at-risk point, a hold's warning), in
    whole seconds, and never after ``end``: a job opened after its own deadline is at risk at the deadline,
    where the warning still comes before the lateness (the key's point orders them at one instant)."""
    return min(end, (start + (end - start) * 3 / 4).replace(microsecond=0))


def parse_instant(text: str) -> datetime:
    """An RFC 3339 instant with an explicit zone (``Z`` or an offset), e.g. 2026-12-01T09:00Z; seconds and a
    fraction are optional. A naive time, a bare date, a week date or anything around it is refused."""
    raw = text if isinstance(text, str) else ""
    if not raw.strip():
        raise KeepingTimeError("an instant is required, e.g. 2026-12-01T09:00Z", code="invalid_time")
    m = _INSTANT_RE.fullmatch(raw)
    if not m:
        naive = re.fullmatch(r"[0-9]{4}-[0-9]{2}-[0-9]{2}(?:[Tt ][0-9:.]+)?", raw)
        hint = " (it has no zone; write Z or an offset)" if naive else ""
        raise KeepingTimeError(
            f"{raw!r} is not an RFC 3339 instant{hint}, e.g. 2026-12-01T09:00Z or 2026-12-01T04:00-05:00",
            code="invalid_time",
        )
    zone = m["zone"].upper()
    # fromisoformat takes at most 6 fraction digits; nanoseconds are below what a timer keeps.
    frac = f".{(m['frac'] or '')[:6].ljust(6, '0')}" if m["frac"] else ""
    candidate = f"{m['date']}T{m['hm']}{m['s'] or ''}{frac}{'+00:00' if zone == 'Z' else zone}"
    try:
        value = datetime.fromisoformat(candidate).astimezone(UTC)  # an instant that overflows in UTC is no instant
    except (ValueError, OverflowError):
        raise KeepingTimeError(
            f"{raw!r} is not an instant: a day or time out of range, or before 0001 or after 9999 in UTC",
            code="invalid_time",
        ) from None
    return value


def iso_z(value: datetime | None) -> str | None:
    """API form: 2028-01-19T14:00:00Z (milliseconds only when present)."""
    if value is None:
        return None
    value = value.astimezone(UTC)
    text = f"{value.year:04d}-{value:%m-%dT%H:%M:%S}"
    if value.microsecond:
        text += f".{value.microsecond // 1000:03d}"
    return text + "Z"


def local_text(value: datetime | None, zone: tzinfo) -> str:
    """People's form (notices, pages): 'Fri 22 Oct 2027, 07:30 PDT', in ``zone`` with its abbreviation."""
    if value is None:
        return ""
    at = value.astimezone(zone)
    return f"{at:%a} {at.day} {at:%b %Y, %H:%M} {at.tzname()}"


def day_text(value: date | None) -> str:
    """A civil date in people's form: 'Tue 18 Apr 2028'."""
    return f"{value:%a} {value.day} {value:%b %Y}" if value else ""


def trace_z(value: datetime | None, *, seconds: bool | None = None) -> str:
    """Trace form: 2028-02-01 14:00Z, or 14:02:11Z when the seconds matter."""
    if value is None:
        return "—"
    value = value.astimezone(UTC)
    if seconds is None:
        seconds = bool(value.second or value.microsecond)
    return value.strftime("%Y-%m-%d %H:%M:%SZ" if seconds else "%Y-%m-%d %H:%MZ")


def duration_text(value: timedelta | None) -> str | None:
    """late_by and remaining as the seed writes them: 3d 4h, 5m 2s, 0s."""
    if value is None:
        return None
    total = int(value.total_seconds())
    sign = "-" if total < 0 else ""
    total = abs(total)
    days, rest = divmod(total, 86400)
    hours, rest = divmod(rest, 3600)
    minutes, secs = divmod(rest, 60)
    parts = [f"{n}{u}" for n, u in ((days, "d"), (hours, "h"), (minutes, "m"), (secs, "s")) if n]
    return sign + (" ".join(parts) if parts else "0s")


def local_instant(naive: datetime, zone: ZoneInfo, *, fold: int = 0) -> datetime:
    """The UTC instant of a local wall time, by the DST rule: a skipped minute (spring forward) rings at the
    next minute that exists; a repeated one (fall back) at its first occurrence (fold 0) or second (fold 1)."""
    naive = naive.replace(tzinfo=None)
    for _ in range(24 * 60):  # DST gaps are at most an hour or two; a day of minutes is a hard bound
        instant = naive.replace(tzinfo=zone, fold=fold).astimezone(UTC)
        if instant.astimezone(zone).replace(tzinfo=None) == naive:
            return instant
        naive = (naive + timedelta(minutes=1)).replace(second=0, microsecond=0)
    raise ValueError(f"{naive} does not exist in {zone}")


def zone_named(name: str) -> ZoneInfo:
    """An IANA zone, or 400 invalid_zone."""
    try:
        if not isinstance(name, str) or name not in zone_names():
            raise ValueError(name)
        return ZoneInfo(name)
    except (ValueError, ZoneInfoNotFoundError, OSError):
        raise KeepingTimeError(f"zone {str(name)[:80]!r} is not an IANA time zone, e.g. America/New_York or UTC",
                               code="invalid_zone") from None


# Files beside the zones that name none: this machine's own zone (whatever it is set to), the POSIX rules
# template, and tzdata's placeholder that answers "-00".
NOT_ZONES = frozenset({"localtime", "posixrules", "Factory"})


@functools.cache
def zone_names() -> frozenset[str]:
    """The IANA zones this machine knows (tzdata): what a schedule's or a calendar's zone may be, each exactly
    as IANA spells it (no "localtime", no trailing space)."""
    return frozenset(available_timezones()) - NOT_ZONES
