"""The armed table holds only what is armed: fired and superseded timers move to history (timers/history.py).

``moved_at`` is when a row came to its table (wall time, the database's): history's months are by it. On
PostgreSQL timers_timer becomes a table partitioned by status, armed and held in ``timers_timer_armed``,
fired and superseded in ``timers_timer_history`` by month; the rows there now are moved in this migration.
SQLite keeps one table. Django's state is unchanged but for the column: later migrations that touch this
table's indexes or unique keys must say what they do to each partition on PostgreSQL.
"""

import django.db.models.functions.datetime
from django.db import migrations, models

from timers import history


def split(apps, schema_editor) -> None:
    if schema_editor.connection.vendor != "postgresql":
        return
    with schema_editor.connection.cursor() as cur:
        for sql in history.SPLIT:
            cur.execute(sql)
    history.ensure_partitions(schema_editor.connection)
    with schema_editor.connection.cursor() as cur:
        for sql in history.SPLIT_ROWS:
            cur.execute(sql)


def unsplit(apps, schema_editor) -> None:
    if schema_editor.connection.vendor != "postgresql":
        return
    with schema_editor.connection.cursor() as cur:
        for sql in history.UNSPLIT:
            cur.execute(sql)


class Migration(migrations.Migration):
    dependencies = [
        ("timers", "0021_schedule_name_unique"),
    ]

    operations = [
        migrations.AddField(
            model_name="timer",
            name="moved_at",
            field=models.DateTimeField(
                db_default=django.db.models.functions.datetime.Now(), editable=False,
                help_text="When the row came to its table (wall time): history is partitioned by its month."),
        ),
        migrations.RunPython(split, unsplit),
    ]
