"""outbox_owed_in_order: an ordered domain's owed rows by key (a webhook endpoint's deliveries, timers/outbox.py).

The outbox keeps every send it ever made, so on PostgreSQL the index is built CONCURRENTLY (as 0013 builds the
record's, timers/migrations/_concurrently.py): migrate does not stop the tick's sends while it reads the table.
It is partial (webhook rows still owed), so it stays the size of the endpoints' backlog. Django's state is the
model's AddIndex.
"""

from django.db import migrations, models

from timers.migrations import _concurrently as concurrently

INDEX = models.Index(fields=["domain", "key", "attempt", "seq"], name="outbox_owed_in_order",
                     condition=models.Q(transport="webhook", status__in=["pending", "sending"]))


def create(apps, schema_editor) -> None:
    concurrently.create(schema_editor, apps.get_model("timers", "Outbox"), INDEX)


def drop(apps, schema_editor) -> None:
    concurrently.drop(schema_editor, apps.get_model("timers", "Outbox"), INDEX)


class Migration(migrations.Migration):
    atomic = False  # CREATE INDEX CONCURRENTLY cannot run inside a transaction

    dependencies = [
        ("timers", "0016_webhook_endpoints"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[migrations.AddIndex(model_name="outbox", index=INDEX)],
            database_operations=[migrations.RunPython(create, drop)],
        ),
    ]
