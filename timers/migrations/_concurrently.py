"""An index on a table the tick writes, built CONCURRENTLY on PostgreSQL so migrate never stops those writes for
the minutes a build over a big table takes (0013's on the record, 0017's on the outbox). Its migration is
non-atomic (CREATE INDEX CONCURRENTLY cannot run in a transaction); SQLite gets the index the ordinary way.
Django's migration loader skips this module (its name starts with "_").
"""

from __future__ import annotations

from django.db import models


def create(schema_editor, model, index: models.Index) -> None:
    if schema_editor.connection.vendor != "postgresql":
        schema_editor.add_index(model, index)
        return
    with schema_editor.connection.cursor() as cur:
        # A concurrent build that failed (cancelled, deadlocked) leaves an INVALID index of the name behind,
        # which IF NOT EXISTS would take for done.
        cur.execute("SELECT NOT i.indisvalid FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid "
                    "WHERE c.relname = %s", [index.name])
        row = cur.fetchone()
        if row and row[0]:
            cur.execute(f'DROP INDEX CONCURRENTLY "{index.name}"')
        sql = str(index.create_sql(model, schema_editor))
        cur.execute(sql.replace("CREATE INDEX", "CREATE INDEX CONCURRENTLY IF NOT EXISTS", 1))


def drop(schema_editor, model, index: models.Index) -> None:
    if schema_editor.connection.vendor != "postgresql":
        schema_editor.remove_index(model, index)
        return
    with schema_editor.connection.cursor() as cur:
        cur.execute(f'DROP INDEX CONCURRENTLY IF EXISTS "{index.name}"')
