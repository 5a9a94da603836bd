"""What the CLI prints: the tick's trace and the timers list, as the seeds lay them out (UTC, with Z)."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime

from .engine import RunStats, TraceRow
from .models import Timer
from .timeutil import duration_text, trace_z


def span_text(start: datetime | None, to: datetime, *, seconds: bool = False) -> str:
    """``2026-11-24 09:00Z → 2026-12-01 09:00Z``; with seconds when they matter (``seconds``: the rows under it
    print theirs, so the header does too, as the seed's week: ``09:00:00Z → …``)."""
    if start is None:
        return f"→ {trace_z(to, seconds=seconds or None)}"
    seconds = seconds or bool(start.second or start.microsecond or to.second or to.microsecond)
    left = trace_z(start, seconds=seconds)
    right = trace_z(to, seconds=seconds)
    if start.date() == to.date():
        right = right.split(" ", 1)[1]
    return f"{left} → {right}"


def _has_seconds(rows: Iterable[TraceRow]) -> bool:
    return any(bool(t and (t.second or t.microsecond)) for r in rows
               for t in (r.owed_at, r.fired_at, *(c.owed_at for c in r.children)))


def header(label: str, stats: RunStats) -> str:
    """The seed's header (``tc_… · 2026-11-24 09:00:00Z → 2026-12-01 09:00:00Z · UTC · 10 fired · 0 held ·
    each instant in place order``), then our extra counts: armed, passes, and what else happened."""
    parts = [
        label,
        span_text(stats.start, stats.to, seconds=_has_seconds(stats.trace)),
        "UTC",
        f"{stats.fired} fired",
        f"{stats.held} held",
        "each instant in place order",
        f"{stats.armed} armed",
        f"{stats.passes} pass" if stats.passes == 1 else f"{stats.passes} passes",
    ]
    if stats.superseded:
        parts.append(f"{stats.superseded} superseded")
    if stats.refused:
        parts.append(f"{stats.refused} refused")
    if stats.failed:
        parts.append(f"{stats.failed} failed, held for the owner console")
    if stats.replayed:
        parts.append(f"{stats.replayed} replayed: true")
    if stats.runaways:
        parts.append(f"{stats.runaways} tick.runaway")
    return " · ".join(parts)


def _row(cells: Iterable[str]) -> str:
    widths = (8, 21, 21, 6, 9, 16)
    cells = list(cells)
    out = [c.ljust(w) for c, w in zip(cells, widths, strict=False)]
    return " ".join(out + cells[len(widths):]).rstrip()


def trace_lines(stats: RunStats) -> list[str]:
    lines = [_row(["pass", "owed", "fired", "place", "kind", "on", "what"])]

    def emit(row: TraceRow, indent: str = "") -> None:
        if row.kind in ("fired", "refused", "failed", "runaway"):
            label = str(row.pass_no) if row.kind == "fired" else f"{row.pass_no} {row.kind}"
            lines.append(indent + _row([label, trace_z(row.owed_at), trace_z(row.fired_at), str(row.place),
                                        row.timer_kind, row.owner, row.what]))
        else:
            lines.append(indent + _row([f"{row.kind} {row.pass_no}", trace_z(row.owed_at), "", str(row.place),
                                        row.timer_kind, row.owner, row.what]))
        for child in row.children:
            emit(child, indent + "  ")

    for row in stats.trace:
        emit(row)
    return lines


def timer_rows(timers: list[Timer]) -> list[str]:
    widths = (18, 11, 21, 21, 6)
    lines = [" ".join(h.ljust(w) for h, w in zip(("id", "status", "owed", "fired", "place"), widths, strict=True))
             + " key"]
    for t in timers:
        owed = trace_z(t.owed_at) if t.owed_at else (f"held, {duration_text(t.remaining)} left"
                                                      if t.status == "held" else "—")
        fired = trace_z(t.fired_at) if t.fired_at else "—"
        cells = (t.id, t.status, owed, fired, str(t.place))
        lines.append(" ".join(c.ljust(w) for c, w in zip(cells, widths, strict=True)) + " " + t.key)
    return lines
