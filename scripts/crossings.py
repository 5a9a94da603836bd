"""How often three traced paths cross between the apps, and enter each module: the measure of docs/architecture.md.

    .venv/bin/python scripts/crossings.py [--top 8]

On a fresh SQLite database of its own (the examples loaded as `scripts/demo` loads them), it runs, each under a
profiler hook that sees every Python call:
- five members' acts in the delivery portal (take a Task, extend its hold, mark it done, mark a clock done,
  acknowledge one), each one POST through Django's test client;
- ``POST /subjects/<id>/events`` (a notice received, which mints its reply) through the API;
- an advance of a test clock by 45 days while a webhook endpoint hears every event (a real HTTP far end here).

A call *enters* a module when the caller's function lives in another module of the apps (timers, calendars,
services, portals, agents, keeping_time), and *crosses* when it lives in another app. What is counted is call
sites, (calling module, line, called function), each once however often it runs: a loop that mints thirty ids is
one line of code that enters timers.ids. Calls within a module, and into Django or the standard library, count
for neither. It prints, for each path, the call sites that cross between apps (and how many calls they made) and
the modules entered from the most sites.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import tempfile
import threading
from collections import Counter
from contextlib import contextmanager
from datetime import timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from io import StringIO
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
APPS = ("timers", "calendars", "services", "portals", "agents", "keeping_time")


class Tally:
    """The call sites a path runs through: (calling module, line, called function) into each module. A site
    counts once however often it runs, so a loop that mints thirty ids is one site, as it is one line of code."""

    def __init__(self) -> None:
        self.sites: dict[str, set[tuple[str, int, object]]] = {}
        self.crossing_sites: set[tuple[str, int, object]] = set()
        self.calls = 0  # calls between apps, every time they run

    @property
    def crossings(self) -> int:
        return len(self.crossing_sites)

    @property
    def entered(self) -> Counter[str]:
        return Counter({module: len(sites) for module, sites in self.sites.items()})

    def hook(self, frame, event, arg):  # noqa: ANN001 - sys.setprofile's signature
        if event != "call":
            return
        callee = frame.f_globals.get("__name__", "")
        caller_frame = frame.f_back
        if caller_frame is None:
            return
        caller = caller_frame.f_globals.get("__name__", "")
        app, from_app = callee.split(".", 1)[0], caller.split(".", 1)[0]
        if app not in APPS or from_app not in APPS or callee == caller or ".migrations." in callee:
            return
        site = (caller, caller_frame.f_lineno, frame.f_code)
        self.sites.setdefault(callee, set()).add(site)
        if app != from_app:
            self.crossing_sites.add(site)
            self.calls += 1


@contextmanager
def traced(tally: Tally):
    threading.setprofile(tally.hook)
    sys.setprofile(tally.hook)
    try:
        yield tally
    finally:
        sys.setprofile(None)
        threading.setprofile(None)  # type: ignore[arg-type]


def _setup() -> None:
    db = Path(tempfile.mkdtemp()) / "crossings.sqlite3"
    os.environ["DATABASE_URL"] = f"sqlite:///{db}"
    os.environ.setdefault("SECRET_KEY", "crossings-" + "x" * 40)
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "keeping_time.settings")
    os.environ.setdefault("EMAIL_URL", "dummymail://")  # DEBUG is off: the settings ask which backend, and none is wanted
    os.environ["KT_ALLOW_TARGETS"] = "127.0.0.1"  # the far end listens on this machine
    sys.path.insert(0, str(ROOT))
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)


def _run(*args: str) -> str:
    from django.core.management import call_command

    out = StringIO()
    call_command(*args, stdout=out)
    return out.getvalue()


def _load(example: str) -> dict:
    text = _run("loadexample", example)
    return {"tc": text.split("test clock ")[1].split()[0],
            "subjects": [line.split()[1] for line in text.splitlines() if line.startswith("subject ")]}


class FarEnd:
    """Answers every webhook 200 and counts them."""

    def __init__(self) -> None:
        far = self
        self.got = 0

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args) -> None:  # noqa: ANN002
                pass

            def do_POST(self) -> None:  # noqa: N802 - http.server's name
                self.rfile.read(int(self.headers.get("Content-Length") or 0))
                far.got += 1
                body = b"{}"
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.server.server_port}/hooks"


def _member(name: str):
    from django.contrib.auth import get_user_model
    from django.test import Client

    user = get_user_model().objects.get(username=name)
    user.set_password("pw")
    user.save()
    client = Client()
    assert client.login(username=name, password="pw")
    return client


def delivery_acts() -> list[tuple[str, Tally]]:
    """Five members' acts in the delivery portal, each traced alone."""
    from calendars.models import ClockItem

    forsale = _load("api_forsale")
    _run("tick", "--to", "2027-10-20T14:30:00Z", "--test-clock", forsale["tc"])
    acme = _load("apis_tax")
    _run("tick", "--to", "2028-04-11T14:00:00Z", "--test-clock", acme["tc"])
    _run("demousers")
    grace = _member("grace")
    page = grace.get("/portal/delivery/").content.decode()
    task = re.findall(r'data-task="(\w+)"', page)[0]
    acts = [("take a Task", grace, f"/portal/delivery/tasks/{task}/take"),
            ("extend its hold", grace, f"/portal/delivery/tasks/{task}/extend"),
            ("mark the Task done", grace, f"/portal/delivery/tasks/{task}/done")]
    # Hedy answers for Acme's late 2026 return dates (demousers hands them to her).
    hers = list(ClockItem.objects.filter(clock__domain=acme["tc"], clock__answers_for="Hedy Lamarr")
                .exclude(status=ClockItem.Status.SATISFIED).order_by("due_at", "clock_id", "item"))
    hedy = _member("hedy")
    first, second = hers[0], hers[1]
    acts += [("acknowledge a clock", hedy, f"/portal/delivery/clocks/{first.clock_id}/{first.item}/acknowledge"),
             ("mark a clock done", hedy, f"/portal/delivery/clocks/{second.clock_id}/{second.item}/done")]
    out = []
    for what, client, path in acts:
        with traced(Tally()) as t:
            status = client.post(path).status_code
        out.append((f"{what} ({status})", t))
    return out


def _api(method: str, path: str, key: str, body: dict | None = None):
    from django.test import Client

    return Client().generic(method, path, json.dumps(body or {}), content_type="application/json",
                            HTTP_AUTHORIZATION=f"Bearer {key}")


def subject_event() -> tuple[str, Tally]:
    from calendars.models import Subject

    ids = _load("apis_tax")
    key = _run("createapikey", "--brand", "apis.tax").split()[-1]
    subject = Subject.objects.get(pk=ids["subjects"][0])
    with traced(Tally()) as t:
        r = _api("POST", f"/subjects/{subject.id}/events", key,
                 {"type": "notice.received", "key": "CP2000", "data": {"reply_by": "2027-06-01"}})
    return f"POST /subjects/<id>/events ({r.status_code}, {len(r.json().get('data', []))} job)", t


def advance_45_days() -> tuple[str, Tally, dict]:
    from timers.models import Commit, TestClock

    ids = _load("apis_tax")
    key = _run("createapikey", "--brand", "apis.tax").split()[-1]
    far = FarEnd()
    r = _api("POST", "/webhook_endpoints", key, {"url": far.url, "enabled_events": ["*"]})
    assert r.status_code in (200, 201), r.content
    clock = TestClock.objects.get(pk=ids["tc"])
    to = clock.frozen_time + timedelta(days=45)
    fired_before = Commit.objects.filter(domain=clock.id).count()
    with traced(Tally()) as t:
        _run("tick", "--to", to.isoformat().replace("+00:00", "Z"), "--test-clock", clock.id)
        from timers import outbox

        outbox.deliver(None)
    fired = Commit.objects.filter(domain=clock.id).count() - fired_before
    return f"advance 45 days ({fired} timers fired, {far.got} webhooks heard)", t, {}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--top", type=int, default=8, help="modules to list per path")
    args = parser.parse_args()
    _setup()
    rows: list[tuple[str, Tally]] = []
    rows += delivery_acts()
    rows.append(subject_event())
    label, tally, _ = advance_45_days()
    rows.append((label, tally))
    for label, t in rows:
        most = ", ".join(f"{m} {n}" for m, n in t.entered.most_common(args.top))
        print(f"{label}: {t.crossings} call sites cross between apps ({t.calls} calls); entered most: {most}")
    acts = rows[:-2]
    worst = max((n, m, label) for label, t in acts for m, n in t.entered.items())
    print(f"a delivery-portal act enters one module from {worst[0]} call sites at most ({worst[1]}, {worst[2]})")
    domain = max((n, m, label) for label, t in acts for m, n in t.entered.items()
                 if m.split(".", 1)[0] in ("calendars", "services"))
    print(f"... and one module of the domain (calendars, services) from {domain[0]} at most ({domain[1]}, {domain[2]})")


if __name__ == "__main__":
    main()
