"""testclocks create --frozen-time <instant> [--name] [--seed] [--brand] · testclocks list · testclocks delete tc_…"""

from __future__ import annotations

from typing import Any

from django.core.management.base import CommandParser

from timers.models import TestClock
from timers.test_clocks import test_clock_create, test_clock_delete
from timers.timeutil import parse_instant, trace_z

from ..base import KTCommand


class Command(KTCommand):
    help = "Create, list and delete test clocks."

    def add_arguments(self, parser: CommandParser) -> None:
        sub = parser.add_subparsers(dest="action", required=True)
        c = sub.add_parser("create")
        c.add_argument("--frozen-time", required=True)
        c.add_argument("--name", default="")
        c.add_argument("--seed", default="", help="ids minted on the clock derive from the seed (one clock per seed)")
        c.add_argument("--brand")
        sub.add_parser("list")
        d = sub.add_parser("delete")
        d.add_argument("clock_id")

    def handle(self, *args: Any, **o: Any) -> None:
        if o["action"] == "create":
            clock = test_clock_create(brand=self.brand(o["brand"]), frozen_time=parse_instant(o["frozen_time"]),
                                      name=o["name"], seed=o["seed"])
            seed = f" · seed {clock.seed}" if clock.seed else ""
            self.stdout.write(f"{clock.id}{seed} · frozen at {trace_z(clock.frozen_time)} · {clock.brand.name}")
        elif o["action"] == "list":
            for clock in TestClock.objects.exclude(status__in=TestClock.GONE).select_related("brand").order_by("created_at"):
                self.stdout.write(f"{clock.id} · {clock.status} · frozen at {trace_z(clock.frozen_time)} · "
                                  f"{clock.brand.name} · {clock.name}")
        else:
            gone = self.test_clock(o["clock_id"])
            assert gone is not None  # clock_id is a required argument: only an empty id gives None
            test_clock_delete(clock=gone)
            self.stdout.write(f"{gone.id} deleted · everything on it voided")
