"""Services, registered by module path in settings.KEEPING_TIME_SERVICES, and their bundles.

A version is a bundle: the Service module and every project-local module it imports, hashed (sha256).
"""

from __future__ import annotations

import hashlib
import importlib
import inspect
import sys
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

from django.conf import settings

from calendars import specs

from .declare import Service, ServiceError


@dataclass(frozen=True)
class Bundle:
    version: str  # sha256:…
    files: tuple[str, ...]

    @property
    def short(self) -> str:
        return self.version[:15]


_services: dict[str, Service] = {}
_bundles: dict[str, Bundle] = {}


def _project_root() -> Path:
    return Path(settings.BASE_DIR).resolve()


def _local(module: ModuleType) -> bool:
    path = getattr(module, "__file__", None)
    if not path:
        return False
    p = Path(path).resolve()
    root = _project_root()
    return root in p.parents and ".venv" not in p.parts and "site-packages" not in p.parts


def bundle_of(module: ModuleType) -> Bundle:
    """Hash the module and every project-local module it imports, transitively, in a stable order."""
    seen: dict[str, ModuleType] = {}
    todo = [module]
    while todo:
        m = todo.pop()
        if m.__name__ in seen or not _local(m):
            continue
        seen[m.__name__] = m
        for value in vars(m).values():
            dep = value if inspect.ismodule(value) else sys.modules.get(getattr(value, "__module__", "") or "")
            if dep is not None and dep.__name__ not in seen and _local(dep) and not dep.__name__.startswith(
                    ("calendars", "timers", "services.declare", "services.periods")):
                todo.append(dep)
    digest = hashlib.sha256()
    root = _project_root()
    files = []
    for name in sorted(seen):
        path = Path(seen[name].__file__).resolve()
        rel = str(path.relative_to(root))
        files.append(rel)
        digest.update(rel.encode() + b"\0" + path.read_bytes() + b"\0")
    return Bundle("sha256:" + digest.hexdigest(), tuple(files))


def load(paths: list[str] | None = None) -> dict[str, Service]:
    """Import each Service module, validate every Service, and register its clocks."""
    found: dict[str, tuple[Service, ModuleType]] = {}
    for path in paths if paths is not None else getattr(settings, "KEEPING_TIME_SERVICES", []):
        module = importlib.import_module(path)
        where = str(Path(module.__file__).resolve().relative_to(_project_root()))
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
    for name, (svc, module) in found.items():
        _services[name] = svc
        _bundles[name] = bundle_of(module)
        for clock_name, spec in svc.clocks.items():
            specs.register(clock_spec_name(name, clock_name), spec)
    return known


def clock_spec_name(service: str, clock: str) -> str:
    return f"{service}.{clock}"


def get(name: str) -> Service:
    try:
        return _services[name]
    except KeyError:
        raise ServiceError(f"no Service {name!r} is registered (known: {', '.join(sorted(_services))})") from None


def bundle(name: str) -> Bundle:
    return _bundles[name]


def all_services() -> dict[str, Service]:
    return dict(_services)
