"""What the API asks the database on a request before its view runs: the secret key's brand (every request)
and the Idempotency-Key's hold (every POST), beside their SQLite fallback; and the holds that make a count
and what it allows one step (a quota's, a sign-in address's tries).

The key's lookup is one prepared statement on PostgreSQL (timers/prepared.py): through the ORM it cost about
as much CPU as the arming it authenticated.
"""

from __future__ import annotations

import functools

from django.db import connection, connections

from ..models import ApiKey, Brand
from ..prepared import cursor

# An Idempotency-Key held for this transaction, or refused at once when another request holds it (params: the
# key's name in the brand and mode).
HOLD_KEY = "SELECT pg_try_advisory_xact_lock(hashtextextended(%s, 0))"


@functools.cache
def _key_sql() -> tuple[str, list[str]]:
    """The unrevoked key of a digest with its brand's every column (params: digest)."""
    brand = [f.attname for f in Brand._meta.concrete_fields]
    return ("SELECT k.id, k.prefix, " + ", ".join(f'b."{a}"' for a in brand) + " FROM timers_apikey k "
            "JOIN timers_brand b ON b.id = k.brand_id WHERE k.digest = %s AND k.revoked_at IS NULL"), brand


def key_brand(digest: str) -> tuple[str, str, Brand] | None:
    """(key id, key prefix, a fresh Brand) for an unrevoked key's digest, read from the database on every
    request: a key revoked by any process stops working at its next request."""
    if connection.vendor != "postgresql":
        key = ApiKey.objects.select_related("brand").filter(digest=digest, revoked_at=None).first()
        return None if key is None else (key.id, key.prefix, key.brand)
    sql, attnames = _key_sql()
    with cursor() as cur:
        cur.execute(sql, [digest])
        row = cur.fetchone()
    if row is None:
        return None
    return row[0], row[1], Brand.from_db(connection.alias, attnames, row[2:])


# Held for this transaction; another holder of the same name waits for it (params: the name).
WAIT_FOR = "SELECT pg_advisory_xact_lock(hashtextextended(%s, 0))"


def wait_for(name: str, *, using: str = "default") -> None:
    """Hold ``name`` to the end of the transaction, waiting for another transaction that holds it: what is
    counted, then written, under it is one step across processes. SQLite has one writer at a time and no such
    lock: the transaction's own write waits there instead."""
    conn = connections[using]
    if conn.vendor != "postgresql":
        return
    with conn.cursor() as cur:
        cur.execute(WAIT_FOR, [name])


def hold_key(name: str) -> bool:
    """Hold an Idempotency-Key for this transaction; False if another request holds it. SQLite has one writer at
    a time, so a second request waits for the first's transaction there instead."""
    if connection.vendor != "postgresql":
        return True
    with connection.cursor() as cur:
        cur.execute(HOLD_KEY, [name])
        return bool(cur.fetchone()[0])
