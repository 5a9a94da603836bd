"""timers list --on <owner> [--status armed] [--test-clock tc_…] · timers show tmr_… · timers arm <key> … ·
timers retry tmr_… (a timer an error held for the owner console)"""

from __future__ import annotations

import json
from typing import Any

from django.core.management.base import CommandError, CommandParser
from django.db.models import Count
from rest_framework.exceptions import ValidationError

from timers import cli
from timers.api.inputs import plain_json
from timers.api.serializers import timer_json
from timers.arming import timer_arm, timer_retry
from timers.domains import domain_now
from timers.models import LIVE, LIVE_PREFIX, Timer, live_domain
from timers.owners import describe, owner_filter
from timers.timeutil import parse_instant, trace_z

from ..base import KTCommand


class Command(KTCommand):
    help = "List, show and arm timers."

    def add_arguments(self, parser: CommandParser) -> None:
        sub = parser.add_subparsers(dest="action", required=True)
        ls = sub.add_parser("list", help="timers on an owner")
        ls.add_argument("--on", required=True, help="owner id: job_…, clk_…#US, sbn_…")
        ls.add_argument("--status", choices=[s.value for s in Timer.Status])
        ls.add_argument("--test-clock")
        ls.add_argument("--next", type=int, default=6, help="how many armed timers to list (default 6)")
        show = sub.add_parser("show", help="one timer, whole, as the API returns it")
        show.add_argument("timer_id")
        retry = sub.add_parser("retry", help="run again a timer an error held for the owner console")
        retry.add_argument("timer_id")
        arm = sub.add_parser("arm", help="arm a timer")
        arm.add_argument("key", help="<owner>:<kind>:<name>:<occurrence>[@<move>]")
        arm.add_argument("--owed", required=True, help="owed instant, ISO 8601 with Z")
        arm.add_argument("--handler", help="registered handler (default: the key's kind)")
        arm.add_argument("--data", default="{}", help="JSON data for the handler")
        arm.add_argument("--test-clock")
        arm.add_argument("--brand")

    def handle(self, *args: Any, **o: Any) -> None:
        getattr(self, f"_{o['action']}")(o)

    def _list(self, o: dict[str, Any]) -> None:
        clock = self.test_clock(o["test_clock"])
        owner = o["on"]
        # Without a test clock: the live clock of the brand whose timers the owner has (live_<brand>).
        domain = clock.id if clock else (Timer.objects.filter(owner=owner, domain__startswith=LIVE_PREFIX)
                                          .values_list("domain", flat=True).first() or LIVE)
        qs = Timer.objects.filter(owner_filter(domain, owner), domain=domain)
        if o["status"]:
            qs = qs.filter(status=o["status"])
        timers = list(qs.order_by("fired_at", "owed_at", "place", "key"))
        counts = {s: sum(1 for t in timers if t.status == s) for s in Timer.Status.values}
        armed = sorted((t for t in timers if t.status == "armed"), key=lambda t: (t.owed_at, t.place, t.key))
        shown_armed = armed[: o["next"]]
        rest = [t for t in timers if t.status != "armed"]
        # A held timer, or one superseded while held, has no owed time: it sorts by when it was armed.
        rest.sort(key=lambda t: (t.fired_at or t.held_since or t.owed_at or t.armed_at, t.place, t.key.encode()))
        now = domain_now(domain=domain)
        parts = [owner, *describe(domain, owner), f"at {trace_z(now)}", "UTC", f"{counts['fired']} fired", f"{counts['held']} held"]
        if counts["superseded"]:
            parts.append(f"{counts['superseded']} superseded")
        armed_text = f"{counts['armed']} armed"
        if len(armed) > len(shown_armed):
            armed_text += f", the next {len(shown_armed)} below"
        parts.append(armed_text)
        self.stdout.write(" · ".join(parts))
        if not timers:
            if clock is None:  # say where they are: a demo's timers live on a test clock
                held = list(Timer.objects.filter(owner_filter(LIVE, owner)).exclude(domain__startswith=LIVE_PREFIX)
                            .values_list("domain").annotate(n=Count("pk")).order_by("domain")[:5])
                if held:
                    where = ", ".join(f"{domain} ({n})" for domain, n in held)
                    self.stdout.write(f"none on the live clock; test clocks hold some: {where} (--test-clock tc_…)")
            return
        for line in cli.timer_rows(rest + shown_armed):
            self.stdout.write(line)

    def _show(self, o: dict[str, Any]) -> None:
        timer = Timer.objects.filter(pk=o["timer_id"]).first()
        if timer is None:
            raise CommandError(f"resource_missing: no timer {o['timer_id']!r}")
        self.stdout.write(json.dumps(timer_json(timer), indent=2))

    def _retry(self, o: dict[str, Any]) -> None:
        timer = Timer.objects.filter(pk=o["timer_id"]).first()
        if timer is None:
            raise CommandError(f"resource_missing: no timer {o['timer_id']!r}")
        timer = timer_retry(timer=timer)
        self.stdout.write(f"retried {timer.id} · {timer.key} · armed for {trace_z(timer.owed_at)} on {timer.domain}")

    def _arm(self, o: dict[str, Any]) -> None:
        clock = self.test_clock(o["test_clock"])
        brand = clock.brand if clock else self.brand(o["brand"])
        try:
            data = json.loads(o["data"])
        except (json.JSONDecodeError, RecursionError) as exc:
            raise CommandError(f"invalid_data: --data is not JSON ({getattr(exc, 'msg', 'nested too deep')})") from None
        if not isinstance(data, dict):
            raise CommandError("invalid_data: --data is a JSON object, e.g. '{\"what\": \"prep\"}'")
        try:
            plain_json(data)  # what the API refuses in a timer's data, the CLI refuses too
        except ValidationError as exc:
            assert isinstance(exc.detail, list)  # plain_json raises with a message, never a map of fields
            raise CommandError(f"invalid_data: --data {exc.detail[0]}") from None
        timer = timer_arm(brand=brand, key=o["key"], owed_at=parse_instant(o["owed"]),
                          domain=clock.id if clock else live_domain(brand.id), handler=o["handler"], data=data)
        self.stdout.write(f"{timer.id} armed · {timer.key} · owed {trace_z(timer.owed_at)} · place {timer.place}")
