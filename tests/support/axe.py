"""Accessibility checks for the browser tests: axe-core (from npm, tests/axe/package.json, installed by
scripts/bootstrap with ``npm ci --prefix tests/axe``) injected into a Playwright page.

    from tests.support.axe import assert_accessible
    assert_accessible(page)                      # fails on any serious or critical violation, listing each

``AXE_JS`` is the file injected; a test module that needs it skips with the reason when it is missing
(``axe_missing()``), as the browser tests skip without chromium.
"""

from __future__ import annotations

import json
from pathlib import Path

AXE_JS = Path(__file__).resolve().parents[1] / "axe" / "node_modules" / "axe-core" / "axe.min.js"
FAILING = ("serious", "critical")


def axe_missing() -> str | None:
    """Why axe cannot run here, or None."""
    if not AXE_JS.is_file():
        return f"{AXE_JS} is missing: npm ci --prefix tests/axe (scripts/bootstrap does)"
    return None


def violations(page, *, context: str | dict | None = None, options: dict | None = None) -> list[dict]:
    """axe's violations on the page as it is now (every impact), injecting axe.min.js once per document."""
    if not page.evaluate("() => typeof window.axe !== 'undefined'"):
        page.add_script_tag(path=str(AXE_JS))
    result = page.evaluate(
        "([context, options]) => window.axe.run(context || document, options || {})",
        [context, options or {"resultTypes": ["violations"]}],
    )
    return result["violations"]


def describe(found: list[dict]) -> str:
    """One paragraph per violation: its id, impact, help and link, and each node's target and summary."""
    lines = []
    for v in found:
        lines.append(f"[{v['impact']}] {v['id']}: {v['help']} ({v['helpUrl']})")
        for node in v["nodes"][:10]:
            lines.append(f"    {json.dumps(node['target'])}: {node.get('failureSummary', '').strip()}"
                         .replace("\n", "\n      "))
        if len(v["nodes"]) > 10:
            lines.append(f"    … and {len(v['nodes']) - 10} more")
    return "\n".join(lines)


def assert_accessible(page, *, what: str = "", context: str | dict | None = None,
                      options: dict | None = None) -> list[dict]:
    """Fail if axe finds a serious or critical violation on the page, printing every one found; returns the
    milder ones (minor, moderate) so a test may look at them."""
    found = violations(page, context=context, options=options)
    bad = [v for v in found if v.get("impact") in FAILING]
    if bad:
        report = describe(bad)
        print(report)
        raise AssertionError(f"axe: {len(bad)} serious or critical violation(s) on {what or page.url}:\n{report}")
    return found
