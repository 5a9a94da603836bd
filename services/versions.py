"""Versions: deploying a bundle (or rolling back to one), and what each version still runs.

A deploy stores the bundle and records from when new work pins it in a clock domain; it re-arms and
rewrites nothing (tests/services/test_versions.py shows the armed timers unchanged across one).
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from datetime import date, datetime

from django.conf import settings
from django.db import transaction
from django.db.models import Count, Max, Q

from calendars.models import Clock
from timers.models import LIVE, Brand, Deploy, Event, Timer, Version

from . import registry
from .declare import ServiceError
from .models import Job, Subscription


@dataclass
class Deployed:
    version: Version
    services: list[str]
    domain: str
    at: datetime
    rollback: bool  # an older version deployed again: it arms nothing and rewrites nothing


@transaction.atomic
def version_deploy(*, domain: str, at: datetime, module: str | None = None, service: str | None = None,
                   to: str | None = None, name: str = "") -> list[Deployed]:
    """Deploy a module's bundle, a Service's working-tree bundle, an existing version (``to``: a rollback
    or a redeploy), or, with none of these, every working-tree bundle of KEEPING_TIME_SERVICES."""
    if sum(x is not None for x in (module, service, to)) > 1:
        raise ServiceError("name one of --module, --service or --to")
    if to is not None:
        rows = [registry.version_named(to)]
        if name:
            raise ServiceError("--name names a new bundle; --to deploys one that has its name already")
    elif module is not None:
        rows = [registry.store_module(module, name=name)]
    elif service is not None:
        registry.get(service)
        rows = [registry.store(registry.bundle(service), name=name)]
    else:
        paths = list(getattr(settings, "KEEPING_TIME_SERVICES", []))
        if name and len(paths) > 1:
            raise ServiceError("--name names one bundle: add --module or --service")
        rows = [registry.store_module(p, name=name) for p in paths]
    out = []
    for row in rows:
        services = [s for s in row.services if service is None or s == service]
        for s in services:
            registry.deploy(service=s, version=row, domain=domain, at=at)
        # Deploying an existing version that a newer one followed is a rollback.
        rollback = to is not None and Version.objects.filter(created_at__gt=row.created_at).exists()
        out.append(Deployed(row, services, domain, at, rollback=rollback))
    return out


@dataclass
class Pinned:
    version: Version
    live: bool
    armed: int
    subjects: int
    last: datetime | None
    clocks: int
    summary: str = ""  # as GET /versions?pinned=true says it: "1 clock · expiring on sbj_…, to 2045-12-31"


def versions_summary(*, brand: Brand | None = None, domains: Q | None = None, now: datetime,
                     pinned_only: bool = False, live_domain: str = LIVE) -> list[Pinned]:
    """Each version with what it still runs: armed (and held) timers, the subjects they are on, the last
    date they keep; live when it is what new work of one of its Services pins in ``live_domain`` now."""
    timers = Timer.objects.filter(status__in=["armed", "held"]).exclude(version="")
    jobs = Job.objects.filter(status="open").exclude(version="")
    subs = Subscription.objects.filter(status__in=["active", "paused"]).exclude(version="")
    clocks = Clock.objects.exclude(version="")
    if brand is not None:
        timers, jobs, subs, clocks = (qs.filter(brand=brand) for qs in (timers, jobs, subs, clocks))
    if domains is not None:
        timers, jobs, subs, clocks = (qs.filter(domains) for qs in (timers, jobs, subs, clocks))
    counts = {r["version"]: r for r in timers.values("version").annotate(n=Count("id"), last=Max("owed_at"))}
    subjects: dict[str, set[str]] = {}
    for qs in (jobs, subs):
        for version, subject in qs.values_list("version", "subject_id"):
            subjects.setdefault(version, set()).add(subject)
    clock_counts = dict(clocks.filter(items__status="open").values("version").annotate(n=Count("id", distinct=True))
                        .values_list("version", "n"))
    # A version no open job or subscription runs, held only by clocks that live on their subject (a
    # carryforward that outlives its return): which subjects, and the last date those clocks keep.
    held: dict[str, dict[str, date]] = {}
    for version, subject, due in (clocks.filter(items__status="open", lives_on=Clock.LivesOn.SUBJECT)
                                  .exclude(version__in=list(subjects)).values("version", "subject_id")
                                  .annotate(last=Max("items__due_date"))
                                  .values_list("version", "subject_id", "last")):
        on = held.setdefault(version, {})
        on[subject] = max(due, on.get(subject, due))
    live = set(registry.live_services(domain=live_domain, now=now).values())
    out = []
    for row in Version.objects.order_by("-created_at"):
        c = counts.get(row.digest, {})
        p = Pinned(row, row.digest in live, c.get("n", 0), len(subjects.get(row.digest, ())), c.get("last"),
                   clock_counts.get(row.digest, 0))
        if pinned_only and not p.armed:
            continue
        on = held.get(row.digest)
        if on and not p.subjects:
            n = clock_counts.get(row.digest, 0)
            p.summary = (f"{n:,} clock{'s' if n != 1 else ''} · expiring on {', '.join(sorted(on))}, "
                         f"to {max(on.values()).isoformat()}")
        else:
            p.summary = f"{p.armed:,} armed timers on {p.subjects:,} subjects"
        out.append(p)
    return out


def retired_at(version: Version, *, domains: Q, deploys_in: str, now: datetime) -> datetime | None:
    """When ``version`` stopped running anything in ``domains`` (in their time), or None if it never ran there.

    Its last timer closed when it fired, when the timer that superseded it was armed, or when its clock
    repinned to a newer bundle (``clock.repinned``: the timers both versions arm alike move to the newer one
    then, so the older one's last rows are fired ones from long before). A version deployed there and
    deployed over before it armed anything retired at the next deploy. The caller asks only for a version
    that is not live and has nothing armed: this is its date, never a guess for one still running."""
    timers = Timer.objects.filter(domains, version=version.digest)
    closes = [timers.aggregate(m=Max("fired_at"))["m"],
              Timer.objects.filter(domains, pk__in=timers.filter(status="superseded").exclude(superseded_by="")
                                   .values("superseded_by")).aggregate(m=Max("armed_at"))["m"]]
    # Its clocks (those of its jobs, which start on it, and those it armed timers for) left it at their first
    # repin after the last timer it armed there.
    by_clock: dict[str, datetime | None] = dict.fromkeys(
        Clock.objects.filter(domains, owner_ref__in=Job.objects.filter(domains, version=version.digest).values("id"))
        .values_list("id", flat=True))
    for owner, at in (timers.filter(owner__startswith="clk_").values("owner").annotate(at=Max("armed_at"))
                      .values_list("owner", "at")):
        clock = owner.split("#", 1)[0]
        was = by_clock.get(clock)
        by_clock[clock] = at if was is None else max(at, was)
    if by_clock:
        firsts: dict[str, datetime] = {}
        for clock, at in (Event.objects.filter(domains, type="clock.repinned", subject__in=list(by_clock),
                                               fired_at__lte=now).values_list("subject", "fired_at")):
            after = by_clock[clock]
            if (after is None or at >= after) and (clock not in firsts or at < firsts[clock]):
                firsts[clock] = at
        closes.extend(firsts.values())
    found = [c for c in closes if c is not None]
    if found:
        return max(found)
    deployed = Deploy.objects.filter(domain=deploys_in, version=version, at__lte=now).order_by("-at").first()
    if deployed is None:
        return None
    over = (Deploy.objects.filter(domain=deploys_in, service=deployed.service, at__gt=deployed.at, at__lte=now)
            .exclude(version=version).order_by("at").values_list("at", flat=True).first())
    return over


def _rung_diff(old: list[str], new: list[str]) -> list[str]:
    """'+ notice 60d', '- escalate 7d', 'ack daily 7d → ack daily 5d' (same rung, another span)."""
    removed = [r for r in old if r not in new]
    added = [r for r in new if r not in old]
    out = []
    for r in list(removed):
        twin = next((a for a in added if a.rsplit(" ", 1)[0] == r.rsplit(" ", 1)[0]), None)
        if twin is not None:
            out.append(f"{r} → {twin}")
            removed.remove(r)
            added.remove(twin)
    return [f"+ {a}" for a in added] + [f"- {r}" for r in removed] + out


def _price(svc) -> dict:
    p = svc.price
    return {"usd": p.cents / 100, "every": p.every, "within": p.within, "late": p.late, "includes": p.includes}


def _functions(source: str) -> dict[str, str]:
    """Each top-level function and class of a module, by name, as its syntax tree (so a comment or a blank line
    changes nothing); a module that does not parse is one entry, its whole text."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return {"": source}
    return {n.name: ast.dump(n) for n in tree.body
            if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef)}


def _and(names: list[str]) -> str:
    return names[0] if len(names) == 1 else f"{', '.join(names[:-1])} and {names[-1]}"


def _lib_line(path: str, old: str, new: str) -> str:
    """lib tax.py: late_filing changed · file_due, extended_due and pay_due unchanged (as the seed prints it)."""
    before, after = _functions(old), _functions(new)
    changed = [n for n in after if n in before and before[n] != after[n]]
    parts = [f"{_and(changed)} changed"] if changed else []
    added = [n for n in after if n not in before]
    dropped = [n for n in before if n not in after]
    same = [n for n in after if n in before and before[n] == after[n]]
    if added:
        parts.append(f"+ {_and(added)}")
    if dropped:
        parts.append(f"- {_and(dropped)}")
    if same:
        parts.append(f"{_and(same)} unchanged")
    if old != new and not (changed or added or dropped):
        parts.insert(0, "its text changed, no function in it")
    return f"lib     {path}: " + (" · ".join(parts) or "unchanged")


def _pinned_jobs(*, service: str, domain: str, but: str) -> list[tuple[Job, str, int]]:
    """Each open job of ``service`` on another version than ``but``, with its version and the armed (and held)
    timers it and its clocks run on it: three queries, whatever the count."""
    jobs = list(Job.objects.filter(domain=domain, service=service, status="open").exclude(version="")
                .exclude(version=but).order_by("opened_at", "id"))
    owner_of = {j.id: j.id for j in jobs}
    owner_of.update(Clock.objects.filter(domain=domain, owner_ref__in=list(owner_of)).values_list("id", "owner_ref"))
    versions = {j.id: j.version for j in jobs}
    counts: dict[str, int] = {}
    for owner, version in (Timer.objects.filter(domain=domain, status__in=["armed", "held"],
                                                version__in=set(versions.values()))
                           .values_list("owner", "version")):
        job = owner_of.get(owner.split("#", 1)[0])
        if job is not None and version == versions[job]:
            counts[job] = counts.get(job, 0) + 1
    return [(j, j.version, counts.get(j.id, 0)) for j in jobs]


def version_check(*, module: str, now: datetime, domain: str = LIVE) -> list[str]:
    """What deploying ``module`` would change, against what is live, as the seed prints it: the bundle, rungs,
    lib (function by function), price, the open jobs that keep their version (armed), what stays runnable
    (pinned) and what runs the new one (next). Changes nothing."""
    b, found = registry.module_bundle(module)
    new_row = Version.objects.filter(pk=b.digest).first()
    new_label = new_row.name if new_row is not None and new_row.name else ""
    deploys_as = f"{new_label} · {b.digest[:15]}…" if new_label else f"{b.digest[:15]}…"
    lines = []
    for svc in found:
        live_digest = registry.live_version(svc.name, domain=domain, now=now) if svc.name in registry._services \
            else None
        live = registry.get(svc.name, live_digest) if live_digest else None
        live_row = Version.objects.filter(pk=live_digest).first() if live_digest else None
        if live_row is not None and live_row.name:
            against = f"{live_row.name} · {live_row.digest[:15]}…"
        else:
            against = f"{live_digest[:15]}…" if live_digest else "nothing live"
        lines.append(f"{svc.where} · against live {against} · deploys as {deploys_as}"
                     + (" · no change" if live_digest == b.digest else ""))
        imports = [src.path for src in b.sources if src.module != b.module]
        lines.append("bundle  the Service file and every module it imports: " + (", ".join(imports) or "none"))
        if live is None:
            continue
        kept = []
        for name in sorted(set(svc.clocks) | set(live.clocks)):
            if name not in live.clocks:
                lines.append(f"clocks  + {name}")
            elif name not in svc.clocks:
                lines.append(f"clocks  - {name}")
            else:
                diff = _rung_diff(list(live.clocks[name].rungs), list(svc.clocks[name].rungs))
                if diff:
                    lines.append(f"rungs   clocks.{name}: " + " · ".join(diff))
                    kept[:1] = ["rungs"]
        old_bundle = live_row if live_row is not None else registry.bundle(svc.name)
        old_sources = live_row.sources if live_row is not None else old_bundle.stored()
        new_sources = b.stored()
        # Each bundle's own Service file: the rungs and price lines above are its diff.
        entry = {b.module, old_bundle.module}
        for m in sorted(new_sources, key=lambda m: new_sources[m]["path"]):
            if m in entry:
                continue
            path = new_sources[m]["path"]
            if m not in old_sources:
                lines.append(f"lib     {path}: new")
                kept.append(path)
                continue
            lines.append(_lib_line(path, old_sources[m]["source"], new_sources[m]["source"]))
            if old_sources[m]["source"] != new_sources[m]["source"]:
                kept.append(path)
        for m in sorted(set(old_sources) - set(new_sources) - entry):
            lines.append(f"lib     {old_sources[m]['path']}: no longer imported")
        old_price, new_price = _price(live), _price(svc)
        for field in old_price:
            if old_price[field] != new_price[field]:
                lines.append(f"price   {field}: {old_price[field]} → {new_price[field]}")
                if "price" not in kept:
                    kept.append("price")
        keeps = f", {_and(kept)}{' both' if len(kept) == 2 else ''}" if kept else ""
        labels = dict(Version.objects.values_list("digest", "name"))
        for job, version, armed in _pinned_jobs(service=svc.name, domain=domain, but=b.digest):
            label = labels.get(version) or f"{version[:15]}…"
            lines.append(f"armed   {job.id} · {armed:,} armed timers on {label} · they keep it{keeps}")
    for p in versions_summary(now=now, pinned_only=True, domains=Q(domain=domain), live_domain=domain):
        if p.version.digest != b.digest and set(p.version.services) & {s.name for s in found}:
            lines.append(f"pinned  {p.version.label} stays runnable until its last timer closes · {p.armed:,} armed "
                         f"timers on {p.subjects:,} subjects · a rollback to it arms nothing and rewrites nothing")
    run = new_label or f"{b.digest[:15]}…"
    lines.append(f"next    jobs opened and minted from the deploy run {run} · a subject clock repins when a {run} "
                 "job joins its subject")
    return lines
