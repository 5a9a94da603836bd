"""Outbox throughput: sends claimed and recorded in sets, against the row-at-a-time sender it replaced.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/kt_bench .venv/bin/python bench/outbox_throughput.py \
        [--n 5000 30000] [--repeat 3]

For each N, N pending outbox rows of one bench domain are written (not measured), then drained to an
in-process far end that counts every submission it receives:

* sets: ``timers.outbox.deliver(domain)`` — one claim statement per set of rows (a lease, SKIP LOCKED),
  the sends, one receipt statement per set;
* row at a time (the baseline, as the sender was before): per row, a transaction that locks the first
  pending row with SKIP LOCKED and marks it sending, the send, and an update that marks it sent.

Both are verified at the far end: N submissions received, each once. Prints sends/s for each and the
ratio. Exit status: 0, 2 when not on PostgreSQL, 3 when a verification fails.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import time

from bench_django import setup_django

DOMAIN = "tc_bench_outbox"


def fill(n: int) -> None:
    from timers.clock import wall_now
    from timers.models import Outbox

    Outbox.objects.filter(domain=DOMAIN).delete()
    now = wall_now()
    Outbox.objects.bulk_create(
        [Outbox(id=f"sub_bench{i:09d}", domain=DOMAIN, key=f"job_{i}:rung:notice 30d:2027", attempt=1,
                transport="bench", payload={"to": "Ada Lovelace", "n": i}, created_at=now) for i in range(n)],
        batch_size=5000)


def row_at_a_time(transport) -> int:
    """The sender before leases: a row, two commits, a send."""
    from django.db import transaction

    from timers.clock import wall_now
    from timers.models import Outbox

    sent = 0
    qs = Outbox.objects.filter(domain=DOMAIN, status__in=["pending", "sending"])
    while True:
        with transaction.atomic():
            row = qs.select_for_update(skip_locked=True).order_by("created_at", "id").first()
            if row is None:
                return sent
            row.status = "sending"
            row.claimed_by = "bench"
            row.save(update_fields=["status", "claimed_by"])
        receipt = transport.send(row.id, row.payload)
        Outbox.objects.filter(pk=row.pk).update(status="sent", receipt=receipt, sent_at=wall_now())
        sent += 1


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--n", type=int, nargs="+", default=[5000, 30000])
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    setup_django()
    from django.core.management import call_command
    from django.db import connection

    from timers import outbox, transports
    from timers.models import Outbox

    if connection.vendor != "postgresql":
        print("outbox_throughput: PostgreSQL only (set DATABASE_URL)")
        return 2
    call_command("migrate", verbosity=0)
    print(f"# outbox throughput · {platform.processor() or platform.machine()} · {os.cpu_count()} cores · "
          f"PostgreSQL {connection.pg_version // 10000} · in-process far end")
    try:
        for n in args.n:
            rates: dict[str, list[float]] = {"sets": [], "row at a time": []}
            for _ in range(args.repeat):
                for way in rates:
                    fill(n)
                    far = transports.RecordingTransport()
                    transports.register("bench", far)
                    t = time.perf_counter()
                    if way == "sets":
                        outbox.deliver(DOMAIN)
                    else:
                        row_at_a_time(far)
                    elapsed = time.perf_counter() - t
                    if len(far.received) != n or far.sent_twice() or \
                            Outbox.objects.filter(domain=DOMAIN).exclude(status="sent").exists():
                        print(f"verification failed: {way} N={n}: {len(far.received)} received, "
                              f"{far.sent_twice()} twice")
                        return 3
                    rates[way].append(n / elapsed)
            sets, rows = statistics.median(rates["sets"]), statistics.median(rates["row at a time"])
            print(f"N={n:>6}  sets {sets:>8,.0f} sends/s · row at a time {rows:>6,.0f} sends/s · "
                  f"ratio {sets / rows:.1f}× (median of {args.repeat})")
    finally:
        Outbox.objects.filter(domain=DOMAIN).delete()
    return 0


if __name__ == "__main__":
    sys.exit(main())
