"""khal, a real calendar client, reading a feed in a zone of its own."""

from __future__ import annotations

import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest


def khal_binary() -> Path | None:
    """khal from the venv (pip, the dev extra) or the system (Debian's package)."""
    venv = Path(sys.executable).with_name("khal")
    if venv.exists():
        return venv
    found = shutil.which("khal")
    return Path(found) if found else None


def khal_calendar(tmp_path: Path, body: bytes, zone: str) -> Callable[..., str]:
    """khal whose local zone is ``zone``, with the feed imported into a vdir of its own: a function that runs
    a khal command on it and returns what it prints (ASCII symbols: an all-day range is |-> <-> ->|, an
    alarm (A)). Skips the test where khal is not installed."""
    binary = khal_binary()
    if binary is None:
        pytest.skip("khal is not installed (pip install -e '.[dev]', or apt-get install khal)")
    vdir = tmp_path / "cal"
    vdir.mkdir()
    config = tmp_path / "khal.conf"
    config.write_text(
        f"[calendars]\n[[feed]]\npath = {vdir}\ntype = calendar\n"
        f"[locale]\nlocal_timezone = {zone}\ndefault_timezone = {zone}\ntimeformat = %H:%M\n"
        "dateformat = %Y-%m-%d\nlongdateformat = %Y-%m-%d\ndatetimeformat = %Y-%m-%d %H:%M\n"
        "longdatetimeformat = %Y-%m-%d %H:%M\nfirstweekday = 0\nunicode_symbols = False\n"
        "[default]\ndefault_calendar = feed\n"
    )
    (tmp_path / "feed.ics").write_bytes(body)
    env = {"XDG_DATA_HOME": str(tmp_path / "data"), "XDG_CONFIG_HOME": str(tmp_path / "config"),
           "HOME": str(tmp_path), "PATH": "/usr/bin:/bin", "TZ": zone, "LANG": "C.UTF-8"}

    def khal(*args: str) -> str:
        return subprocess.run([str(binary), "-c", str(config), *args], env=env, capture_output=True, text=True,
                              timeout=120, check=True).stdout

    khal("import", "--batch", "-a", "feed", str(tmp_path / "feed.ics"))
    return khal
