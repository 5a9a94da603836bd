"""Real processes: `manage.py` commands on the test's PostgreSQL database, as a worker runs them."""

from __future__ import annotations

import os
import subprocess
import sys

from django.db import connection

from tests.support import ROOT


def worker_env(batch: int = 50) -> dict:
    s = connection.settings_dict
    env = dict(os.environ)
    env["DATABASE_URL"] = f"postgres://{s['USER']}@{s['HOST'] or '127.0.0.1'}:{s['PORT'] or 5432}/{s['NAME']}"
    env["DJANGO_SETTINGS_MODULE"] = "keeping_time.settings"
    env["KT_BATCH_SIZE"] = str(batch)
    return env


def spawn(*args: str, env: dict) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "manage.py", *args], cwd=ROOT, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
