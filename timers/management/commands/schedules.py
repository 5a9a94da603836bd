"""schedules list [--test-clock tc_…] · show sch_… · pause sch_… [--note …] · resume sch_… · trigger sch_… ·
update sch_… [--spec JSON] [--zone …] [--revision N] … · delete sch_… · backfill sch_… --start … --end …"""

from __future__ import annotations

import json
from typing import Any

from django.core.management.base import CommandError, CommandParser

from timers.errors import KeepingTimeError
from timers.models import LIVE, LIVE_PREFIX, OVERLAPS, Schedule
from timers.schedule_changes import schedule_backfill, schedule_delete, schedule_update
from timers.schedules import schedule_json, schedule_pause, schedule_resume, schedule_trigger
from timers.timeutil import iso_z, parse_instant

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
        up = sub.add_parser("update", help="change what is given: a new revision; a new spec or zone re-arms the "
                                           "next fire only")
        up.add_argument("schedule_id")
        up.add_argument("--revision", type=int, help="the revision you read (else 409 schedule_revision_conflict)")
        up.add_argument("--spec", help='JSON: {"cron": "0 9 * * 1-5"}')
        up.add_argument("--zone")
        up.add_argument("--target", help='JSON: {"url": "https://…"}')
        up.add_argument("--name")
        up.add_argument("--overlap", choices=OVERLAPS)
        up.add_argument("--buffer-limit", type=int)
        up.add_argument("--catchup-window")
        up.add_argument("--start-at", help="an instant (2027-01-01T00:00Z); 'none' clears it")
        up.add_argument("--end-at", help="an instant; 'none' clears it")
        up.add_argument("--remaining-actions", help="a whole number; 'none': no limit")
        up.add_argument("--calendar", help="a calendar id whose closed days it skips or rolls; '' for none")
        up.add_argument("--closed-days", choices=("skip", "next_open", "previous_open"))
        up.add_argument("--jitter", help="each fire starts up to this after its time: 30s, 5m")
        up.add_argument("--skip", action="append", help="a cron expression or a date; repeat it; '' clears the list")
        sub.add_parser("delete", help="delete: nothing fires after it; an open Run settles").add_argument(
            "schedule_id")
        bf = sub.add_parser("backfill", help="fire each intended time in [start, end] that has no Run yet")
        bf.add_argument("schedule_id")
        bf.add_argument("--start", required=True)
        bf.add_argument("--end", required=True)
        bf.add_argument("--overlap", choices=OVERLAPS)

    def handle(self, *args: Any, **o: Any) -> None:
        try:
            getattr(self, f"_{o['action']}")(o)
        except KeepingTimeError as exc:
            param = getattr(exc, "param", None)
            raise CommandError(f"{exc.code}: {exc.message}" + (f" ({param})" if param else "")) from None

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

    def _update(self, o: dict[str, Any]) -> None:
        sch = schedule_update(schedule=self._get(o["schedule_id"]), revision=o["revision"], **_update_args(o))
        j = schedule_json(sch, recent=0, upcoming=1)
        self.stdout.write(f"{sch.id} updated: revision {sch.revision} · next {_z((j['next_fire_times'] or [None])[0])}")

    def _delete(self, o: dict[str, Any]) -> None:
        sch = schedule_delete(schedule=self._get(o["schedule_id"]))
        j = schedule_json(sch, recent=0)
        self.stdout.write(f"{sch.id} deleted at {_z(j['deleted_at'])}: nothing fires after it; "
                          f"{j['counters']['open_runs']} open Run(s) settle as they end")

    def _backfill(self, o: dict[str, Any]) -> None:
        got = schedule_backfill(schedule=self._get(o["schedule_id"]), start=parse_instant(o["start"]),
                                end=parse_instant(o["end"]), overlap=o["overlap"])
        self.stdout.write(f"{o['schedule_id']} backfill {_z(got['start'])} to {_z(got['end'])} ({got['overlap']}): "
                          f"{len(got['fires'])} to fire, {len(got['already_run'])} already run, "
                          f"{len(got['skipped'])} skipped (times UTC)"
                          + (f"; more from {_z(got['next_start'])}" if got["has_more"] else ""))
        for t in got["fires"]:
            self.stdout.write(f"  fires {_z(t)}")

    def _trigger(self, o: dict[str, Any]) -> None:
        timer = schedule_trigger(schedule=self._get(o["schedule_id"]))
        self.stdout.write(f"{o['schedule_id']} triggered: {timer.key} owed {iso_z(timer.owed_at)}")


def _json_arg(text: str, what: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        raise CommandError(f"invalid_{what}: --{what} is JSON, e.g. " + (
            '{"cron": "0 9 * * 1-5"}' if what == "spec" else '{"url": "https://…"}')) from None


def _instant_arg(text: str) -> Any:
    return None if text.lower() == "none" else parse_instant(text)


def _update_args(o: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if o["spec"] is not None:
        out["spec"] = _json_arg(o["spec"], "spec")
    if o["target"] is not None:
        out["target"] = _json_arg(o["target"], "target")
    for k in ("zone", "name", "overlap", "buffer_limit", "catchup_window", "jitter", "calendar", "closed_days"):
        if o[k] is not None:
            out[k] = o[k]
    for k in ("start_at", "end_at"):
        if o[k] is not None:
            out[k] = _instant_arg(o[k])
    if o["remaining_actions"] is not None:
        text = o["remaining_actions"]
        if text.lower() != "none" and not text.isdigit():
            raise CommandError("invalid_remaining_actions: --remaining-actions is a whole number, or none")
        out["remaining_actions"] = None if text.lower() == "none" else int(text)
    if o["skip"] is not None:
        out["skip"] = [r for r in o["skip"] if r]
    return out


def _spec(sch: Schedule) -> str:
    spec = sch.spec or {}
    if "cron" in spec:
        return f"cron '{spec['cron']}'"
    if "every" in spec:
        return f"every {spec['every']}" + (f" phase {spec['phase']}" if spec.get("phase") else "")
    return " ".join(f"{k} {v}" for k, v in spec.items())
