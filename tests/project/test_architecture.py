"""The house's rules, read from the code's own imports (docs/architecture.md): the floors point one way, no
module imports another in a circle (at the top or inside a function), no module reaches for another app's
private names, and no module outgrows a room. No database: the sources are parsed, nothing is imported.
"""

from __future__ import annotations

import ast
from pathlib import Path

from tests.support import ROOT

# Bottom up: an app imports only the apps below it (portals and agents share a floor and import neither).
FLOORS = (("timers",), ("calendars",), ("services",), ("portals", "agents"), ("keeping_time",))
APPS = tuple(app for floor in FLOORS for app in floor)
FLOOR_OF = {app: n for n, floor in enumerate(FLOORS) for app in floor}
MOST_LINES = 650
# The tick is one loop over one heap, read top to bottom: it keeps its room whole (docs/architecture.md).
LONGER = {"timers/engine.py"}


def _modules() -> dict[str, Path]:
    found = {}
    for app in APPS:
        for path in sorted((ROOT / app).rglob("*.py")):
            if "migrations" in path.parts:
                continue
            name = ".".join(path.relative_to(ROOT).with_suffix("").parts)
            found[name.removesuffix(".__init__")] = path
    return found


MODULES = _modules()


def _base(module: str, node: ast.ImportFrom) -> str:
    if not node.level:
        return node.module or ""
    package = module.split(".") if MODULES[module].name == "__init__.py" else module.split(".")[:-1]
    package = package[: len(package) - node.level + 1]
    return ".".join([*package, *([node.module] if node.module else [])])


def _known(name: str) -> str | None:
    while name and name not in MODULES:
        name = name.rpartition(".")[0]
    return name or None


def _imports(module: str) -> list[tuple[str, str, int]]:
    """(imported module, name taken from it or "", line) of every import the module makes, at the top or
    inside a function, leaving out what only a type checker reads (``if TYPE_CHECKING:``)."""
    tree = ast.parse(MODULES[module].read_text())
    out: list[tuple[str, str, int]] = []

    def walk(node: ast.AST) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and "TYPE_CHECKING" in ast.unparse(child.test):
                continue
            if isinstance(child, ast.Import):
                out.extend((a.name, "", child.lineno) for a in child.names)
            elif isinstance(child, ast.ImportFrom):
                base = _base(module, child)
                for a in child.names:
                    whole = f"{base}.{a.name}"
                    out.append((whole, "", child.lineno) if whole in MODULES else (base, a.name, child.lineno))
            else:
                walk(child)

    walk(tree)
    return out


EDGES = {m: {(k, name, line) for imported, name, line in _imports(m) if (k := _known(imported)) and k != m}
         for m in MODULES}


def _app(module: str) -> str:
    return module.split(".", 1)[0]


def test_the_apps_import_downward_only():
    upward = [f"{MODULES[m].relative_to(ROOT)}:{line} imports {k}" for m, edges in EDGES.items()
              for k, _, line in edges
              if _app(k) != _app(m) and FLOOR_OF[_app(k)] >= FLOOR_OF[_app(m)]]
    assert not upward, "an import climbs a floor (or crosses one):\n" + "\n".join(sorted(upward))


def test_no_module_imports_another_in_a_circle():
    graph = {m: {k for k, _, _ in edges} for m, edges in EDGES.items()}
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    circles: list[list[str]] = []

    def visit(v: str) -> None:  # Tarjan's strongly connected components
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            part = []
            while True:
                w = stack.pop()
                part.append(w)
                if w == v:
                    break
            if len(part) > 1:
                circles.append(sorted(part))

    for m in sorted(graph):
        if m not in index:
            visit(m)
    assert not circles, "modules that import each other in a circle: " + "; ".join(" ↔ ".join(c) for c in circles)


def test_no_module_takes_a_private_name_from_another_app():
    private = [f"{MODULES[m].relative_to(ROOT)}:{line} takes {k}.{name}" for m, edges in EDGES.items()
               for k, name, line in edges if name.startswith("_") and _app(k) != _app(m)]
    assert not private, "\n".join(sorted(private))


def test_no_module_outgrows_a_room():
    big = [f"{path.relative_to(ROOT)}: {lines} lines" for path in MODULES.values()
           if (lines := len(path.read_text().splitlines())) > MOST_LINES and path.relative_to(ROOT).as_posix() not in LONGER]
    assert not big, f"over {MOST_LINES} lines, to split by what they hold: " + ", ".join(sorted(big))
