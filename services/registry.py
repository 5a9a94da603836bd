"""Services, registered by module path in settings.KEEPING_TIME_SERVICES, and their versions.

A version is a bundle (services/bundles.py): the Service module and what it imports from its own
package, content-addressed by sha256 and stored in a ``Version`` row. The working tree's bundles are
what the process loaded; a pinned version runs from its stored source, loaded once per process into an
isolated namespace. ``get(name, version=…)`` answers the Service as that version declared it.
"""

from __future__ import annotations

import importlib
import logging
from datetime import datetime
from pathlib import Path
from types import ModuleType

from django.conf import settings

from calendars import specs
from timers import batch as batches
from timers.clock import wall_now
from timers.models import LIVE, Deploy, Version, is_live

from . import bundles
from .bundles import Bundle
from .declare import Service, ServiceError

log = logging.getLogger(__name__)

_services: dict[str, Service] = {}
_bundles: dict[str, Bundle] = {}  # the working tree's bundle of each Service
_versioned: dict[str, dict[str, Service]] = {}  # digest → the Services a stored bundle declares


def _where(module: ModuleType) -> str:
    path = Path(module.__file__).resolve()
    try:
        return str(path.relative_to(Path(settings.BASE_DIR).resolve()))
    except ValueError:  # a brand's own package, outside this project
        return str(path)


def bundle_of(module: ModuleType) -> Bundle:
    return bundles.bundle_of(module)


def load(paths: list[str] | None = None) -> dict[str, Service]:
    """Import each Service module, validate every Service, and register its clocks."""
    found: dict[str, tuple[Service, ModuleType]] = {}
    for path in paths if paths is not None else getattr(settings, "KEEPING_TIME_SERVICES", []):
        module = importlib.import_module(path)
        where = _where(module)
        services = [v for v in vars(module).values() if isinstance(v, Service)]
        if not services:
            raise ServiceError(f"{where}: defines no Service")
        for svc in services:
            svc.where = where
            if svc.name in found:
                raise ServiceError(f"{where}: Service {svc.name!r} is also declared in {found[svc.name][0].where}")
            found[svc.name] = (svc, module)
    known = {name: svc for name, (svc, _) in found.items()}
    for svc in known.values():
        svc.check(known)
    _check_kinds(known)
    for name, (svc, module) in found.items():
        _services[name] = svc
        _bundles[name] = b = bundle_of(module)
        _versioned.setdefault(b.digest, {})[name] = svc
        for clock_name, spec in svc.clocks.items():
            specs.register(clock_spec_name(name, clock_name), spec)
            specs.register(clock_spec_name(name, clock_name, b.digest), spec)
    specs.set_resolver(_resolve_spec)
    return known


def _check_kinds(known: dict[str, Service]) -> None:
    """Services that take one kind of subject name its key alike, and those that write its grammar write one: a
    subject is checked against one grammar (a Service that writes none takes the kind's)."""
    first: dict[str, Service] = {}
    for svc in known.values():
        spec = svc.subject
        seen = first.setdefault(spec.kind, svc)
        if seen.subject.pattern is None and spec.pattern is not None:
            first[spec.kind] = svc
        if seen.subject.key != spec.key or None not in (seen.subject.pattern, spec.pattern) and \
                seen.subject.pattern != spec.pattern:
            raise ServiceError(f"{svc.where}: subject kind {spec.kind!r} has key {spec.key!r} "
                               f"({spec.pattern or 'any text'}) here and {seen.subject.key!r} "
                               f"({seen.subject.pattern or 'any text'}) in {seen.where}; a kind's key is one grammar")


def clock_spec_name(service: str, clock: str, version: str | None = None) -> str:
    return f"{service}.{clock}@{version}" if version else f"{service}.{clock}"


def get(name: str, version: str | None = None) -> Service:
    """The Service as ``version`` declared it (the working tree's when None or when it is that version)."""
    if version:
        declared = _versioned.get(version)
        if declared is None:
            declared = _load_stored(version)
        if declared is not None:
            try:
                return declared[name]
            except KeyError:
                raise ServiceError(f"version {version[:15]} declares no Service {name!r} "
                                   f"(it declares {', '.join(sorted(declared))})") from None
        log.warning("version %s of %s is not stored; running the working tree's", version[:15], name)
    try:
        return _services[name]
    except KeyError:
        raise ServiceError(f"no Service {name!r} is registered (known: {', '.join(sorted(_services))})") from None


def _load_stored(digest: str) -> dict[str, Service] | None:
    row = Version.objects.filter(pk=digest).first()
    if row is None:
        return None
    modules = bundles.load_stored(digest, row.sources)
    label = row.name or digest[:15]
    found: dict[str, Service] = {}
    for mod_name, mod in modules.items():
        for value in vars(mod).values():
            if isinstance(value, Service) and value.name not in found:
                value.where = f"{row.sources[mod_name]['path']} @ {label}"
                found[value.name] = value
    known = {**_services, **found}
    for svc in found.values():
        svc.check(known, stored=True)
        for clock_name, spec in svc.clocks.items():
            specs.register(clock_spec_name(svc.name, clock_name, digest), spec)
    _versioned[digest] = found
    return found


def _resolve_spec(name: str) -> specs.ClockSpec | None:
    """A clock spec named with its version (``annual-return.file@sha256:…``) loads that version."""
    base, _, version = name.partition("@")
    service, _, clock = base.rpartition(".")
    if not version or not service:
        return None
    svc = get(service, version)
    return svc.clocks.get(clock)


def bundle(name: str) -> Bundle:
    return _bundles[name]


def all_services() -> dict[str, Service]:
    return dict(_services)


# -- versions: stored, deployed, pinned ----------------------------------------------------------------
def store(b: Bundle, *, name: str = "", services: list[str] | None = None) -> Version:
    """The bundle's Version row (made if new). Never edited afterwards, save to give it a name once."""
    if services is None:
        services = sorted(n for n, bb in _bundles.items() if bb.digest == b.digest)
    row, _ = Version.objects.get_or_create(pk=b.digest, defaults={
        "module": b.module, "services": services, "sources": b.stored(), "created_at": wall_now(), "name": name})
    if name and row.name != name:
        if row.name:
            raise ServiceError(f"version {b.short} is already named {row.name!r}")
        row.name = name
        row.save(update_fields=["name"])
    return row


def deploy_domain(domain: str) -> str:
    """Where a domain's deploys are: "live" for every brand's live clock (a deploy reaches them all), else
    the test clock's own (a test clock replays deploys)."""
    return LIVE if is_live(domain) else domain


def live_version(service: str, *, domain: str, now: datetime) -> str:
    """The version new work of ``service`` pins in ``domain`` at ``now``: its latest deploy there, else the
    working tree's."""
    domain = deploy_domain(domain)
    b = batches.current()
    if b is None:
        deployed = (Deploy.objects.filter(domain=domain, service=service, at__lte=now).order_by("-at", "-id")
                    .values_list("version_id", flat=True).first())
        return deployed or bundle(service).digest
    # In the tick, a domain's deploys of a service are read once a batch (a deploy since drops them).
    cache = b.cache("services.deploys", tables=("timers_deploy",))
    rows = cache.get((domain, service))
    if rows is None:
        with b.quiet():
            rows = cache[(domain, service)] = list(
                Deploy.objects.filter(domain=domain, service=service).order_by("-at", "-id")
                .values_list("at", "version_id"))
    return next((version for at, version in rows if at <= now), None) or bundle(service).digest


def pin(service: str, *, domain: str, now: datetime) -> str:
    """Pin new work (a subscription, a job) to the version live for it; the working tree's is stored first."""
    digest = live_version(service, domain=domain, now=now)
    if digest == bundle(service).digest:
        b = batches.current()
        stored = None if b is None else b.cache("services.stored_versions", tables=("timers_version",))
        if stored is None or digest not in stored:
            store(bundle(service))
            if stored is not None:
                stored[digest] = True
    return digest


def deploy(*, service: str, version: Version, domain: str, at: datetime) -> Deploy:
    """From ``at`` in ``domain``'s time, new work of ``service`` pins ``version``. Re-arms and rewrites
    nothing: what is armed keeps the version it was armed under (a rollback is a deploy of an older one)."""
    if service not in version.services:
        raise ServiceError(f"version {version.label} does not declare {service!r} "
                           f"(it declares {', '.join(version.services)})")
    return Deploy.objects.create(domain=deploy_domain(domain), service=service, version=version, at=at, created_at=wall_now())


def module_bundle(path: str) -> tuple[Bundle, list[Service]]:
    """A Service module not necessarily live (a deploy's, say): its bundle and its Services, validated."""
    try:
        module = importlib.import_module(path)
    except ImportError as exc:
        raise ServiceError(f"cannot import {path!r}: {exc}") from None
    found = [v for v in vars(module).values() if isinstance(v, Service)]
    if not found:
        raise ServiceError(f"{_where(module)}: defines no Service")
    known = {**_services, **{s.name: s for s in found}}
    for svc in found:
        svc.where = _where(module)
        svc.check(known)
    # Not cached as the version's Services: a pinned version runs from its stored source (get, _load_stored).
    return bundle_of(module), found


def module_for(ref: str) -> str:
    """A Service module's dotted path from what a person writes: the path itself, or its file as the seed
    writes it (``services/annual_return.py``), relative to the checkout or to a package that KT_SERVICES'
    modules live in (each of their packages, outermost first), or absolute."""
    if not ref.endswith(".py") and "/" not in ref and "\\" not in ref:
        return ref
    roots: dict[Path, str] = {Path(settings.BASE_DIR).resolve(): ""}
    for path in getattr(settings, "KEEPING_TIME_SERVICES", []):
        parts = path.split(".")[:-1]
        for n in range(1, len(parts) + 1):
            package = ".".join(parts[:n])
            try:
                where = Path(importlib.import_module(package).__file__ or "").resolve().parent
            except ImportError:
                continue
            roots.setdefault(where.parent if n == 1 else where, "" if n == 1 else package)
            roots.setdefault(where, package)
    found: dict[str, Path] = {}
    for root, package in roots.items():
        file = (root / ref).resolve()
        if not file.is_file() or file.suffix != ".py":
            continue
        try:
            rel = file.relative_to(root).with_suffix("")
        except ValueError:  # an absolute path elsewhere: as its package's modules are named
            continue
        found.setdefault(".".join(p for p in (package, *rel.parts) if p), file)
    if not found:
        raise ServiceError(f"no Service file {ref} in the checkout or the packages of KT_SERVICES "
                           "(or name its module: services.examples.apis_tax.annual_return)")
    if len(set(found.values())) > 1:
        raise ServiceError(f"{ref} names {len(found)} files ({', '.join(sorted(found))}): name its module")
    return min(found, key=len)


def store_module(path: str, *, name: str = "") -> Version:
    b, found = module_bundle(path)
    return store(b, name=name, services=sorted(s.name for s in found))


def version_named(ref: str) -> Version:
    """A version by its name (2027-06), its full digest, or a unique prefix of it (sha256:3f9a0c1d)."""
    row = Version.objects.filter(name=ref).first() or Version.objects.filter(pk=ref).first()
    if row is None and ref.startswith("sha256:") and len(ref) >= 15:
        rows = list(Version.objects.filter(pk__startswith=ref)[:2])
        row = rows[0] if len(rows) == 1 else None
    if row is None:
        raise ServiceError(f"no version {ref!r} (a name such as 2027-06, or a sha256:… prefix)")
    return row


def live_services(*, domain: str, now: datetime) -> dict[str, str]:
    """Each Service's version live in ``domain`` at ``now``."""
    return {name: live_version(name, domain=domain, now=now) for name in _services}


def record_working_tree(*, now: datetime) -> list[Deploy]:
    """At start-up: a working-tree bundle whose hash is new is stored and deployed on the live clock."""
    made = []
    for name, b in _bundles.items():
        if Deploy.objects.filter(domain="live", service=name, version_id=b.digest).exists():
            continue
        if Version.objects.filter(pk=b.digest).exists() and Deploy.objects.filter(domain="live", service=name).exists():
            continue  # known, and deliberately not the live one (a rollback): leave it
        made.append(deploy(service=name, version=store(b), domain="live", at=now))
    return made
