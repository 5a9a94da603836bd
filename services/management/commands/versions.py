"""versions: the bundles Services run on.

  versions deploy [--module M | --service S | --to 2027-01] [--name 2027-06] [--test-clock tc_… --at …]
  versions list [--pinned] [--test-clock tc_…]
  versions show 2027-06
"""

from __future__ import annotations

from django.core.management.base import CommandError
from django.db.models import Q

from services import registry
from services.declare import ServiceError
from services.models import Job
from services.repin import job_repin
from services.versions import retired_at, version_check, version_deploy, versions_summary
from timers.armer import DirectArmer
from timers.clock import wall_now
from timers.management.base import KTCommand
from timers.models import LIVE, LIVE_PREFIX
from timers.timeutil import parse_instant, trace_z


class Command(KTCommand):
    help = "Deploy a Service bundle (or roll back to one), and list the versions still running timers."

    def add_arguments(self, parser):
        sub = parser.add_subparsers(dest="action", required=True)
        d = sub.add_parser("deploy", help="store a bundle and make it what new work pins (re-arms nothing)")
        d.add_argument("--module", help="a Service module's dotted path (a brand's own package works too)")
        d.add_argument("--service", help="the working tree's bundle of this Service")
        d.add_argument("--to", help="an existing version (a name or sha256 prefix): a rollback or a redeploy")
        d.add_argument("--name", default="", help="name the new bundle, e.g. 2027-06")
        d.add_argument("--test-clock", help="deploy on this test clock (its time) instead of the live clock")
        d.add_argument("--at", help="from this instant (default: the clock's now)")
        ls = sub.add_parser("list")
        ls.add_argument("--pinned", action="store_true", help="only versions still running a timer")
        ls.add_argument("--test-clock", help="count what is on this test clock (default: the live clock)")
        rp = sub.add_parser("repin", help="move an open job to another version, timer by timer")
        rp.add_argument("job_id")
        rp.add_argument("--to", required=True, help="a version's name (2027-06) or sha256 prefix")
        rp.add_argument("--dry-run", action="store_true", help="print the diff and change nothing")
        ck = sub.add_parser("check", help="what deploying a module would change, against what is live")
        ck.add_argument("module", help="the Service module: its dotted path, or its file as the seed writes it "
                                       "(services/annual_return.py, from the checkout or a KT_SERVICES package)")
        ck.add_argument("--against", help="live (the default) or a test clock's id: what is live there now")
        ck.add_argument("--test-clock", help="against what is live on this test clock (default: the live clock)")
        sh = sub.add_parser("show")
        sh.add_argument("ref", help="a name (2027-06) or a sha256 prefix")

    def handle(self, *args, **o):
        try:
            getattr(self, f"_{o['action']}")(o)
        except ServiceError as exc:
            self._fail(f"invalid_version: {exc}")

    def _fail(self, line: str) -> None:
        raise CommandError(line)

    def _deploy(self, o) -> None:
        clock = self.test_clock(o["test_clock"])
        domain = clock.id if clock else LIVE
        at = parse_instant(o["at"]) if o["at"] else (clock.frozen_time if clock else wall_now())
        for d in version_deploy(domain=domain, at=at, module=o["module"], service=o["service"], to=o["to"],
                                name=o["name"]):
            what = "rolled back to" if d.rollback else "deployed"
            self.stdout.write(f"{what} {d.version.label} · {d.version.digest[:23]}… · {', '.join(d.services)} · "
                              f"on {domain} from {trace_z(at)} · new work pins it; armed timers keep theirs")

    def _list(self, o) -> None:
        clock = self.test_clock(o["test_clock"])
        domain = clock.id if clock else LIVE
        now = clock.frozen_time if clock else wall_now()
        # Without a test clock: every brand's live clock (deploys reach them all).
        where = Q(domain=clock.id) if clock else Q(domain__startswith=LIVE_PREFIX)
        rows = versions_summary(domains=where, now=now, pinned_only=o["pinned"], live_domain=domain)
        if not rows:
            self.stdout.write("no versions" + (" still running a timer" if o["pinned"] else ""))
        for p in rows:
            services = ", ".join(p.version.services)
            if not p.live and not p.armed:
                # Nothing of it runs: retired on the day its last timer closed, or it never ran here at all.
                gone = retired_at(p.version, domains=where, deploys_in=registry.deploy_domain(domain), now=now)
                if gone is not None:
                    self.stdout.write(f"retired {p.version.label} on {gone.date()} · {p.version.digest[:15]}… · "
                                      f"{services}")
                else:
                    self.stdout.write(f"{p.version.name or 'unnamed':<10} {p.version.digest[:15]}… never live · "
                                      f"{services}")
                continue
            last = f" · keeps dates to {p.last.date()}" if p.last else ""
            # Live: what new work pins now; pinned: an older one, runnable until its last timer closes.
            self.stdout.write(
                f"{p.version.name or 'unnamed':<10} {p.version.digest[:15]}… {'live' if p.live else 'pinned'} · "
                f"{services} · {p.summary}{last}")

    def _repin(self, o) -> None:
        job = Job.objects.filter(pk=o["job_id"]).first()
        if job is None:
            self._fail(f"resource_missing: no job {o['job_id']!r}")
        to = registry.version_named(o["to"])
        changes = job_repin(armer=DirectArmer(brand=job.brand_id, domain=job.domain), job=job, to=to,
                            dry_run=o["dry_run"])
        verb = "would repin" if o["dry_run"] else "repinned"
        moved = [c for c in changes if c.action != "keep"]
        self.stdout.write(f"{verb} {job.id} · {job.service} {job.period} · to {to.label} · "
                          f"{len(moved)} changed, {len(changes) - len(moved)} kept · UTC")
        for c in moved:
            # As the seed's dry run: "arm clk_7Hq9#US:rung:notice 90d:2026@1 2027-07-17 13:00Z".
            self.stdout.write(f"{c.action} {c.key}" + (f" {trace_z(c.owed_at)}" if c.owed_at else ""))

    def _check(self, o) -> None:
        against = o["against"]
        if against is not None and o["test_clock"] and against != o["test_clock"]:
            self._fail(f"invalid_request: --against {against} and --test-clock {o['test_clock']} name two clocks; "
                       "name one")
        clock = self.test_clock(o["test_clock"] or (against if against not in (None, LIVE) else None))
        module = registry.module_for(o["module"])
        for line in version_check(module=module, now=clock.frozen_time if clock else wall_now(),
                                  domain=clock.id if clock else LIVE):
            self.stdout.write(line)

    def _show(self, o) -> None:
        v = registry.version_named(o["ref"])
        self.stdout.write(f"{v.label} · {v.digest} · {', '.join(v.services)} · entry {v.module}")
        for module, src in sorted(v.sources.items()):
            self.stdout.write(f"  {src['path']}  ({module}, {len(src['source'].splitlines())} lines)")
