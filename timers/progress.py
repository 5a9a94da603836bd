"""Progress on a terminal for long CLI work (`tick <span>`, `tick … --compare`, `loadexample`), drawn by rich.

Only when the command's stdout is a terminal: piped output, files and call_command get the same bytes as
before, and no bar. While a bar shows, what the command writes is held back and written, as it would have
been, once the bar is gone (the bar is transient), so a terminal ends up showing the same lines a pipe gets.

The tick's progress comes from its existing flush callback: advance() and live_step() give their Run an
``on_flush`` that moves the test clock (``advance.flush_frozen``), which also tells the observers registered
in the caller's context (``advance.observing_flushes``), so the engine and the advance know nothing of
terminals. A bar therefore moves once per batch
(KT_ADVANCE_BATCH_SIZE timers on a test clock, KT_BATCH_SIZE live) or per advance, whichever comes first.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from datetime import datetime
from io import StringIO
from typing import Any

from django.core.management.base import BaseCommand, OutputWrapper
from rich.console import Console
from rich.progress import (
    BarColumn,
    Progress,
    SpinnerColumn,
    TaskProgressColumn,
    TextColumn,
    TimeElapsedColumn,
)

from .advance import observing_flushes
from .timeutil import trace_z


def is_terminal(command: BaseCommand) -> bool:
    out = command.stdout
    try:
        return bool(out.isatty())  # OutputWrapper passes isatty to the stream it wraps
    except (AttributeError, ValueError):  # a stream without isatty, or a closed one
        return False


class Bar:
    """One task's bar and its line of text; on a pipe every method does nothing."""

    def __init__(self, progress: Progress | None = None, description: str = "", total: float | None = None):
        self._progress = progress
        # None exactly when the progress is: each is asked after only with the other.
        self._task = progress.add_task(description, total=total, at="") if progress is not None else None

    def step(self, description: str) -> None:
        """Say what the command is doing now (loadexample's steps)."""
        if self._progress is not None and self._task is not None:
            self._progress.update(self._task, description=description)

    def update(self, *, completed: float, at: str = "", description: str | None = None,
               total: float | None = None) -> None:
        if self._progress is not None and self._task is not None:
            fields: dict[str, Any] = {} if description is None else {"description": description}
            if total is not None:
                fields["total"] = total
            # Drawn now, not at the next refresh: a batch lands far less often than the bar redraws, and the
            # frame shows what has been written, never a guess.
            self._progress.update(self._task, completed=completed, at=at, refresh=True, **fields)

    @property
    def shown(self) -> bool:
        return self._progress is not None


@contextlib.contextmanager
def terminal_bar(command: BaseCommand, description: str, *, total: float | None = None) -> Iterator[Bar]:
    """A transient bar on the command's terminal; on anything else a Bar that does nothing."""
    if not is_terminal(command):
        yield Bar()
        return
    real = command.stdout
    held = StringIO()
    # soft_wrap: rich never folds a line itself; the terminal does, as it would without a bar.
    # The stubs leave out OutputWrapper._out (the stream it wraps), typing it as its __getattr__'s answer.
    console = Console(file=real._out, force_terminal=True, soft_wrap=True)  # type: ignore[arg-type]
    columns = [SpinnerColumn(), TextColumn("{task.description}")]
    if total is not None:
        columns += [BarColumn(), TaskProgressColumn()]
    columns += [TextColumn("{task.fields[at]}"), TimeElapsedColumn()]
    progress = Progress(*columns, console=console, transient=True, redirect_stdout=False, redirect_stderr=False)
    command.stdout = OutputWrapper(held)
    try:
        with progress:
            yield Bar(progress, description, total)
    finally:
        command.stdout = real
        text = held.getvalue()
        if text:
            real.write(text, ending="")
            real.flush()


def on_flushes(report: Callable[[str, datetime], None]) -> contextlib.AbstractContextManager[None]:
    """Call ``report(domain, at)`` after each flush of a test clock's run in this thread, for the duration
    (``advance.observing_flushes``: the engine and the advance know nothing of terminals)."""
    return observing_flushes(report)


class TickBar:
    """A tick's span as a bar: the clock's frozen time from ``start`` to ``to``, over ``ways`` runs of it."""

    def __init__(self, bar: Bar, clock_id: str, start: datetime, to: datetime):
        self.bar = bar
        self.clock_id = clock_id
        self.start = start
        self.span = max(1.0, (to - start).total_seconds())
        self.way = 0
        self.label = ""

    def begin_way(self, index: int, count: int, label: str) -> None:
        """compare()'s on_way: each way runs the whole span again, so the bar's total is the ways' sum."""
        self.way = index
        # The way's label is printed after the bar is gone: the bar says only which way it is on.
        self.bar.update(completed=index * self.span, at="", description=f"{self.clock_id} way {index + 1} of {count}",
                        total=count * self.span)

    def flushed(self, clock_id: str, at: datetime) -> None:
        if clock_id != self.clock_id:
            return
        done = min(self.span, max(0.0, (at - self.start).total_seconds()))
        self.bar.update(completed=self.way * self.span + done, at=trace_z(at))


@contextlib.contextmanager
def tick_bar(command: BaseCommand, clock_id: str, start: datetime, to: datetime) -> Iterator[TickBar]:
    """``tick <span>`` on a terminal; with ``--compare`` hand ``TickBar.begin_way`` to compare() as on_way."""
    with terminal_bar(command, f"{clock_id} → {trace_z(to)}", total=max(1.0, (to - start).total_seconds())) as bar:
        tick = TickBar(bar, clock_id, start, to)
        if not bar.shown:
            yield tick
            return
        with on_flushes(tick.flushed):
            yield tick
