"""Versions: deploying a bundle (or rolling back to one), and what each version still runs.

A deploy stores the bundle and records from when new work pins it in a clock domain; it re-arms and
rewrites nothing (tests/test_versions.py shows the armed timers unchanged across one).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from django.conf import settings
from django.db import transaction
from django.db.models import Count, Max, Q

from calendars.models import Clock
from timers.models import LIVE, Brand, Timer, Version

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
    live = set(registry.live_services(domain=live_domain, now=now).values())
    out = []
    for row in Version.objects.order_by("-created_at"):
        c = counts.get(row.digest, {})
        p = Pinned(row, row.digest in live, c.get("n", 0), len(subjects.get(row.digest, ())), c.get("last"),
                   clock_counts.get(row.digest, 0))
        if pinned_only and not p.armed:
            continue
        out.append(p)
    return out


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


def version_check(*, module: str, now: datetime, domain: str = LIVE) -> list[str]:
    """What deploying ``module`` would change, against what is live: files, rungs, clocks, prices, and what
    each pinned version still runs. Changes nothing."""
    b, found = registry.module_bundle(module)
    lines = []
    for svc in found:
        live_digest = registry.live_version(svc.name, domain=domain, now=now) if svc.name in registry._services \
            else None
        live = registry.get(svc.name, live_digest) if live_digest else None
        live_row = Version.objects.filter(pk=live_digest).first() if live_digest else None
        live_label = (live_row.label if live_row else (live_digest or "")[:15]) or "nothing live"
        lines.append(f"{svc.where} · {svc.name} · against live {live_label} · {(live_digest or '')[:15]}… · "
                     f"deploys as {b.digest[:15]}…" + (" · no change" if live_digest == b.digest else ""))
        lines.append("bundle  " + ", ".join(b.files))
        if live is None:
            continue
        for name in sorted(set(svc.clocks) | set(live.clocks)):
            if name not in live.clocks:
                lines.append(f"clocks  + {name}")
            elif name not in svc.clocks:
                lines.append(f"clocks  - {name}")
            else:
                diff = _rung_diff(list(live.clocks[name].rungs), list(svc.clocks[name].rungs))
                if diff:
                    lines.append(f"rungs   clocks.{name}: " + " · ".join(diff))
        old_price, new_price = _price(live), _price(svc)
        for field in old_price:
            if old_price[field] != new_price[field]:
                lines.append(f"price   {field}: {old_price[field]} → {new_price[field]}")
        old_sources = (live_row.sources if live_row else registry.bundle(svc.name).stored())
        new_sources = b.stored()
        changed = sorted(new_sources[m]["path"] for m in new_sources
                         if m in old_sources and old_sources[m]["source"] != new_sources[m]["source"])
        same = sorted(new_sources[m]["path"] for m in new_sources
                      if m in old_sources and old_sources[m]["source"] == new_sources[m]["source"])
        fresh = sorted(new_sources[m]["path"] for m in new_sources if m not in old_sources)
        lines.append("files   " + " · ".join(filter(None, [
            f"changed {', '.join(changed)}" if changed else "", f"new {', '.join(fresh)}" if fresh else "",
            f"unchanged {', '.join(same)}" if same else ""])))
    for p in versions_summary(now=now, pinned_only=True, domains=Q(domain=domain), live_domain=domain):
        if set(p.version.services) & {s.name for s in found}:
            lines.append(f"pinned  {p.version.label} · {p.armed:,} armed timers on {p.subjects:,} subjects keep it "
                         "· it stays runnable until its last timer closes; a rollback to it arms nothing")
    lines.append("next    jobs opened and minted from the deploy run it; open work keeps its version until repinned")
    return lines
