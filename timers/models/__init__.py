"""The runtime's tables, one module per group: tenants and keys; clocks, leases and live clocks; timers,
commits and the record; the outbox; schedules; webhooks; versions and deploys. This package only hands them
out (``from timers.models import Timer`` wherever they are defined), with the constants others import them
by; the id defaults are named here as the migrations name them (``timers.models.new_brand_id``)."""

from ..ids import LIVE, LIVE_PREFIX, brand_domain, is_live, live_domain
from .clocks import Lease, LeaseTerm, LiveClock, TestClock, in_domain, new_test_clock_id
from .outbox import OUTBOX_OWED_IN_ORDER, Outbox
from .schedules import (
    CATCHUP_MAX,
    CATCHUP_MIN,
    OVERLAPS,
    DeadLetter,
    Schedule,
    ScheduleRun,
    ScheduleTick,
    new_schedule_id,
)
from .tenants import ApiKey, Brand, IdempotencyKey, Membership, new_brand_id, new_key_id
from .timers import LATE_BUCKETS, Commit, Event, FireTally, Timer, new_commit_id, new_event_id, new_timer_id
from .versions import Deploy, Version
from .webhooks import WebhookAttempt, WebhookEndpoint, new_webhook_endpoint_id

__all__ = [
    "CATCHUP_MAX", "CATCHUP_MIN", "LATE_BUCKETS", "LIVE", "LIVE_PREFIX", "OUTBOX_OWED_IN_ORDER", "OVERLAPS",
    "ApiKey", "Brand", "Commit", "DeadLetter", "Deploy", "Event", "FireTally", "IdempotencyKey", "Lease",
    "LeaseTerm", "LiveClock", "Membership", "Outbox", "Schedule", "ScheduleRun", "ScheduleTick", "TestClock",
    "Timer", "Version", "WebhookAttempt", "WebhookEndpoint", "brand_domain", "in_domain", "is_live", "live_domain",
    "new_brand_id", "new_commit_id", "new_event_id", "new_key_id", "new_schedule_id", "new_test_clock_id",
    "new_timer_id", "new_webhook_endpoint_id",
]  # fmt: skip
