# Webhook endpoints (timers/webhooks.py) and their delivery log.

import django.db.models.deletion
from django.db import migrations, models

import timers.fields
import timers.models


class Migration(migrations.Migration):

    dependencies = [
        ('timers', '0015_membership_and_idempotency'),
    ]

    operations = [
        migrations.CreateModel(
            name='WebhookEndpoint',
            fields=[
                ('id', timers.fields.IdField(default=timers.models.new_webhook_endpoint_id, editable=False, max_length=32, primary_key=True, serialize=False)),
                ('livemode', models.BooleanField(help_text='Hears the live clock (a live key made it), else the test clocks')),
                ('url', models.CharField(max_length=2048)),
                ('enabled_events', models.JSONField(default=list, help_text='Event types: "*", an exact type, or "prefix.*"')),
                ('secret', models.CharField(help_text='Signs each delivery (whsec_…); shown once, at creation', max_length=80)),
                ('status', models.CharField(choices=[('enabled', 'Enabled'), ('disabled', 'Disabled')], default='enabled', max_length=8)),
                ('description', models.CharField(blank=True, max_length=5000)),
                ('metadata', models.JSONField(blank=True, default=dict)),
                ('created_at', models.DateTimeField()),
                ('brand', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='webhook_endpoints', to='timers.brand')),
            ],
        ),
        migrations.CreateModel(
            name='WebhookAttempt',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('event_id', models.CharField(max_length=32)),
                ('event_type', models.CharField(max_length=64)),
                ('submission', models.CharField(help_text='The outbox row (timers_outbox.id) this try sent', max_length=40)),
                ('attempt', models.PositiveIntegerField(help_text='The n-th try of this event at this endpoint, resends included')),
                ('at', models.DateTimeField(help_text='Wall time the POST left')),
                ('status', models.PositiveSmallIntegerField(blank=True, help_text='The HTTP status, if it answered', null=True)),
                ('answer', models.TextField(blank=True, help_text="The start of the answer's body")),
                ('error', models.TextField(blank=True, help_text='Why it failed, when it did')),
                ('duration_ms', models.PositiveIntegerField(default=0)),
                ('endpoint', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='attempts', to='timers.webhookendpoint')),
            ],
        ),
        migrations.AddIndex(
            model_name='webhookendpoint',
            index=models.Index(fields=['brand', 'livemode', 'created_at', 'id'], name='webhook_endpoint_list'),
        ),
        migrations.AddIndex(
            model_name='webhookendpoint',
            index=models.Index(condition=models.Q(('status', 'enabled')), fields=['brand', 'livemode'], name='webhook_endpoint_hears'),
        ),
        migrations.AddConstraint(
            model_name='webhookendpoint',
            constraint=models.CheckConstraint(condition=models.Q(('status__in', ['enabled', 'disabled'])), name='webhook_endpoint_status_known'),
        ),
        migrations.AddIndex(
            model_name='webhookattempt',
            index=models.Index(fields=['endpoint', '-id'], name='webhook_attempt_log'),
        ),
        migrations.AddIndex(
            model_name='webhookattempt',
            index=models.Index(fields=['endpoint', 'event_id'], name='webhook_attempt_event'),
        ),
        migrations.AddIndex(
            model_name='webhookattempt',
            index=models.Index(fields=['submission'], name='webhook_attempt_submission'),
        ),
    ]
