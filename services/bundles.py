"""Bundles: a Service module and what it imports from its own package, hashed, stored and loaded back.

A pinned version runs from its stored source, never from the working tree: ``load_stored`` executes
each file in an isolated module namespace (``_kt_v_<hash>.<module>``) whose imports of the bundle's
own modules resolve to the bundle's copies. Everything else (services.declare, calendars, the standard
library, installed packages) is imported as usual: it is the runtime, not the brand's code.
"""

from __future__ import annotations

import builtins
import hashlib
import importlib
import inspect
import sys
import threading
import types
from dataclasses import dataclass
from pathlib import Path
from typing import Any

_lock = threading.RLock()


@dataclass(frozen=True)
class Source:
    module: str  # dotted name, as the working tree names it
    path: str  # the file, relative to its package's root (how headers and `versions check` print it)
    text: str


@dataclass(frozen=True)
class Bundle:
    digest: str  # sha256:…
    module: str  # the entry module
    sources: tuple[Source, ...]

    @property
    def version(self) -> str:
        return self.digest

    @property
    def files(self) -> tuple[str, ...]:
        return tuple(s.path for s in self.sources)

    @property
    def short(self) -> str:
        return self.digest[:15]

    def stored(self) -> dict[str, dict[str, str]]:
        return {s.module: {"path": s.path, "source": s.text} for s in self.sources}


def own_package(module_name: str) -> str:
    """The package a Service module belongs to: what it may import and still be part of its bundle."""
    return module_name.rpartition(".")[0] or module_name


def _in(name: str, package: str) -> bool:
    return name == package or name.startswith(package + ".")


def digest_of(sources: list[Source]) -> str:
    h = hashlib.sha256()
    for s in sorted(sources, key=lambda s: s.module):
        h.update(s.module.encode() + b"\0" + s.text.encode() + b"\0")
    return "sha256:" + h.hexdigest()


def bundle_of(module: types.ModuleType) -> Bundle:
    """The module and every module of its own package it imports, transitively, in a stable order."""
    package = own_package(module.__name__)
    seen: dict[str, types.ModuleType] = {}
    todo = [module]
    while todo:
        m = todo.pop()
        if m.__name__ in seen or not getattr(m, "__file__", None):
            continue
        seen[m.__name__] = m
        for value in vars(m).values():
            dep = value if inspect.ismodule(value) else sys.modules.get(getattr(value, "__module__", "") or "")
            if dep is not None and dep.__name__ not in seen and _in(dep.__name__, package):
                todo.append(dep)
    root = _package_root(module)
    sources = []
    for name in sorted(seen):
        path = Path(seen[name].__file__).resolve()
        try:
            rel = str(path.relative_to(root))
        except ValueError:
            rel = path.name
        sources.append(Source(name, rel, path.read_text()))
    return Bundle(digest_of(sources), module.__name__, tuple(sources))


def _package_root(module: types.ModuleType) -> Path:
    # The directory the module's top-level package sits in, so paths read like `services/examples/…`.
    path = Path(module.__file__).resolve()
    return path.parents[module.__name__.count(".")] if module.__name__.count(".") < len(path.parents) else path.parent


def namespace(digest: str) -> str:
    return f"_kt_v_{digest.removeprefix('sha256:')[:16]}"


def load_stored(digest: str, stored: dict[str, dict[str, str]]) -> dict[str, types.ModuleType]:
    """Execute a stored bundle in its own namespace; returns its modules by their working-tree names."""
    with _lock:
        return _Loader(digest, stored).load_all()


class _Loader:
    def __init__(self, digest: str, stored: dict[str, dict[str, str]]):
        self.ns = namespace(digest)
        self.digest = digest
        self.stored = stored
        self.modules: dict[str, types.ModuleType] = {}
        self.builtins = dict(vars(builtins), __import__=self._import)

    def load_all(self) -> dict[str, types.ModuleType]:
        for name in sorted(self.stored):
            self._get(name)
        return {name: self.modules[name] for name in self.stored}

    def _ours(self, name: str) -> bool:
        return any(_in(m, name) for m in self.stored)

    def _get(self, name: str) -> types.ModuleType:
        if name in self.modules:
            return self.modules[name]
        full = f"{self.ns}.{name}"
        mod = types.ModuleType(full)
        entry = self.stored.get(name)
        is_package = entry is None or entry["path"].endswith("__init__.py")
        mod.__dict__.update(__builtins__=self.builtins, __kt_name__=name,
                            __package__=full if is_package else full.rpartition(".")[0])
        mod.__kt_package__ = name if is_package else name.rpartition(".")[0]
        if is_package:
            mod.__path__ = []
        self.modules[name] = mod
        sys.modules[full] = mod  # dataclasses and typing look their module up while it executes
        parent, _, child = name.rpartition(".")
        if parent:
            setattr(self._get(parent), child, mod)
        if entry is not None:
            mod.__file__ = f"<{self.digest[:15]}>/{entry['path']}"
            exec(compile(entry["source"], mod.__file__, "exec"), mod.__dict__)  # noqa: S102 - the stored bundle
        return mod

    def _import(self, name: str, globals: dict[str, Any] | None = None, locals: Any = None,
                fromlist: tuple[str, ...] = (), level: int = 0) -> types.ModuleType:
        target = name
        if level > 0:
            pkg = (globals or {}).get("__kt_package__", "")
            base = pkg.rsplit(".", level - 1)[0] if level > 1 else pkg
            target = f"{base}.{name}" if name else base
        if not self._ours(target):
            if level > 0:
                raise ImportError(f"bundle {self.digest[:15]}: relative import of {target!r} outside the bundle")
            return importlib.__import__(name, globals, locals, fromlist, 0)
        mod = self._get(target)
        for item in fromlist or ():
            sub = f"{target}.{item}"
            if item == "*" or hasattr(mod, item):
                continue
            if self._ours(sub):
                self._get(sub)
            else:  # `from services import declare`: a runtime module beside the bundle's own
                setattr(mod, item, importlib.import_module(sub))
        if fromlist:
            return mod
        return self._get(target.split(".", 1)[0])
