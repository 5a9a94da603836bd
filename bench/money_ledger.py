"""How the ledger reads back (services/ledger.py): the brand's balance, every customer's statements and every
member's earnings, set queries against a query per job (the ledger read the naive way), in the same process.

```sh
DATABASE_URL=postgres://postgres@127.0.0.1:5432/kt_bench .venv/bin/python bench/money_ledger.py [--n 1000 10000]
```

For each N, N lapsed jobs with a hold are written with bulk inserts (not measured), each with its four lines
(hold, an act's charge, its member's pay, the release), across N/10 customers and 3 members. Then, timed
(median of --repeat), with the client's and the PostgreSQL backend's CPU seconds:

- sets: ``brand_balance`` + ``statements_of`` (every customer) + ``member_earnings`` (each member);
- per job: for each job, its lines summed by kind (one query per job), as the balance would be read without
  the grouped query; customers and members as above.

Checks: both ways agree on every figure, and the ledger balances. Exit 2 when not on PostgreSQL.
"""

from __future__ import annotations

import argparse
import os
import platform
import resource
import statistics
import sys
import time
from datetime import UTC, datetime, timedelta

from bench_django import setup_django

BRAND = "bench.money_ledger"
DOMAIN = "tc_benchmoney"


def _cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def _backend_cpu(pid: int) -> float:
    """The backend's user+sys seconds, from /proc (the server runs on this machine)."""
    try:
        fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except OSError:
        return float("nan")


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, nargs="+", default=[1000, 10000])
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    setup_django()
    from django.contrib.auth import get_user_model
    from django.db import connection
    from django.db.models import Sum

    from calendars.models import Subject
    from services.ledger import KINDS, brand_balance, member_earnings, statements_of
    from services.models import Job, MoneyLine
    from timers.tenants import brand_get_or_create

    if connection.vendor != "postgresql":
        print("money_ledger: needs PostgreSQL (DATABASE_URL=postgres://…)")
        return 2
    with connection.cursor() as cur:
        cur.execute("select pg_backend_pid(), version()")
        backend, version = cur.fetchone()
    brand = brand_get_or_create(name=BRAND)
    users = [get_user_model().objects.get_or_create(username=f"bench-money-{i}")[0] for i in range(3)]
    t0 = datetime(2027, 1, 1, tzinfo=UTC)
    print(f"machine: {os.cpu_count()} cpus · {platform.processor() or platform.machine()} · Python "
          f"{platform.python_version()} · {version.split(',')[0]} · load {os.getloadavg()[0]:.2f}")
    failed = False
    for n in args.n:
        MoneyLine.objects.filter(brand=brand).delete()
        Job.objects.filter(brand=brand).delete()
        Subject.objects.filter(brand=brand).delete()
        subjects = Subject.objects.bulk_create([
            Subject(brand=brand, domain=DOMAIN, kind="account", key_name="domain", key=f"c{i}.example",
                    name=f"Customer {i}", created_at=t0) for i in range(max(1, n // 10))])
        jobs = Job.objects.bulk_create([
            Job(brand=brand, domain=DOMAIN, service="deal", subject=subjects[i % len(subjects)], period=f"p{i}",
                status="lapsed", price_cents=150_000, opened_at=t0 + timedelta(minutes=i)) for i in range(n)])
        lines = []
        for i, job in enumerate(jobs):
            at = job.opened_at
            lines += [MoneyLine(brand=brand, domain=DOMAIN, job=job, kind="hold", amount_cents=150_000, owed_at=at),
                      MoneyLine(brand=brand, domain=DOMAIN, job=job, kind="charge", amount_cents=20_000, owed_at=at,
                                step="appraise"),
                      MoneyLine(brand=brand, domain=DOMAIN, job=job, kind="pay", amount_cents=12_000, owed_at=at,
                                step="appraise", member=users[i % 3]),
                      MoneyLine(brand=brand, domain=DOMAIN, job=job, kind="release", amount_cents=130_000,
                                owed_at=at)]
        MoneyLine.objects.bulk_create(lines, batch_size=5000)
        with connection.cursor() as cur:
            cur.execute("VACUUM ANALYZE services_moneyline")
            cur.execute("VACUUM ANALYZE services_job")
        since, until = t0, t0 + timedelta(days=3650)

        def sets(subjects=subjects, since=since, until=until):
            b = brand_balance(brand_id=brand.id, domain=DOMAIN)
            st = statements_of(subjects=subjects)
            earned = [member_earnings(brand_id=brand.id, domain=DOMAIN, user_id=u.pk, since=since, until=until).earned
                      for u in users]
            return (b.charged, b.pay, b.held, b.balanced), sum(s.charged for v in st.values() for s in v), earned

        def per_job(subjects=subjects, since=since, until=until):
            charged = pay = 0
            balanced = True
            for job in Job.objects.filter(brand=brand, domain=DOMAIN):
                s = dict.fromkeys(KINDS, 0)
                for kind, cents in MoneyLine.objects.filter(job=job).values_list("kind").annotate(c=Sum("amount_cents")):
                    s[kind] = cents
                charged, pay = charged + s["charge"], pay + s["pay"]
                balanced &= s["hold"] == s["charge"] + s["release"]
            st = statements_of(subjects=subjects)
            earned = [member_earnings(brand_id=brand.id, domain=DOMAIN, user_id=u.pk, since=since, until=until).earned
                      for u in users]
            return (charged, pay, 0, balanced), sum(s.charged for v in st.values() for s in v), earned

        results = {}
        for name, fn in (("sets", sets), ("per job", per_job)):
            walls, cpus, backs = [], [], []
            for _ in range(args.repeat):
                w, c, b = time.perf_counter(), _cpu(), _backend_cpu(backend)
                out = fn()
                walls.append(time.perf_counter() - w)
                cpus.append(_cpu() - c)
                backs.append(_backend_cpu(backend) - b)
            results[name] = (out, statistics.median(walls), statistics.median(cpus), statistics.median(backs))
        same = results["sets"][0] == results["per job"][0]
        ok = same and results["sets"][0][0][3]
        failed |= not ok
        ws, wp = results["sets"][1], results["per job"][1]
        print(f"N={n:,} jobs ({4 * n:,} lines, {len(subjects):,} customers): "
              f"sets {ws * 1000:.0f} ms (client CPU {results['sets'][2]:.2f} s, backend {results['sets'][3]:.2f} s) · "
              f"per job {wp * 1000:.0f} ms (client {results['per job'][2]:.2f} s, backend {results['per job'][3]:.2f} s) · "
              f"per job / sets {wp / ws:.1f}x · same figures: {same} · balanced: {results['sets'][0][0][3]}")
    MoneyLine.objects.filter(brand=brand).delete()
    Job.objects.filter(brand=brand).delete()
    Subject.objects.filter(brand=brand).delete()
    print(f"load after: {os.getloadavg()[0]:.2f}")
    return 3 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
