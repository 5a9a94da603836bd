"""Each hot-path query names its clock domain, so a table split by domain is read in one piece (PostgreSQL only).

docs/scaling.md distributes the runtime's tables by ``domain`` (Citus); a query is then a single-shard
router query only if its WHERE fixes the domain. This checks it with PostgreSQL's own hash partitioning,
the same question asked locally: copies of timers_timer, timers_outbox, timers_event and timers_commit,
``PARTITION BY HASH (domain)`` into PARTS partitions (their unique keys widened to include domain, as a
distributed table requires), in a schema of their own that is put first on the search_path; then each hot
statement the real code sent (tests/timers/test_query_plans.py drives the paths) is EXPLAINed unchanged against
the copies, and the partitions its plan reads are counted.

The statements that cannot be single-partition are listed in CROSS_DOMAIN with why; the test also checks
that each of them still reads every partition, so the list stays true.
"""

from __future__ import annotations

import re

import pytest
from django.db import connection

from tests.support.plans import DOMAINS, START, drive, explain, make_world, nodes

pytestmark = [pytest.mark.postgresql("hash partitioning and EXPLAIN are PostgreSQL's"), pytest.mark.django_db]

SCHEMA = "kt_parts"
PARTS = 8
TABLES = ("timers_timer", "timers_outbox", "timers_event", "timers_commit")

# Hot statements that read every partition, on purpose or as a finding (docs/scaling.md, "What is not
# single-shard"): each is matched by its path's name.
CROSS_DOMAIN = {
    # The worker loop's sweep asks which domains owe sends: a read of every shard, one index probe per
    # domain, no lock; each claim that follows is on one domain.
    "outbox: the domains that owe sends (sql.outbox.owed_domains, the worker loop's sweep)": "by design",
    # Finding: receipts are written by submission id (timers/sql/outbox.py, record); on a distributed table the
    # key is (domain, id) and the statement takes `domain = ANY(the claimed rows' domains)`.
    "outbox settle: record receipts (sql.outbox.record)": "finding: no domain in the WHERE",
}


def _partitioned_copies() -> None:
    """The four tables again, hash-partitioned by domain, with the same columns, checks and indexes; every
    unique key includes domain (a partitioned or distributed table cannot enforce one that does not)."""
    with connection.cursor() as cur:
        cur.execute(f"CREATE SCHEMA {SCHEMA}")
        for table in TABLES:
            cur.execute(f"CREATE TABLE {SCHEMA}.{table} (LIKE public.{table} INCLUDING DEFAULTS INCLUDING IDENTITY "
                        f"INCLUDING CONSTRAINTS)"
                        f" PARTITION BY HASH (domain)")
            for n in range(PARTS):
                cur.execute(f"CREATE TABLE {SCHEMA}.{table}_p{n} PARTITION OF {SCHEMA}.{table} "
                            f"FOR VALUES WITH (MODULUS {PARTS}, REMAINDER {n})")
            cur.execute("SELECT indexdef FROM pg_indexes WHERE schemaname = 'public' AND tablename = %s", [table])
            for (indexdef,) in cur.fetchall():
                ddl = indexdef.replace(f"ON public.{table}", f"ON {SCHEMA}.{table}")
                if ddl.startswith("CREATE UNIQUE INDEX"):
                    cols = re.search(r"USING btree \((.*?)\)", ddl).group(1)
                    if not re.search(r"\bdomain\b", cols):
                        ddl = ddl.replace(f"USING btree ({cols})", f"USING btree (domain, {cols})")
                cur.execute(ddl)


def _fill(brand_id: str) -> None:
    """Rows in 4 × DOMAINS domains, so every partition holds some."""
    d = "'tc_part' || (g %% %(k)s)"
    p = {"b": brand_id, "t": START, "k": 4 * DOMAINS, "n": 20_000}
    with connection.cursor() as cur:
        cur.execute(f"""INSERT INTO {SCHEMA}.timers_timer (id, domain, brand_id, key, owner, kind, place, handler,
                status, owed_at, opened_at, armed_at, attempt, wakes, version, superseded_by, by, held_by, armed_by,
                tick_pass, data)
            SELECT 'tmr_p' || g, {d}, %(b)s, 'job_' || g || ':task:plan:2027', 'job_' || g, 'task', 4, 'noop',
                   'armed', %(t)s, %(t)s, %(t)s, 0, 0, '', '', '', '', '', 1, '{{}}' FROM generate_series(1, %(n)s) g""", p)
        cur.execute(f"""INSERT INTO {SCHEMA}.timers_outbox (id, domain, brand_id, key, attempt, seq, transport, payload,
                status, error, created_at, claimed_by, tries)
            SELECT 'sub_p' || g, {d}, %(b)s, 'job_' || g, 1, 0, 'plans', '{{}}', 'pending', '', now(), '', 0
            FROM generate_series(1, %(n)s) g""", p)
        cur.execute(f"""INSERT INTO {SCHEMA}.timers_event (seq, id, domain, brand_id, type, subject, key, data)
            SELECT g, 'evt_p' || g, {d}, %(b)s, 'clock.satisfied', 'clk_' || g, 'job_' || g, '{{}}'
            FROM generate_series(1, %(n)s) g""", p)
        for table in TABLES:
            cur.execute(f"ANALYZE {SCHEMA}.{table}")


def partitions_read(plan: dict) -> dict[str, set[str]]:
    """{partitioned table: the partitions its plan reads when it runs}. The statements that name the domain as a
    value the planner cannot see, ``(SELECT $1)`` (timers/store.py's _DOMAIN: a domain newer than the statistics
    is planned as an average one), are pruned to one partition at run time: a part the executor never
    entered was not read."""
    read: dict[str, set[str]] = {}
    for node in nodes(plan):
        m = re.fullmatch(r"(timers_\w+?)_p\d+", node.get("Relation Name", ""))
        if m and node.get("Schema", SCHEMA) == SCHEMA and node.get("Actual Loops", 1) > 0:
            read.setdefault(m.group(1), set()).add(node["Relation Name"])
    return read


def test_every_hot_query_reads_one_partition_of_a_table_split_by_domain(brand, monkeypatch, settings):
    world = make_world(brand)
    runs = drive(world, monkeypatch, settings)  # the real statements, run on the real tables
    _partitioned_copies()
    _fill(brand.id)
    checked, wrong = [], []
    with connection.cursor() as cur:
        cur.execute(f"SET LOCAL search_path = {SCHEMA}, public")
    try:
        for got, hots in runs.values():
            for h in hots:
                sent = got.one(*h.needles)
                if not any(re.search(rf"\b{t}\b", sent.sql) for t in TABLES):
                    continue  # reads no table that is split by domain (a test clock, a subject's clocks)
                read = partitions_read(explain(sent, verbose=True, analyze=True))
                assert read, f"{h.name}: the plan reads no partition of {SCHEMA}:\n{sent.sql}"
                widest = max(len(parts) for parts in read.values())
                checked.append(h.name)
                if h.name in CROSS_DOMAIN:
                    if widest < PARTS:
                        wrong.append(f"{h.name} now reads {widest} partition(s): take it off CROSS_DOMAIN")
                elif widest != 1:
                    wrong.append(f"{h.name} reads {read}: its WHERE does not fix the domain\n{sent.sql}")
    finally:
        with connection.cursor() as cur:
            cur.execute("SET LOCAL search_path = public")
    assert not wrong, "\n\n".join(wrong)
    # fetch ×3 (a small batch's claim with its limit written in), flush, load, next owed, claim ×2, sweep, record,
    # held, 2 calendar, 3 timeline
    assert len(checked) == 16, checked
