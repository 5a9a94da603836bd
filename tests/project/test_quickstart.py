"""docs/quickstart.md runs as written: every ``sh`` block, in order, in one bash, against a fresh SQLite database,
with real processes (the server, the worker, the webhook listener) and real HTTP. Only the ports change (to free
ones), and ``manage.py`` is named by its path so the run's files land in a temporary folder."""

from __future__ import annotations

import http.server
import os
import re
import signal
import socket
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from tests.support import ROOT

pytestmark = pytest.mark.processes

DOC = ROOT / "docs" / "quickstart.md"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def blocks(text: str) -> list[str]:
    return re.findall(r"^```sh\n(.*?)^```", text, flags=re.S | re.M)


def _run(script: str, tmp_path: Path, api: int, hook: int, timeout: int = 240):
    script = script.replace("python manage.py", f"python {ROOT / 'manage.py'}")
    script = script.replace("127.0.0.1:8765", f"127.0.0.1:{api}").replace("8765", str(api))
    script = script.replace("4242", str(hook))
    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "SECRET_KEY", "DJANGO_SETTINGS_MODULE")}
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    proc = subprocess.Popen(["bash", "-euo", "pipefail", "-c", script], cwd=tmp_path, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        out, _ = proc.communicate(timeout=timeout)
    finally:
        try:
            os.killpg(proc.pid, signal.SIGKILL)  # whatever it left running
        except ProcessLookupError:
            pass
    return proc, out.decode()


def test_the_quickstart_never_meets_the_demo_and_stops_when_its_server_cannot_start(tmp_path):
    """Its ports are not the demo's (8000); with its port taken by another server, the first steps stop with
    the reason, and nothing runs on against that server."""
    text = DOC.read_text()
    assert "8000" not in "\n".join(blocks(text))
    other = http.server.HTTPServer(("127.0.0.1", 0), http.server.SimpleHTTPRequestHandler)
    threading.Thread(target=other.serve_forever, daemon=True).start()
    try:
        api = other.server_address[1]
        proc, out = _run("\n".join(blocks(text)[:2]) + "\necho STILL-RUNNING", tmp_path, api, _free_port(), 120)
    finally:
        other.shutdown()
    assert proc.returncode != 0 and "STILL-RUNNING" not in out, out
    assert f"port {api} is in use" in out, out
    # A server that stops as it starts (here: an address it cannot take): its own error, and the steps stop.
    (tmp_path / "again").mkdir()
    proc, out = _run("\n".join(blocks(text)[:2]).replace("runserver 8765", "runserver 127.0.0.1:nope") + "\necho STILL-RUNNING",
                     tmp_path / "again", _free_port(), _free_port(), 120)
    assert proc.returncode != 0 and "STILL-RUNNING" not in out, out
    assert "is not a valid port number" in out, out


def test_the_quickstart_runs_as_written(tmp_path):
    code = blocks(DOC.read_text())
    assert len(code) >= 8, "the quickstart's steps are sh blocks"
    api, hook = _free_port(), _free_port()
    script = "\n".join(code)
    script = script.replace("python manage.py", f"python {ROOT / 'manage.py'}")
    proc, text = _run(script, tmp_path, api, hook)
    assert proc.returncode == 0, text[-3000:]
    # Each step said what the doc says it says.
    assert '"object":"calendar"' in text and '"holidays":"US-DC"' in text and '"default":true' in text
    assert '"object":"subject"' in text and '"zone":"America/New_York"' in text
    assert re.search(r"sbn_\w+ · tax-plan · Acme Robotics · \$2,400\.00 a year · active · since 2027-01-20 14:00Z",
                     text)
    assert "2027-02-01  the 2026 return is minted" in text and "webcal://" in text
    events = re.findall(r"^\S+ \S+  (\S+)\s+\S+  evt_", text, flags=re.M)
    # The return's two dates (file, pay) are given to the customer's officer as the job opens, before its steps.
    assert events == ["clock.assigned", "clock.assigned", "job.opened", "job.waiting", "clock.notice",
                      "clock.notice", "clock.notice", "test_clock.ready"], text[-3000:]
    assert "Stopped after 8 events" in text
    assert re.search(r"2027-03-16  notice 30d · file · the 2026 return · US\s", text)
    assert (tmp_path / "quickstart.sqlite3").exists()


def test_the_quickstart_names_only_what_the_product_has():
    """Every command it runs is one of ours (a renamed or removed command fails here first, with its name)."""
    from django.core.management import get_commands

    names = set(re.findall(r"python manage\.py (\w+)", "\n".join(blocks(DOC.read_text()))))
    assert names and names <= set(get_commands()), names - set(get_commands())
