# Membership moves here from portals (portals 0002 renamed its table): state only, then its role check.
# IdempotencyKey: a POST's first answer, kept a day (timers/api/idempotency.py).

import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('timers', '0014_fire_tally'),
        ('portals', '0002_tables_to_their_owners'),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.CreateModel(
                    name='Membership',
                    fields=[
                        ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                        ('role', models.CharField(choices=[('owner', 'Owner'), ('member', 'Member')], max_length=8)),
                        ('name', models.CharField(blank=True, help_text='The name clocks and notifications use for this person (answers_for)', max_length=200)),
                        ('brand', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='memberships', to='timers.brand')),
                        ('user', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='memberships', to=settings.AUTH_USER_MODEL)),
                    ],
                    options={
                        'constraints': [models.UniqueConstraint(fields=('user', 'brand'), name='membership_once')],
                    },
                ),
            ],
        ),
        migrations.AddConstraint(
            model_name='membership',
            constraint=models.CheckConstraint(condition=models.Q(('role__in', ['owner', 'member'])), name='membership_role_known'),
        ),
        migrations.CreateModel(
            name='IdempotencyKey',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('livemode', models.BooleanField(help_text="The mode of the key that sent it: a key's answers are its mode's")),
                ('key', models.CharField(max_length=255)),
                ('request_digest', models.CharField(help_text='sha256 of the method, path and body', max_length=64)),
                ('method', models.CharField(max_length=8)),
                ('path', models.CharField(max_length=2000)),
                ('status', models.PositiveSmallIntegerField()),
                ('content_type', models.CharField(max_length=100)),
                ('body', models.BinaryField()),
                ('created_at', models.DateTimeField(help_text='Wall time of the first request')),
                ('brand', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='idempotency_keys', to='timers.brand')),
            ],
            options={
                'indexes': [models.Index(fields=['created_at'], name='idempotency_key_age')],
                'constraints': [models.UniqueConstraint(fields=('brand', 'livemode', 'key'), name='idempotency_key_once')],
            },
        ),
    
    ]
