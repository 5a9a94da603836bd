"""tick: fire what is owed.

  tick                                   the live clock to now, then requested test-clock advances
  tick --forever                         loop, sleeping until the next owed timer; SIGTERM stops it
  tick 1y --test-clock tc_…              advance a test clock by a span (6h, 7d, 1mo, 1y)
  tick --to 2028-02-01T20:00Z --test-clock tc_… --trace [--on sbn_…,job_…]
  tick 1y --compare [--redeliver] --test-clock tc_…
"""

from __future__ import annotations

import signal
from datetime import datetime
from types import FrameType
from typing import Any

from django.core.management.base import CommandError, CommandParser
from django.db.models import Max, Q

from timers import cli, progress
from timers.advance import advance, run_requested_advances
from timers.clock import WallClock
from timers.compare import compare
from timers.engine import RunStats
from timers.live import live_step
from timers.models import LIVE, Event, Outbox, TestClock, Timer, in_domain
from timers.signals import worker_starting
from timers.sql import sessions
from timers.timeutil import after_span, parse_instant, parse_span
from timers.worker import Worker

from ..base import KTCommand


class Command(KTCommand):
    help = "Fire every owed timer, in the tick's order, on the live clock or a test clock."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("span", nargs="?", help="advance a test clock by a span: 6h, 7d, 1mo, 1y")
        parser.add_argument("--to", help="advance a test clock to this instant (ISO 8601 with Z)")
        parser.add_argument("--test-clock", help="the test clock tc_… to advance")
        parser.add_argument("--trace", action="store_true", help="print each pass: what fired and what it armed")
        parser.add_argument("--on", help="trace only these owners (comma-separated ids)")
        parser.add_argument("--compare", action="store_true", help="run the span every way and hash each record")
        parser.add_argument("--redeliver", action="store_true", help="deliver every wake twice")
        parser.add_argument("--forever", action="store_true", help="keep ticking the live clock until SIGTERM")

    def handle(self, *args: Any, **o: Any) -> None:
        clock = self.test_clock(o["test_clock"])
        if o["span"] and o["to"]:
            raise CommandError("invalid_request: give a span or --to, not both")
        if clock is None:
            if o["span"] or o["to"] or o["compare"]:
                raise CommandError(
                    "test_clock_required: the live clock moves with the wall; name a test clock with --test-clock tc_…"
                )
            return self._live(o)
        if o["span"]:
            to = after_span(clock.frozen_time, parse_span(o["span"]), text=o["span"])
        elif o["to"]:
            to = parse_instant(o["to"])
        else:
            raise CommandError("invalid_request: say how far: a span (1y) or --to <instant>")
        if o["compare"]:
            return self._compare(clock, to, o["redeliver"], o["span"])
        on = {x.strip() for x in o["on"].split(",") if x.strip()} if o["on"] else None
        seen = _last_event()
        with progress.tick_bar(self, clock.id, clock.frozen_time, to):  # on a terminal only
            stats = advance(clock.id, to, redeliver=o["redeliver"], trace=o["trace"], on=on)
        self.stdout.write(cli.header(clock.id, stats))
        if o["trace"]:
            for line in cli.trace_lines(stats):
                self.stdout.write(line)
        self._sends(clock.id, stats)
        self._failed(in_domain(clock.id), stats, seen)

    def _failed(self, where: Q, stats: RunStats, seen: int) -> None:
        """A run that pushed a timer out ends with FAILED_STATUS and one line naming it and its error."""
        if not stats.failed:
            return
        failed = list(Event.objects.filter(where, type="timer.failed", seq__gt=seen).order_by("seq")
                      .values_list("domain", "key", "data"))
        if not failed:
            return
        domain, key, data = failed[0]
        timer = Timer.objects.filter(domain=domain, key=key).values_list("id", flat=True).first() or key
        more = f" (and {len(failed) - 1} more)" if len(failed) > 1 else ""
        raise CommandError(f"timer_failed: {timer} {key} failed: {(data or {}).get('error', '')}{more}; held for the "
                           f"owner console (timers retry {timer})", returncode=FAILED_STATUS)

    def _sends(self, domain: str, stats: RunStats) -> None:
        # Every owed send was made before the tick returned, unless the far end failed it or left it in doubt.
        s = stats.sends
        if s is not None and (s.in_doubt or s.failed):
            reasons = sorted(set(Outbox.objects.filter(in_domain(domain), status__in=["sending", "failed"])
                                 .exclude(error="").values_list("error", flat=True)[:20]))
            self.stderr.write(f"sends: {s.sent + s.confirmed} made, {s.in_doubt} in doubt (retried after asking the "
                              f"far end), {s.failed} failed: {'; '.join(reasons)[:300]}")

    def _compare(self, clock: TestClock, to: datetime, redeliver: bool, span: str | None) -> None:
        with progress.tick_bar(self, clock.id, clock.frozen_time, to) as bar:  # on a terminal only
            ways = compare(clock.id, to, redeliver=redeliver, span_label=span, on_way=bar.begin_way)
        self.stdout.write(
            f"# {clock.id}, {cli.span_text(clock.frozen_time, to)} UTC, run {len(ways)} ways: the hash is over each "
            "event's type, subject, owed time, key and data, in order"
        )
        width = max(len(w.label) for w in ways)
        for w in ways:
            line = f"{w.label.ljust(width)}  {w.events} events · sha256:{w.sha256[:16]}…"
            if w.replayed is not None:
                line += f" · {w.replayed} replayed: true · {w.sent_twice} submissions sent twice"
            self.stdout.write(line)
        hashes = {w.sha256 for w in ways}
        if len(hashes) != 1:
            raise CommandError("compare_mismatch: the ways disagree; the record depends on how time was driven")
        self.stdout.write(f"all {len(ways)} agree · sha256:{ways[0].sha256}")

    def _live(self, o: dict[str, Any]) -> None:
        if o["forever"]:
            sessions.name_worker_sessions()  # kt_worker_sessions in /metrics, and pg_stat_activity, say it is up
        # The live worker starts: the domain app stores (and deploys) a working-tree bundle whose hash is new.
        worker_starting.send(sender=Command, now=WallClock().now())
        if o["forever"]:
            worker = Worker(WallClock())

            def stop(signum: int, frame: FrameType | None) -> None:
                worker.stop.set()  # checked between steps

            signal.signal(signal.SIGTERM, stop)
            signal.signal(signal.SIGINT, stop)
            self.stdout.write("ticking the live clock until SIGTERM")
            worker.run()
            self.stdout.write(f"stopped after {worker.steps} steps · {worker.fired} fired")
            return
        seen = _last_event()
        stats = live_step(WallClock(), trace=o["trace"])  # every brand's live clock, each under its lease
        self.stdout.write(cli.header("live", stats))
        if o["trace"]:
            for line in cli.trace_lines(stats):
                self.stdout.write(line)
        self._sends("live", stats)
        ran = run_requested_advances()
        if ran:
            self.stdout.write(f"{ran} requested test clock advance{'s' if ran != 1 else ''} run")
        self._failed(in_domain(LIVE), stats, seen)


# The exit status of a one-shot tick (`tick`, `tick 1y`, `tick --to`) that pushed a timer out: not 1 (a refused
# command) nor 2 (a usage error), so a script tells "it ran, and something failed" from "it did not run".
FAILED_STATUS = 3


def _last_event() -> int:
    return Event.objects.aggregate(n=Max("seq"))["n"] or 0
