"""No index the database keeps is one another index already answers: a plain b-tree whose columns, with their
operator classes, lead another b-tree on the same table. Such an index makes every insert and every update of its
columns pay for a second copy of the same order, and the planner never needs it (a foreign key's own index, which
Django adds unless told ``db_index=False``, is the usual one). Django's own auth and session tables are not ours."""

from __future__ import annotations

import pytest
from django.db import connection

pytestmark = pytest.mark.django_db

REDUNDANT = """
WITH ix AS (
    SELECT i.indrelid, c.relname AS tbl, i.indexrelid::regclass::text AS idx, i.indisunique AS uniq,
           string_to_array(i.indkey::text, ' ')::int[] AS cols,
           string_to_array(i.indclass::text, ' ')::oid[] AS ops,  -- from 1: a vector's own array counts from 0
           i.indpred IS NULL AND i.indexprs IS NULL AND am.amname = 'btree' AS plain
    FROM pg_index i
    JOIN pg_class c ON c.oid = i.indrelid
    JOIN pg_namespace n ON n.oid = c.relnamespace
    JOIN pg_class ic ON ic.oid = i.indexrelid
    JOIN pg_am am ON am.oid = ic.relam
    WHERE n.nspname = current_schema() AND c.relname !~ '^(auth|django)_'
)
SELECT a.tbl, a.idx, b.idx
FROM ix a JOIN ix b ON b.indrelid = a.indrelid AND b.idx <> a.idx
WHERE a.plain AND NOT a.uniq AND b.plain
  AND a.cols = b.cols[1:cardinality(a.cols)] AND a.ops = b.ops[1:cardinality(a.ops)]
ORDER BY 1, 2
"""


def test_no_index_is_a_prefix_of_another():
    if connection.vendor != "postgresql":
        pytest.skip("reads PostgreSQL's catalog")
    with connection.cursor() as cur:
        cur.execute(REDUNDANT)
        found = cur.fetchall()
    assert found == [], "\n".join(f"{t}: {a} is answered by {b}" for t, a, b in found)
