"""What the portal and console browser tests share: Debian's chromium, launched once per module by
Playwright's sync API, at a desktop width and a 390px phone, with axe-core for every page. Importing this
module skips the importing test module, with the reason, on a machine that cannot run them:

    from tests.support.browser import browser, expect, viewport_page  # noqa: F401  (fixtures: browser, page)
"""

from __future__ import annotations

import os

import pytest

from tests.support.axe import axe_missing

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
]
VIEWPORTS = {"desktop": {"width": 1280, "height": 900}, "phone": {"width": 390, "height": 844}}

if not os.access(CHROMIUM, os.X_OK):
    pytest.skip(f"{CHROMIUM} is missing: apt-get install -y chromium (scripts/test does)", allow_module_level=True)
if axe_missing():
    pytest.skip(axe_missing(), allow_module_level=True)
try:
    from playwright.sync_api import expect, sync_playwright
except ImportError:  # pragma: no cover - the dev extras install it
    pytest.skip("the playwright package is not importable: pip install -e '.[dev]'", allow_module_level=True)

__all__ = ["CHROMIUM", "VIEWPORTS", "browser", "expect", "viewport_page"]


@pytest.fixture(scope="module")
def browser():
    """One chromium for the module. Playwright's sync API keeps an asyncio loop marked running on this thread,
    and Django then refuses the ORM calls the tests make here, though no Django code runs on that loop (the
    pages are served by the live server's own thread): allowed for the module only."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("DJANGO_ALLOW_ASYNC_UNSAFE", "true")
        with sync_playwright() as pw:
            chromium = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, timeout=60_000)
            try:
                yield chromium
            finally:
                chromium.close()


@pytest.fixture(params=list(VIEWPORTS), name="page")  # imported as viewport_page, used as page
def viewport_page(request, browser):
    """A fresh page at each viewport (desktop, then a 390px phone), its script errors kept on ``page.errors`` and its
    viewport's name on ``page.viewport_name`` (for screenshots)."""
    context = browser.new_context(viewport=VIEWPORTS[request.param], locale="en-US")
    page = context.new_page()
    page.set_default_timeout(15_000)
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.errors = errors
    page.viewport_name = request.param
    yield page
    context.close()


def sign_in_to_console(page, base_url: str, username: str, password: str = "correct horse battery") -> None:
    """Sign in on the console's own page, as an owner does, and land on its index."""
    from playwright.sync_api import expect

    page.goto(f"{base_url}/admin/")
    page.get_by_label("Username").fill(username)
    page.get_by_label("Password").fill(password)
    page.get_by_role("button", name="Log in").click()
    expect(page).to_have_url(f"{base_url}/admin/")
