"""What one read costs through the Python client and through the MCP server, against a bare HTTP GET.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/kt_bench_sdk .venv/bin/python bench/sdk_calls.py \
        [--calls 300] [--timers 200] [--repeat 3]

Arms ``--timers`` timers on a fresh test clock of brand ``bench.sdk_calls`` and makes a test key, then lists a
page of them (``limit=10``) ``--calls`` times, one call after the other, three ways:

* raw: ``httpx.Client.get("/timers?test_clock=…&limit=10")`` with the key, to gunicorn (1 sync worker);
* client: ``KeepingTime.timers.list(test_clock=…, limit=10)``, to the same gunicorn;
* mcp: ``list_timers`` through one ``manage.py mcp`` process, driven by the mcp package's stdio client.

Each way's answer is checked to be the same page (the same ids). For each way: the median and p95 latency of a
call, and the CPU seconds per call of the caller (this process), the server (the gunicorn worker, or the mcp
process) and PostgreSQL's backends on this database (from /proc, so the database must be on this machine).
Rounds alternate the ways; figures are medians over ``--repeat`` rounds, with the ratios to raw.

Exit status: 0, 2 when not on PostgreSQL, 3 when a check fails.
"""

from __future__ import annotations

import argparse
import os
import platform
import resource
import socket
import statistics
import subprocess
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

from bench_django import setup_django

ROOT = Path(__file__).resolve().parent.parent
TICK = os.sysconf("SC_CLK_TCK")
T0 = datetime(2026, 11, 24, 9, tzinfo=UTC)


def proc_cpu(pid: int) -> float:
    """User + system CPU seconds of a process, from /proc (0 once it is gone)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / TICK


def children(pid: int) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1]) == pid:
                    found.append(int(entry.name))
            except OSError:
                continue
    return found


def self_cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def backends() -> list[int]:
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("SELECT pid FROM pg_stat_activity WHERE datname = current_database() "
                       "AND pid <> pg_backend_pid()")
        return [row[0] for row in cursor.fetchall()]


def seed(n: int) -> tuple[str, str]:
    from django.core.management import call_command

    from timers import arming, tenants, test_clocks

    call_command("migrate", "--noinput", verbosity=0)
    brand = tenants.brand_get_or_create(name="bench.sdk_calls")
    clock = test_clocks.test_clock_create(brand=brand, frozen_time=T0, name="sdk calls")
    for i in range(n):
        arming.timer_arm(brand=brand, key=f"job_b{i % 20}:task:call:{i}", owed_at=T0 + timedelta(hours=i + 1),
                           domain=clock.id, handler="noop")
    _, secret = tenants.api_key_create(brand=brand)
    return clock.id, secret


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Measured:
    """Latencies (ms) and CPU seconds per call: the caller, the server process, PostgreSQL's backends."""

    def __init__(self, server_pid: int):
        self.server_pid = server_pid
        self.latencies: list[float] = []

    def __enter__(self):
        self.pids = backends()
        self.start = {p: proc_cpu(p) for p in self.pids}
        self.cpu0 = (self_cpu(), proc_cpu(self.server_pid))
        return self

    def __exit__(self, *exc):
        end = {p: proc_cpu(p) for p in backends()}
        # A backend that appeared during the way started at 0: its CPU is all this way's; one that ended
        # during it is lost (the servers keep their connection, so none should).
        self.backends_changed = set(end) != set(self.start)
        pg = sum(cpu - self.start.get(p, 0.0) for p, cpu in end.items())
        self.cpu = [self_cpu() - self.cpu0[0], proc_cpu(self.server_pid) - self.cpu0[1], pg]


def run_raw(http, url: str, key: str, tc: str, calls: int, m: Measured) -> list[str]:
    ids = None
    for _ in range(calls):
        t = time.perf_counter()
        r = http.get(f"{url}/timers", params={"test_clock": tc, "limit": 10}, headers={"Authorization": f"Bearer {key}"})
        m.latencies.append((time.perf_counter() - t) * 1000)
        ids = [x["id"] for x in r.json()["data"]]
    return ids


def run_client(kt, tc: str, calls: int, m: Measured) -> list[str]:
    ids = None
    for _ in range(calls):
        t = time.perf_counter()
        page = kt.timers.list(test_clock=tc, limit=10)
        m.latencies.append((time.perf_counter() - t) * 1000)
        ids = [x["id"] for x in page["data"]]
    return ids


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--calls", type=int, default=300)
    parser.add_argument("--timers", type=int, default=200)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    setup_django()
    from django.db import connection

    if connection.vendor != "postgresql":
        print("bench/sdk_calls.py needs PostgreSQL: set DATABASE_URL=postgres://…")
        return 2
    import anyio
    import httpx
    from mcp.client.session import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client

    from keeping_time_client import KeepingTime

    tc, key = seed(args.timers)
    env = dict(os.environ)
    if "conn_max_age" not in env["DATABASE_URL"]:
        # Both servers keep their connection, as the README serves the API: a backend per call would measure
        # connecting, and its short-lived backend's CPU could not be read.
        env["DATABASE_URL"] += ("&" if "?" in env["DATABASE_URL"] else "?") + "conn_max_age=600"
    port = free_port()
    gunicorn = subprocess.Popen(
        [str(Path(sys.executable).with_name("gunicorn")), "keeping_time.wsgi:application", "--bind",
         f"127.0.0.1:{port}", "--workers", "1", "--worker-class", "sync", "--log-level", "warning"],
        cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True)
    url = f"http://127.0.0.1:{port}"
    # This process reads pg_stat_activity between awaits of the MCP client: plain blocking reads, on purpose.
    os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = "true"
    try:
        for _ in range(300):
            try:
                if httpx.get(f"{url}/openapi.json", timeout=5).status_code == 200:
                    break
            except httpx.TransportError:
                time.sleep(0.2)
        else:
            print("gunicorn did not answer")
            return 3
        worker = children(gunicorn.pid)[0]
        rounds: dict[str, list[dict]] = {"raw": [], "client": [], "mcp": []}
        answers: dict[str, list[str]] = {}

        async def mcp_round(calls: int) -> tuple[Measured, list[str]]:
            params = StdioServerParameters(command=sys.executable, args=["manage.py", "mcp"],
                                           env={**env, "KT_API_KEY": key}, cwd=ROOT)
            before = set(children(os.getpid()))
            async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
                await session.initialize()
                (server,) = set(children(os.getpid())) - before  # the mcp process this client spawned
                await session.call_tool("list_timers", {"test_clock": tc, "limit": 10})  # warm
                m = Measured(server)
                ids = None
                with m:
                    for _ in range(calls):
                        t = time.perf_counter()
                        result = await session.call_tool("list_timers", {"test_clock": tc, "limit": 10})
                        m.latencies.append((time.perf_counter() - t) * 1000)
                        ids = [x["id"] for x in result.structured_content["data"]]
                return m, ids

        with httpx.Client(timeout=30) as http, KeepingTime(key, base_url=url) as kt:
            run_raw(http, url, key, tc, 20, Measured(worker))  # warm the worker
            for _ in range(args.repeat):
                m = Measured(worker)
                with m:
                    answers["raw"] = run_raw(http, url, key, tc, args.calls, m)
                rounds["raw"].append(summary(m, args.calls))
                m = Measured(worker)
                with m:
                    answers["client"] = run_client(kt, tc, args.calls, m)
                rounds["client"].append(summary(m, args.calls))
                m, answers["mcp"] = anyio.run(mcp_round, args.calls)
                rounds["mcp"].append(summary(m, args.calls))
        if not (answers["raw"] == answers["client"] == answers["mcp"]) or len(answers["raw"]) != 10:
            print(f"CHECK FAILED: the ways answered different pages: {answers}")
            return 3
    finally:
        gunicorn.terminate()
        gunicorn.wait(timeout=20)

    load = os.getloadavg()
    print(f"sdk_calls: {args.calls} calls × {args.repeat} rounds, a page of 10 of {args.timers} timers; "
          f"{os.cpu_count()} CPUs, {platform.processor() or platform.machine()}, Python {platform.python_version()}; "
          f"load {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}")
    base = {k: statistics.median(r[k] for r in rounds["raw"]) for k in rounds["raw"][0]}
    print(f"{'way':7} {'p50 ms':>8} {'p95 ms':>8} {'caller ms':>10} {'server ms':>10} {'pg ms':>8} {'CPU ms':>8}"
          f" {'p50 ×raw':>9} {'CPU ×raw':>9}")
    for way, rs in rounds.items():
        med = {k: statistics.median(r[k] for r in rs) for k in rs[0]}
        print(f"{way:7} {med['p50']:8.2f} {med['p95']:8.2f} {med['caller']:10.3f} {med['server']:10.3f} "
              f"{med['pg']:8.3f} {med['cpu']:8.3f} {med['p50'] / base['p50']:9.2f} {med['cpu'] / base['cpu']:9.2f}")
    print("(CPU per call, ms: the caller, the server process, PostgreSQL's backends, and their sum)")
    return 0


def summary(m: Measured, calls: int) -> dict[str, float]:
    lat = sorted(m.latencies)
    caller, server, pg = (c * 1000 / calls for c in m.cpu)
    return {"p50": statistics.median(lat), "p95": lat[int(0.95 * (len(lat) - 1))], "caller": caller,
            "server": server, "pg": pg, "cpu": caller + server + pg}


if __name__ == "__main__":
    sys.exit(main())
