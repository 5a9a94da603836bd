"""Each brand's live clock becomes its own clock domain, live_<brand id>; leases become rows.

Every row on the shared domain "live" moves to its brand's: rows with a brand by their brand, a commit by
its timer's, an event or send without a brand by its key's timer. The live position is copied to each
brand that has live rows. Deploys stay on "live": a deploy reaches every brand's live clock.

The reverse folds the brands' live domains back into "live"; it fails (a unique constraint) once two
brands hold the same key live, which the split allows.
"""

from django.db import migrations, models

APPS = ("timers", "services", "calendars")
KEEP = {"deploy", "liveclock", "lease", "leaseterm"}  # not per brand, or written below


def _tables(apps):
    """(table, has brand) for each model with a domain column, in the apps that keep domains."""
    for label in APPS:
        for model in apps.get_app_config(label).get_models():
            names = {f.name for f in model._meta.get_fields()}
            if "domain" in names and model._meta.model_name not in KEEP:
                yield model._meta.db_table, "brand" in names


def split(apps, schema_editor):
    from django.db import connection

    live = "substr(domain, 1, 5) = 'live_'"
    with connection.cursor() as cur:
        for table, has_brand in _tables(apps):
            if has_brand:
                cur.execute(f"UPDATE {table} SET domain = 'live_' || brand_id "  # noqa: S608 - our own table names
                            "WHERE domain = 'live' AND brand_id IS NOT NULL")
        # A commit, and an event or send without a brand, goes where its timer went.
        cur.execute("UPDATE timers_commit SET domain = (SELECT t.domain FROM timers_timer t "
                    "WHERE t.id = timers_commit.timer_id) WHERE domain = 'live' AND EXISTS "
                    "(SELECT 1 FROM timers_timer t WHERE t.id = timers_commit.timer_id)")
        for table in ("timers_event", "timers_outbox"):
            cur.execute(f"UPDATE {table} SET domain = (SELECT t.domain FROM timers_timer t "  # noqa: S608
                        f"WHERE t.key = {table}.key AND substr(t.domain, 1, 5) = 'live_') "
                        f"WHERE domain = 'live' AND EXISTS (SELECT 1 FROM timers_timer t "
                        f"WHERE t.key = {table}.key AND substr(t.domain, 1, 5) = 'live_')")
        cur.execute("SELECT position FROM timers_liveclock WHERE id = 'live'")
        row = cur.fetchone()
        position = row[0] if row else None
        cur.execute(f"SELECT DISTINCT domain FROM timers_timer WHERE {live}")  # noqa: S608
        domains = [d for (d,) in cur.fetchall()]
        for domain in domains:
            cur.execute("INSERT INTO timers_liveclock (id, position) VALUES (%s, %s)", [domain, position])
        cur.execute("DELETE FROM timers_liveclock WHERE id = 'live'")


def fold(apps, schema_editor):
    from django.db import connection

    with connection.cursor() as cur:
        for table, _has_brand in (*_tables(apps), ("timers_commit", False)):
            cur.execute(f"UPDATE {table} SET domain = 'live' WHERE substr(domain, 1, 5) = 'live_'")  # noqa: S608
        cur.execute("SELECT MAX(position) FROM timers_liveclock WHERE substr(id, 1, 5) = 'live_'")
        position = cur.fetchone()[0]
        cur.execute("DELETE FROM timers_liveclock WHERE substr(id, 1, 5) = 'live_'")
        if position is not None:
            cur.execute("INSERT INTO timers_liveclock (id, position) VALUES ('live', %s)", [position])


class Migration(migrations.Migration):

    dependencies = [
        ('timers', '0011_timer_held'),
        ('services', '0006_people_time'),
        ('calendars', '0004_clock_owner'),
    ]

    operations = [
        migrations.AlterField(
            model_name='liveclock',
            name='id',
            field=models.CharField(max_length=32, primary_key=True, serialize=False),
        ),
        migrations.CreateModel(
            name='Lease',
            fields=[
                ('domain', models.CharField(max_length=32, primary_key=True, serialize=False)),
                ('holder', models.CharField(max_length=120)),
                ('epoch', models.BigIntegerField()),
                ('expires', models.DateTimeField(help_text='Anyone may take the domain after this; the holder renews it.')),
                ('session', models.CharField(blank=True, default='', help_text="The holder's database session (PostgreSQL): once it ends, the lease is free", max_length=64)),
            ],
            options={
                'constraints': [models.CheckConstraint(condition=models.Q(('epoch__gte', 1)), name='lease_epoch_positive')],
            },
        ),
        migrations.CreateModel(
            name='LeaseTerm',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('domain', models.CharField(max_length=32)),
                ('epoch', models.BigIntegerField()),
                ('holder', models.CharField(max_length=120)),
                ('taken_at', models.DateTimeField()),
                ('released_at', models.DateTimeField(blank=True, null=True)),
                ('batches', models.PositiveIntegerField(default=0, help_text='Batches fenced under this term, counted at release')),
            ],
            options={
                'constraints': [models.UniqueConstraint(fields=('domain', 'epoch'), name='lease_term_one_holder_per_epoch')],
            },
        ),
        migrations.RunPython(split, fold),
    ]
