"""A live fire against a timer committed alone, one at a time, alternated on one connection (issue 39's row).

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/kt_live_fire .venv/bin/python bench/live_fire.py \
        [-n 300] [--repeat 5]

Two lanes, alternated fire by fire, each timed from the call to its commit:

* **live fire**: a timer armed on a brand's live clock, owed 5 ms ago, then one step of the live worker
  (``Worker.step``, as ``tick --forever`` runs it, its sender left to its thread): the look, the lease's take,
  the position, the batch (fence, read, writes, record) and the release. The arming is not timed.
* **alone**: the least a durable fire can be: ``BEGIN``, an ``UPDATE … RETURNING`` marking one armed timer
  fired, an ``INSERT`` of a record row, ``COMMIT`` (four round trips, one WAL flush) on the same connection.

Prints first the ratio of medians (wall ms a fire; target <= 1.5x), then each round's medians and p95s of wall
ms, the CPU ms a fire of this process and of its PostgreSQL backend for each lane, and the load. Round trips are
counted on the wire for one more live fire of the last round (tests/timers/test_live_fire_trips.py holds them).
PostgreSQL only; the bench's own brand and table are made and dropped here.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import threading
import time
from datetime import timedelta
from functools import partial
from pathlib import Path

from bench_django import setup_django

TICKS = os.sysconf("SC_CLK_TCK")
BRAND = "bench.live_fire"
TARGET = 1.5
ALONE_TABLE = "bench_live_fire_record"


def proc_cpu(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICKS


class _SenderAlive(threading.Thread):
    def is_alive(self) -> bool:  # the step leaves its sends to a sender thread, as run() starts one
        return True


def p95(values: list[float]) -> float:
    return statistics.quantiles(values, n=20)[18] if len(values) >= 20 else max(values)


def one_round(n: int, tag: str, start: int) -> dict:
    from django.db import connection

    from timers.arming import timer_arm
    from timers.clock import WallClock, wall_now
    from timers.models import Timer
    from timers.tenants import brand_get_or_create
    from timers.worker import Worker

    live_brand = brand_get_or_create(name=BRAND)
    alone_brand = brand_get_or_create(name=f"{BRAND}.alone")
    worker = Worker(WallClock(), test_clocks=False)
    worker._sender = _SenderAlive()
    # The alone lane's timers: armed an hour ahead on another brand's clock, so no step fires them.
    later = wall_now() + timedelta(hours=1)
    for i in range(n):
        timer_arm(brand=alone_brand, key=f"job_{start + i}:deadline:alone:1", owed_at=later, handler="noop")
    alone_ids = list(Timer.objects.filter(brand=alone_brand, status="armed").order_by("id")
                     .values_list("id", flat=True)[:n])
    connection.ensure_connection()
    backend = connection.connection.info.backend_pid
    raw = connection.connection

    lanes: dict[str, dict[str, list[float]]] = {"live": {"wall": [], "me": [], "db": []},
                                                "alone": {"wall": [], "me": [], "db": []}}

    def timed(lane: str, call) -> None:
        me0, db0, w0 = time.process_time(), proc_cpu(backend), time.perf_counter()
        call()
        w1, me1, db1 = time.perf_counter(), time.process_time(), proc_cpu(backend)
        lanes[lane]["wall"].append((w1 - w0) * 1000)
        lanes[lane]["me"].append((me1 - me0) * 1000)
        lanes[lane]["db"].append((db1 - db0) * 1000)

    def alone(timer_id: int) -> None:
        with raw.transaction():
            row = raw.execute("UPDATE timers_timer SET status = 'fired', fired_at = now() WHERE id = %s "
                              "AND status = 'armed' RETURNING key", [timer_id]).fetchone()
            raw.execute(f"INSERT INTO {ALONE_TABLE} (key, at) VALUES (%s, now())", [row[0]])  # noqa: S608

    for i in range(n):
        timer_arm(brand=live_brand, key=f"job_{start + i}:deadline:now:1",
                  owed_at=wall_now() - timedelta(milliseconds=5), handler="noop")
        first, second = (("live", worker.step), ("alone", partial(alone, alone_ids[i])))[:: 1 if i % 2 else -1]
        timed(*first)
        timed(*second)
        time.sleep(0.002)  # a fire at a time, as the live lane's arrivals come, not back to back
    # One more live fire, its round trips counted on the wire (the lease kept from the round's fires, as a busy
    # worker's is).
    from tests.support.wire import traced

    timer_arm(brand=live_brand, key=f"job_{start + n}:deadline:now:1", owed_at=wall_now() - timedelta(milliseconds=5),
              handler="noop")
    trips, _ = traced(worker.step)
    fired = Timer.objects.filter(brand=live_brand, status="fired").count()
    if fired < start + n + 1:
        raise SystemExit(f"live_fire: {fired} of {start + n + 1} live timers fired")
    out = {lane: {"wall": statistics.median(v["wall"]), "p95": p95(v["wall"]),
                  "me": statistics.mean(v["me"]), "db": statistics.mean(v["db"])} for lane, v in lanes.items()}
    out["ratio"] = out["live"]["wall"] / out["alone"]["wall"]
    out["trips"] = trips
    out["load"] = os.getloadavg()[0]
    print(f"{tag}: {n} fires a lane · wall ms median / p95: live {out['live']['wall']:.2f} / {out['live']['p95']:.2f}"
          f", alone {out['alone']['wall']:.2f} / {out['alone']['p95']:.2f} = {out['ratio']:.2f}x · CPU ms a fire: "
          f"live {out['live']['me']:.2f} + db {out['live']['db']:.2f}, alone {out['alone']['me']:.2f} + db "
          f"{out['alone']['db']:.2f} · load {out['load']:.2f}", file=sys.stderr, flush=True)
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("-n", type=int, default=300)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    setup_django()
    from django.core.management import call_command
    from django.db import connection
    from tick_throughput import machine

    from timers.models import Brand

    if connection.vendor != "postgresql":
        print("live_fire: PostgreSQL only (DATABASE_URL=postgres://…)", file=sys.stderr)
        return 2
    call_command("migrate", verbosity=0)
    Brand.objects.filter(name__startswith=BRAND).delete()
    with connection.cursor() as cur:
        cur.execute(f"DROP TABLE IF EXISTS {ALONE_TABLE}")
        cur.execute(f"CREATE TABLE {ALONE_TABLE} (id bigserial PRIMARY KEY, key text NOT NULL, "
                    "at timestamptz NOT NULL)")
    try:
        one_round(30, "warm-up", 0)
        rounds = [one_round(args.n, f"round {r + 1}", 31 + r * (args.n + 1)) for r in range(args.repeat)]
    finally:
        Brand.objects.filter(name__startswith=BRAND).delete()
        with connection.cursor() as cur:
            cur.execute(f"DROP TABLE IF EXISTS {ALONE_TABLE}")
    med = statistics.median
    ratio = med([r["ratio"] for r in rounds])
    each = ", ".join(f"{r['ratio']:.2f}x" for r in rounds)
    m = machine()
    print(f"# live_fire · {m['nproc']} CPUs · {m['cpu']} · {m['pg_settings']} · N {args.n} a lane × {args.repeat} rounds · load "
          f"{' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    print(f"a live fire ÷ a timer committed alone, wall ms median: {med([r['live']['wall'] for r in rounds]):.2f} ÷ "
          f"{med([r['alone']['wall'] for r in rounds]):.2f} = {ratio:.2f}x [target <= {TARGET}x: "
          f"{'met' if ratio <= TARGET else 'NOT met'}] (rounds {each})")
    print(f"  p95 wall ms: live {med([r['live']['p95'] for r in rounds]):.2f}, alone "
          f"{med([r['alone']['p95'] for r in rounds]):.2f}")
    print(f"  CPU ms a fire (process + backend): live {med([r['live']['me'] for r in rounds]):.2f} + "
          f"{med([r['live']['db'] for r in rounds]):.2f}, alone {med([r['alone']['me'] for r in rounds]):.2f} + "
          f"{med([r['alone']['db'] for r in rounds]):.2f}")
    print(f"  round trips a live fire, its lease kept from the fire before: {rounds[-1]['trips']} (alone: 4)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
