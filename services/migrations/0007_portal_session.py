# PortalSession moves here from portals (portals 0002 renamed its table): state only.

import django.db.models.deletion
import services.models
import timers.fields
from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('services', '0006_people_time'),
        ('portals', '0002_tables_to_their_owners'),
        ('calendars', '0004_clock_owner'),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.CreateModel(
                    name='PortalSession',
                    fields=[
                        ('id', timers.fields.IdField(default=services.models.new_portal_session_id, editable=False, max_length=32, primary_key=True, serialize=False)),
                        ('digest', models.CharField(max_length=64, unique=True)),
                        ('created_at', models.DateTimeField()),
                        ('expires_at', models.DateTimeField()),
                        ('brand', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='portal_sessions', to='timers.brand')),
                        ('subject', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='portal_sessions', to='calendars.subject')),
                    ],
                    options={
                        'constraints': [models.CheckConstraint(condition=models.Q(('expires_at__gt', models.F('created_at'))), name='portal_session_expires_after_creation')],
                    },
                ),
            ],
        ),
    ]
