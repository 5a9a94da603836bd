"""schedules list [--test-clock tc_…] · show sch_… · pause sch_… [--note …] · resume sch_… · trigger sch_…"""

from __future__ import annotations

from typing import Any

from django.core.management.base import CommandError, CommandParser

from timers.models import LIVE, LIVE_PREFIX, Schedule
from timers.schedules import schedule_json, schedule_pause, schedule_resume, schedule_trigger
from timers.timeutil import iso_z

from ..base import KTCommand


def _z(text: str | None) -> str:
    return (text or "—").replace(":00Z", "Z").replace("T", " ")


class Command(KTCommand):
    help = "List, show, pause, resume and trigger schedules."

    def add_arguments(self, parser: CommandParser) -> None:
        sub = parser.add_subparsers(dest="action", required=True)
        ls = sub.add_parser("list", help="a clock domain's schedules")
        ls.add_argument("--test-clock")
        for name, what in (("show", "one schedule: spec, next fires, counters, recent ticks, dead letters"),
                           ("resume", "resume; what was missed follows the catch-up window"),
                           ("trigger", "fire now (on a test clock: at its next advance)")):
            sub.add_parser(name, help=what).add_argument("schedule_id")
        pause = sub.add_parser("pause", help="pause: nothing starts until resumed")
        pause.add_argument("schedule_id")
        pause.add_argument("--note", default="", help="why (pause_note)")

    def handle(self, *args: Any, **o: Any) -> None:
        getattr(self, f"_{o['action']}")(o)

    def _get(self, schedule_id: str) -> Schedule:
        sch = Schedule.objects.filter(pk=schedule_id).first()
        if sch is None:
            raise CommandError(f"resource_missing: no schedule {schedule_id!r}")
        return sch

    def _list(self, o: dict[str, Any]) -> None:
        clock = self.test_clock(o["test_clock"])
        domain = clock.id if clock else LIVE
        # Without a test clock: every brand's live clock.
        rows = (Schedule.objects.filter(domain=domain) if clock else
                Schedule.objects.filter(domain__startswith=LIVE_PREFIX)).order_by("created_at", "id")
        self.stdout.write(f"{rows.count()} schedules on {domain} (UTC)")
        for sch in rows:
            j = schedule_json(sch, recent=1, upcoming=1)
            state = "paused" if sch.paused else "next " + _z((j["next_fire_times"] or [None])[0])
            last = j["last_tick"]
            self.stdout.write(f"  {sch.id}  {sch.name or '-'}  {_spec(sch)}  {sch.target_kind}  {state}  "
                              f"last {last['state'] if last else '—'}  fired {j['counters']['fired']} skipped {sch.skipped} "
                              f"dropped {sch.dropped} missed {sch.missed}")

    def _show(self, o: dict[str, Any]) -> None:
        sch = self._get(o["schedule_id"])
        j = schedule_json(sch)
        w = self.stdout.write
        w(f"{sch.id} {sch.name or ''} · {_spec(sch)} in {sch.zone} · target {sch.target_kind} "
          f"{sch.target.get('url') or sch.target.get('service') or sch.target.get('subscription') or ''} · "
          f"overlap {sch.overlap} · catch-up window {j['catchup_window']}s · on {sch.domain} · times UTC")
        if sch.paused:
            w(f"paused since {_z(j['paused_at'])}" + (f": {sch.pause_note}" if sch.pause_note else ""))
        w("next: " + (", ".join(_z(t) for t in j["next_fire_times"]) or "—"))
        c = j["counters"]
        w(f"fired {c['fired']} · skipped {c['skipped']} · dropped {c['dropped']} · missed {c['missed']} · "
          f"dead letters {c['dead_lettered']} · open runs {c['open_runs']}")
        for t in j["recent_ticks"]:
            run = t["run"]
            w(f"  tick {_z(t['scheduled_at'])} fired {_z(t['fired_at'])} {t['state']} · run {run['state']}"
              + (f" {run['outcome']}" if run["outcome"] else "") + (f" · {run['ref']}" if run["ref"] else ""))
        for d in j["dead_letters"]:
            w(f"  dead letter {_z(d['at'])} tick {d['tick']}: {d['error'][:160]}")

    def _pause(self, o: dict[str, Any]) -> None:
        sch = schedule_pause(schedule=self._get(o["schedule_id"]), note=o["note"])
        self.stdout.write(f"{sch.id} paused" + (f": {sch.pause_note}" if sch.pause_note else ""))

    def _resume(self, o: dict[str, Any]) -> None:
        sch = schedule_resume(schedule=self._get(o["schedule_id"]))
        self.stdout.write(f"{sch.id} resumed; missed fires start only inside its catch-up window")

    def _trigger(self, o: dict[str, Any]) -> None:
        timer = schedule_trigger(schedule=self._get(o["schedule_id"]))
        self.stdout.write(f"{o['schedule_id']} triggered: {timer.key} owed {iso_z(timer.owed_at)}")


def _spec(sch: Schedule) -> str:
    spec = sch.spec or {}
    if "cron" in spec:
        return f"cron '{spec['cron']}'"
    if "every" in spec:
        return f"every {spec['every']}" + (f" phase {spec['phase']}" if spec.get("phase") else "")
    return " ".join(f"{k} {v}" for k, v in spec.items())
