"""A subject's history on its own index: event_domain_subject (domain, subject, type, seq).

The record is the biggest table and is written by every tick, so on PostgreSQL the index is built
CONCURRENTLY: migrate does not stop the tick's inserts for the minutes a build over 10M events takes
(docs/scaling.md, "The record at 10M events"). Hence a non-atomic migration (timers/migrations/_concurrently.py);
SQLite (the embedded default) gets the index the ordinary way. Django's state is the model's AddIndex.
"""

from django.db import migrations, models

from timers.migrations import _concurrently as concurrently

INDEX = models.Index(fields=["domain", "subject", "type", "seq"], name="event_domain_subject")


def create(apps, schema_editor) -> None:
    concurrently.create(schema_editor, apps.get_model("timers", "Event"), INDEX)


def drop(apps, schema_editor) -> None:
    concurrently.drop(schema_editor, apps.get_model("timers", "Event"), INDEX)


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
