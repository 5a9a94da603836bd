"""Inserting rows that a unique constraint may already hold, in one statement and without a savepoint."""

from __future__ import annotations

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
    NOTHING: a row a unique constraint holds already is skipped)."""
    if not rows:
        return
    per = max(1, 30_000 // len(rows[0]._meta.concrete_fields))  # under the databases' limits on parameters
    for start in range(0, len(rows), per):
        sql, params = _insert_sql(rows[start:start + per], tail="ON CONFLICT DO NOTHING" if skip_taken else "")
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
