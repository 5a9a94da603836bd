"""Progress on a terminal: `tick` and `loadexample` in a real process whose stdout is a pseudo-terminal draw a
bar, then print what a pipe gets; on a pipe they print the same bytes as ever, and no bar."""

from __future__ import annotations

import fcntl
import os
import re
import select
import struct
import subprocess
import sys
import termios
from datetime import timedelta

import pytest
from django.db import connection

from tests.conftest import T0
from tests.support import ROOT
from timers import test_clocks
from timers.arming import timer_arm

pytestmark = [
    pytest.mark.postgresql("a real process on the test database: PostgreSQL"),
    pytest.mark.slow,
    pytest.mark.django_db(transaction=True),
]

ESC = "\x1b"
# What rich writes to draw and clear a bar: CSI sequences, and the \r that returns to the bar's line.
_CSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


def _env() -> dict:
    s = connection.settings_dict
    env = dict(os.environ)
    env["DATABASE_URL"] = f"postgres://{s['USER']}@{s['HOST'] or '127.0.0.1'}:{s['PORT'] or 5432}/{s['NAME']}"
    env["DJANGO_SETTINGS_MODULE"] = "keeping_time.settings"
    env["KT_BATCH_SIZE"] = "40"  # many flushes, so the bar moves
    env["TERM"] = "xterm-256color"
    env.pop("NO_COLOR", None)
    env.pop("COLUMNS", None)
    return env


def on_terminal(*args: str) -> str:
    """Run manage.py with stdout on a pseudo-terminal 120 columns wide; everything it drew there."""
    master, slave = os.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 120, 0, 0))
    proc = subprocess.Popen([sys.executable, "manage.py", *args], cwd=ROOT, env=_env(), stdin=subprocess.DEVNULL,
                            stdout=slave, stderr=subprocess.PIPE)
    os.close(slave)
    chunks = []
    while True:
        ready, _, _ = select.select([master], [], [], 120)
        assert ready, "the command stopped writing for two minutes"
        try:
            data = os.read(master, 65536)
        except OSError:  # EIO: the process closed its side
            break
        if not data:
            break
        chunks.append(data)
    os.close(master)
    assert proc.wait(timeout=120) == 0, proc.stderr.read()
    return b"".join(chunks).decode()


def on_pipe(*args: str) -> str:
    done = subprocess.run([sys.executable, "manage.py", *args], cwd=ROOT, env=_env(), capture_output=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr
    return done.stdout.decode()


def printed(terminal: str) -> str:
    """The lines left on the terminal once the transient bar is gone: the text after its last clear."""
    tail = terminal[terminal.rindex("\x1b[2K") + len("\x1b[2K"):]
    return _CSI.sub("", tail).replace("\r\n", "\n")


def _clock(brand, name: str):
    clock = test_clocks.test_clock_create(brand=brand, frozen_time=T0, name=name)
    for i in range(200):
        timer_arm(brand=brand, key=f"job_{i % 13}:task:r:{i}", owed_at=T0 + timedelta(hours=7 * i),
                  domain=clock.id, handler="noop")
    return clock


def test_tick_draws_a_bar_on_a_terminal_and_prints_what_a_pipe_gets(brand):
    drawn, piped = _clock(brand, "terminal"), _clock(brand, "pipe")
    terminal = on_terminal("tick", "90d", "--test-clock", drawn.id)
    pipe = on_pipe("tick", "90d", "--test-clock", piped.id)

    assert ESC not in pipe
    assert pipe == (f"{piped.id} · 2026-11-24 09:00Z → 2027-02-22 09:00Z · UTC · 200 fired · 0 held · "
                    "each instant in place order · 0 armed · 1 pass\n")
    # The bar: the clock and its target, a percentage, and the frozen time it has reached as batches land.
    assert f"{drawn.id} → 2027-02-22 09:00Z" in terminal
    assert "100%" in terminal
    reached = re.findall(r"(\d+)%", _CSI.sub("", terminal))
    assert len({int(p) for p in reached}) >= 3, reached  # it moved, batch by batch
    assert re.search(r"2026-1[12]-\d\d \d\d:\d\dZ", _CSI.sub("", terminal).split("2027-02-22 09:00Z", 1)[1])  # on the way
    # Then the same line the pipe got, and nothing of the bar left after it.
    assert printed(terminal) == pipe.replace(piped.id, drawn.id)


def test_tick_compare_counts_its_ways_on_a_terminal(brand):
    clock = _clock(brand, "compare")
    terminal = on_terminal("tick", "30d", "--compare", "--test-clock", clock.id)
    for n in (1, 2, 3):
        assert f"{clock.id} way {n} of 3" in terminal
    out = printed(terminal)
    assert out.splitlines()[-1].startswith("all 3 agree · sha256:")
    assert out == on_pipe("tick", "30d", "--compare", "--test-clock", clock.id)  # compare leaves the clock as it was


def test_loadexample_says_what_it_is_loading_on_a_terminal():
    pipe = on_pipe("loadexample", "apis_tax")
    terminal = on_terminal("loadexample", "apis_tax")
    assert ESC not in pipe and pipe.startswith("brand ")
    assert "loading apis_tax: the brand" in terminal
    assert "loading apis_tax: the annual-return bundles and the June 2027 deploy" in terminal
    clock_id = re.compile(r"tc_[A-Za-z0-9]+")
    # A load replaces the last one: the same ids (seeded) but the test clock's own.
    assert clock_id.sub("tc_", printed(terminal)) == clock_id.sub("tc_", pipe)
