"""A worker process for the lease tests: `tick --forever`'s loop (timers.worker.Worker over every brand's live
clock) with one more handler, ``far``, whose firing sends one submission to the far end (tests/support/far_end.py)
naming the key, the domain and the lease (holder, epoch) it fired under. SIGTERM stops it; it prints its
counts as one JSON line.

Run as ``python tests/support/lease_worker.py`` with DATABASE_URL, KT_NOTICES_TRANSPORT (the far end's URL),
KT_LEASE_SECONDS and FAR_FIRE_SECONDS (how long each firing takes, so a turn is long enough to be killed in).
"""

from __future__ import annotations

import json
import logging
import os
import signal
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "keeping_time.settings")

import django  # noqa: E402

django.setup()

from timers import handlers, lease  # noqa: E402
from timers.clock import WallClock  # noqa: E402
from timers.worker import Worker  # noqa: E402

PAUSE = float(os.environ.get("FAR_FIRE_SECONDS", "0"))


def far(f) -> None:
    held = lease.current(f.domain)
    if PAUSE:
        time.sleep(PAUSE)  # a slow firing: the turn is long enough to be killed in
    f.send("notices", {"key": f.timer.key, "domain": f.domain, "holder": held.holder, "epoch": held.epoch})


def main() -> None:
    logging.basicConfig(level=logging.WARNING)
    handlers.register("far", far, replace=True)
    worker = Worker(WallClock(max_sleep=0.2), test_clocks=False)

    def stop(signum, frame) -> None:
        worker.stop.set()

    signal.signal(signal.SIGTERM, stop)
    print(json.dumps({"ready": True, "pid": os.getpid(), "holder": lease.holder()}), flush=True)
    worker.run()
    print(json.dumps({"fired": worker.fired, "turns": worker.turns, "lost": worker.lost, "holder": lease.holder()}),
          flush=True)


if __name__ == "__main__":
    main()
