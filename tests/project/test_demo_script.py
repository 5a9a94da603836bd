"""scripts/demo as a person runs it: its printed links name the host and port it serves, and stopping it (SIGTERM
to the script, or Ctrl-C: SIGINT to its whole process group, as a terminal sends it) stops its server and its
worker too: nothing is left listening on its port. Real processes, on a SQLite file of its own."""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import time
from pathlib import Path

import pytest

from tests.support import ROOT

pytestmark = pytest.mark.processes


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _listening(port: int) -> bool:
    with socket.socket() as s:
        s.settimeout(0.5)
        return s.connect_ex(("127.0.0.1", port)) == 0


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A zombie (exited, not yet reaped by its parent) is gone for this purpose.
    stat = Path(f"/proc/{pid}/stat")
    return stat.exists() and stat.read_text().split(") ", 1)[1][0] != "Z"


@pytest.mark.parametrize("stop", ["SIGTERM", "Ctrl-C"])
def test_stopping_the_demo_stops_its_server_and_worker(tmp_path, stop):
    port = _free_port()
    # The set-up's npm step is the bootstrap's, not this test's: a stand-in npm keeps it from touching node_modules.
    bin_ = tmp_path / "bin"
    bin_.mkdir()
    (bin_ / "npm").write_text("#!/bin/sh\nexit 0\n")
    (bin_ / "npm").chmod(0o755)
    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "KT_FEED_HOST", "DJANGO_SETTINGS_MODULE")}
    env.update(PATH=f"{bin_}{os.pathsep}{env.get('PATH', '')}", PORT=str(port),
               DATABASE_URL=f"sqlite:///{tmp_path / 'demo.sqlite3'}", EMAIL_URL="consolemail://",
               SECRET_KEY=env.get("SECRET_KEY") or "x" * 10 + "abcdefghijklmnopqrstuvwxyz0123456789ABCD")
    log = (tmp_path / "demo.log").open("w+")
    demo = subprocess.Popen(["bash", str(ROOT / "scripts" / "demo")], cwd=ROOT, env=env, stdout=log,
                            stderr=subprocess.STDOUT, start_new_session=True)
    try:
        deadline = time.monotonic() + 400
        while not _listening(port):
            assert demo.poll() is None, Path(log.name).read_text()[-3000:]
            assert time.monotonic() < deadline, "the demo never served"
            time.sleep(1)
        text = Path(log.name).read_text()
        # The links it prints name where it serves.
        assert re.search(rf"customer portal  http://127\.0\.0\.1:{port}/portal/customer/session\?token=", text), text
        assert f"KT_FEED_HOST=127.0.0.1:{port} " in text
        children = [int(p) for p in subprocess.run(["pgrep", "-g", str(demo.pid)], capture_output=True,
                                                   text=True).stdout.split() if int(p) != demo.pid]
        assert children, "its server and worker"
        if stop == "SIGTERM":
            demo.send_signal(signal.SIGTERM)  # the script alone
        else:
            os.killpg(demo.pid, signal.SIGINT)  # the terminal's Ctrl-C: the whole foreground group
        demo.wait(timeout=60)
        deadline = time.monotonic() + 30
        while (_listening(port) or any(_alive(p) for p in children)) and time.monotonic() < deadline:
            time.sleep(0.5)
        assert not _listening(port), "its server still serves"
        assert not [p for p in children if _alive(p)], "a process it started outlived it"
    finally:
        try:
            os.killpg(demo.pid, signal.SIGKILL)  # whatever it left running (only its own group)
        except ProcessLookupError:
            pass
        log.close()
