"""Inserting rows that a unique constraint may already hold, in one statement and without a savepoint."""

from __future__ import annotations

import json

from django.db import connection
from django.db.models import Model


def _insert_sql(rows: list[Model], *, tail: str, with_pk: bool = True) -> tuple[str, list]:
    meta = rows[0]._meta
    fields = [f for f in meta.concrete_fields
              if (with_pk or f is not meta.pk)
              and not (f.null and all(getattr(row, f.attname) is None for row in rows))]  # NULL by default
    qn = connection.ops.quote_name
    one = "(" + ", ".join(["%s"] * len(fields)) + ")"
    params = [f.get_db_prep_save(f.pre_save(row, add=True), connection) for row in rows for f in fields]
    return (f"INSERT INTO {qn(meta.db_table)} ({', '.join(qn(f.column) for f in fields)}) "
            f"VALUES {', '.join([one] * len(rows))} {tail} RETURNING {qn(meta.pk.column)}", params)


def insert(rows: list[Model]) -> None:
    """One INSERT for new rows of one model whose primary key the database numbers (bulk_create's work,
    for a few rows at a time, without its per-call cost); each row gets its key, in order."""
    if not rows:
        return
    sql, params = _insert_sql(rows, tail="", with_pk=False)
    with connection.cursor() as cur:
        cur.execute(sql, params)
        keys = [r[0] for r in cur.fetchall()]
    for row, key in zip(rows, keys, strict=True):
        row.pk = key
        row._state.adding = False
        row._state.db = connection.alias


def insert_rows(rows: list[Model], *, skip_taken: bool = False) -> None:
    """One INSERT for rows of one model whose primary keys are set (with ``skip_taken``, ON CONFLICT DO
    NOTHING: a row a unique constraint holds already is skipped). On PostgreSQL the values go as one binary
    array per column (INSERT … SELECT FROM unnest), as the tick writes its timers: the statement's text is
    the same for any number of rows."""
    if not rows:
        return
    tail = "ON CONFLICT DO NOTHING" if skip_taken else ""
    if connection.vendor == "postgresql":
        _insert_unnest(rows, tail)
    else:
        per = max(1, 30_000 // len(rows[0]._meta.concrete_fields))  # under SQLite's limit on parameters
        for start in range(0, len(rows), per):
            sql, params = _insert_sql(rows[start:start + per], tail=tail)
            with connection.cursor() as cur:
                cur.execute(sql, params)
    for row in rows:
        row._state.adding = False
        row._state.db = connection.alias


def insert_new(rows: list[Model]) -> list[Model]:
    """INSERT … ON CONFLICT DO NOTHING RETURNING the primary key, for rows of one model whose primary keys are
    set before saving. Returns the rows inserted now, in order; a row that any unique constraint already holds
    is skipped, where a plain create would raise IntegrityError and need a savepoint to go on."""
    if not rows:
        return []
    sql, params = _insert_sql(rows, tail="ON CONFLICT DO NOTHING")
    with connection.cursor() as cur:
        cur.execute(sql, params)
        inserted = {r[0] for r in cur.fetchall()}
    for row in rows:
        row._state.adding = row.pk not in inserted
        row._state.db = connection.alias
    return [row for row in rows if row.pk in inserted]


def _insert_unnest(rows: list[Model], tail: str) -> None:
    import psycopg
    from django.db.models import JSONField

    meta = rows[0]._meta
    fields = meta.concrete_fields
    qn = connection.ops.quote_name
    arrays, casts, picks = [], [], []
    for n, f in enumerate(fields):
        values = [f.pre_save(row, add=True) for row in rows]
        if isinstance(f, JSONField):  # as text, cast in the SELECT: jsonb arrays of adapted values are not
            arrays.append([None if v is None else json.dumps(v, cls=f.encoder) for v in values])
            casts.append("%b::text[]")
            picks.append(f"v{n}::jsonb")
        else:
            arrays.append([f.get_db_prep_save(v, connection) for v in values])
            casts.append(f"%b::{f.db_type(connection)}[]")
            picks.append(f"v{n}")
    sql = (f"INSERT INTO {qn(meta.db_table)} ({', '.join(qn(f.column) for f in fields)}) "
           f"SELECT {', '.join(picks)} FROM unnest({', '.join(casts)}) "
           f"AS v({', '.join(f'v{n}' for n in range(len(fields)))}) {tail}")
    connection.ensure_connection()
    with psycopg.Cursor(connection.connection) as cur:
        cur.execute(sql, arrays, binary=True)
