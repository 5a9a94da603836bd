"""A subject's history on its own index: event_domain_subject (domain, subject, type, seq).

The record is the biggest table and is written by every tick, so on PostgreSQL the index is built
CONCURRENTLY: migrate does not stop the tick's inserts for the minutes a build over 10M events takes
(docs/scaling.md, "The record at 10M events"). Hence a non-atomic migration, and raw SQL for PostgreSQL only;
SQLite (the embedded default) gets the index the ordinary way. Django's state is the model's AddIndex.
"""

from django.db import migrations, models

INDEX = models.Index(fields=["domain", "subject", "type", "seq"], name="event_domain_subject")


def create(apps, schema_editor) -> None:
    if schema_editor.connection.vendor != "postgresql":
        schema_editor.add_index(apps.get_model("timers", "Event"), INDEX)
        return
    with schema_editor.connection.cursor() as cur:
        # A concurrent build that failed (cancelled, deadlocked) leaves an INVALID index of the name behind,
        # which IF NOT EXISTS would take for done.
        cur.execute("SELECT NOT i.indisvalid FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid "
                    "WHERE c.relname = 'event_domain_subject'")
        row = cur.fetchone()
        if row and row[0]:
            cur.execute("DROP INDEX CONCURRENTLY event_domain_subject")
        cur.execute('CREATE INDEX CONCURRENTLY IF NOT EXISTS "event_domain_subject" '
                    'ON "timers_event" ("domain", "subject", "type", "seq")')


def drop(apps, schema_editor) -> None:
    if schema_editor.connection.vendor != "postgresql":
        schema_editor.remove_index(apps.get_model("timers", "Event"), INDEX)
        return
    with schema_editor.connection.cursor() as cur:
        cur.execute("DROP INDEX CONCURRENTLY IF EXISTS event_domain_subject")


class Migration(migrations.Migration):
    atomic = False  # CREATE INDEX CONCURRENTLY cannot run inside a transaction

    dependencies = [
        ("timers", "0012_live_per_brand_and_leases"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[migrations.AddIndex(model_name="event", index=INDEX)],
            database_operations=[migrations.RunPython(create, drop)],
        ),
    ]
