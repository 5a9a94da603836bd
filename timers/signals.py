"""What domain apps hear of the runtime: Django signals they connect in their ``AppConfig.ready``."""

from __future__ import annotations

from django.dispatch import Signal

# Sent when a test clock is deleted, inside the voiding's transaction, with ``clock``: domain apps void what they
# keep on it (jobs, subscriptions…), and the webhooks void their deliveries.
test_clock_deleted = Signal()
# Sent when the live worker (`tick`) starts, with ``now``: domain apps record what is new in their code.
worker_starting = Signal()
