"""Pure time helpers: spans (``6h``, ``7d``, ``1mo``, ``1y``), instant parsing, and UTC printing with Z."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

from dateutil.relativedelta import relativedelta

from .errors import InvalidSpan, KeepingTimeError

_SPAN_RE = re.compile(r"^\s*(\d+)\s*(s|m|min|h|d|w|mo|y)\s*$")


def parse_span(text: str) -> relativedelta:
    """A span as the CLI writes it. Months and years are calendar months and years (UTC)."""
    m = _SPAN_RE.match(text or "")
    if not m:
        raise InvalidSpan(f"span {text!r} is not a number and a unit: s, m, h, d, w, mo or y (e.g. 6h, 7d, 1mo, 1y)")
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


def parse_instant(text: str) -> datetime:
    """An ISO 8601 instant with an explicit zone (``Z`` or an offset); a naive time is refused."""
    raw = (text or "").strip()
    if not raw:
        raise KeepingTimeError("an instant is required, e.g. 2026-12-01T09:00Z", code="invalid_time")
    candidate = raw[:-1] + "+00:00" if raw.endswith(("Z", "z")) else raw
    try:
        value = datetime.fromisoformat(candidate)
        if value.tzinfo is not None:
            value.astimezone(UTC)  # an instant that overflows once in UTC is no instant
    except (ValueError, OverflowError):
        raise KeepingTimeError(
            f"{raw!r} is not an ISO 8601 instant, e.g. 2026-12-01T09:00Z", code="invalid_time"
        ) from None
    if value.tzinfo is None:
        raise KeepingTimeError(
            f"{raw!r} has no zone; write Z or an offset, e.g. 2026-12-01T09:00Z", code="invalid_time"
        )
    return value.astimezone(UTC)


def iso_z(value: datetime | None) -> str | None:
    """API form: 2028-01-19T14:00:00Z (milliseconds only when present)."""
    if value is None:
        return None
    value = value.astimezone(UTC)
    text = f"{value.year:04d}-{value:%m-%dT%H:%M:%S}"
    if value.microsecond:
        text += f".{value.microsecond // 1000:03d}"
    return text + "Z"


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
