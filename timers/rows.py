"""Inserting rows that a unique constraint may already hold, in one statement and without a savepoint."""

from __future__ import annotations

from django.db import connection
from django.db.models import Model


def insert_new(rows: list[Model]) -> list[Model]:
    """INSERT … ON CONFLICT DO NOTHING RETURNING the primary key, for rows of one model whose primary keys are
    set before saving. Returns the rows inserted now, in order; a row that any unique constraint already holds
    is skipped, where a plain create would raise IntegrityError and need a savepoint to go on."""
    if not rows:
        return []
    meta = rows[0]._meta
    fields = [f for f in meta.concrete_fields
              if not (f.null and all(getattr(row, f.attname) is None for row in rows))]  # NULL by default
    qn = connection.ops.quote_name
    one = "(" + ", ".join(["%s"] * len(fields)) + ")"
    params = [f.get_db_prep_save(f.pre_save(row, add=True), connection) for row in rows for f in fields]
    with connection.cursor() as cur:
        cur.execute(f"INSERT INTO {qn(meta.db_table)} ({', '.join(qn(f.column) for f in fields)}) "
                    f"VALUES {', '.join([one] * len(rows))} ON CONFLICT DO NOTHING RETURNING {qn(meta.pk.column)}",
                    params)
        inserted = {r[0] for r in cur.fetchall()}
    for row in rows:
        row._state.adding = row.pk not in inserted
        row._state.db = connection.alias
    return [row for row in rows if row.pk in inserted]
