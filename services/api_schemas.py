"""The shapes the domain's API answers, for the schema (subscriptions, jobs, clocks, their next timers and
prices), the declared input a subscription takes, the error answers its writes share, and the request bodies
the API and the agents' tools both check (a policy value).
"""

from __future__ import annotations

from drf_spectacular.extensions import OpenApiSerializerFieldExtension
from rest_framework import serializers

from calendars.models import Clock, ClockItem
from timers.api.inputs import StrictCharField, StrictIntegerField
from timers.api.openapi import Choice, const, error_response
from timers.keys import KINDS

from . import registry
from .models import Job, Subscription


class DeclaredInputField(serializers.DictField):
    """A subscription's input: the Service's declared input (services.declare.Input) checks it, in the service
    function; the schema lists what the plans declare."""


def plan_input_schema() -> dict:
    """The fields the registered plans (Services with a schedule, a cycle or events to mint on) declare, as an
    object schema: an update names some of them and nothing else. A plan that declares none takes any."""
    plans = [svc for svc in registry.all_services().values() if svc.schedule or svc.price.every or svc.on]
    if not plans or any(not svc.input for svc in plans):
        return {"type": "object", "additionalProperties": {}}
    properties: dict[str, dict] = {}
    for svc in plans:
        for name, spec in svc.input.items():
            properties.setdefault(name, spec.json_schema())
    return {"type": "object", "properties": properties, "additionalProperties": False}


class DeclaredInputSchema(OpenApiSerializerFieldExtension):
    target_class = DeclaredInputField

    def map_serializer_field(self, auto_schema, direction):
        return plan_input_schema()


class TimerSummarySerializer(serializers.Serializer):
    id = serializers.CharField()
    key = serializers.CharField()
    owed_at = serializers.DateTimeField()
    kind = Choice(choices=list(KINDS), component="TimerKind")
    on = serializers.CharField(help_text="Its owner: job_…, sbn_…, clk_…#US")


class PriceSerializer(serializers.Serializer):
    cents = serializers.IntegerField()
    currency = serializers.CharField()
    display = serializers.CharField(help_text="e.g. $2,400.00")
    every = serializers.CharField(allow_null=True, help_text="The cycle: year, month …; null for a one-off")


class AllowanceSerializer(serializers.Serializer):
    used = serializers.IntegerField()
    of = serializers.IntegerField()


class SubscriptionSerializer(serializers.Serializer):
    id = serializers.CharField()
    object = const("subscription", "SubscriptionObject")
    service = serializers.CharField()
    subject = serializers.CharField()
    status = Choice(choices=Subscription.Status.choices, component="SubscriptionStatus")
    cancel_at_period_end = serializers.BooleanField()
    paused_at = serializers.CharField(allow_null=True, help_text="UTC, Z; null when running")
    pause_note = serializers.CharField(allow_null=True)
    cycle = serializers.IntegerField()
    cycle_started_at = serializers.DateTimeField()
    opened_at = serializers.DateTimeField()
    usage = serializers.DictField(child=AllowanceSerializer(),
                                  help_text='Allowances this cycle by Service: {"annual-return": {"used": 1, "of": 1}}')
    price = PriceSerializer(allow_null=True)
    input = serializers.DictField()
    version = serializers.CharField(allow_null=True)
    test_clock = serializers.CharField(allow_null=True)
    metadata = serializers.DictField(child=serializers.CharField())
    next_timer = TimerSummarySerializer(allow_null=True)


class JobSerializer(serializers.Serializer):
    id = serializers.CharField()
    object = const("job", "JobObject")
    service = serializers.CharField()
    period = serializers.CharField()
    subject = serializers.CharField()
    subscription = serializers.CharField(allow_null=True)
    schedule = serializers.CharField(allow_null=True)
    status = Choice(choices=Job.Status.choices, component="JobStatus")
    late = serializers.BooleanField()
    late_at = serializers.DateTimeField(allow_null=True)
    waiting_on = serializers.CharField(allow_null=True, help_text="The party the work waits on (its at-risk is held)")
    step = serializers.CharField(allow_null=True, help_text="The current step of its delivery, if it declares steps")
    opened_at = serializers.DateTimeField()
    closed_at = serializers.DateTimeField(allow_null=True)
    price = PriceSerializer()
    version = serializers.CharField(allow_null=True)
    test_clock = serializers.CharField(allow_null=True)
    metadata = serializers.DictField(child=serializers.CharField())
    clocks = serializers.ListField(child=serializers.CharField(), help_text="The job's clocks (clk_…)")
    next_timer = TimerSummarySerializer(allow_null=True, help_text="The earliest armed timer of the job or its clocks")


class ClockItemSerializer(serializers.Serializer):
    item = serializers.CharField(allow_null=True, help_text="US, US-NJ …; null for a clock's single unnamed item "
                                                            "(written - in URLs)")
    civil = serializers.DateField(help_text="What the due function returned (or the move set)")
    due_date = serializers.DateField(help_text="The civil date rolled to the first open day")
    due_at = serializers.DateTimeField(help_text="The start of the closing minute, UTC")
    local = serializers.CharField(help_text="The closing minute in the subject calendar's zone, with its offset")
    rolled_why = serializers.CharField(allow_null=True)
    moves = serializers.IntegerField()
    status = Choice(choices=ClockItem.Status.choices, component="ClockItemStatus")
    satisfied_at = serializers.DateTimeField(allow_null=True)
    next_timer = TimerSummarySerializer(allow_null=True)


class ClockSerializer(serializers.Serializer):
    id = serializers.CharField()
    object = const("clock", "ClockObject")
    name = serializers.CharField()
    title = serializers.CharField()
    spec = serializers.CharField()
    subject = serializers.CharField()
    period = serializers.CharField()
    hard = serializers.BooleanField()
    lives_on = Choice(choices=Clock.LivesOn.choices, component="ClockLivesOn")
    owner_ref = serializers.CharField(help_text="The job (or subject) it belongs to")
    answers_for = serializers.CharField(allow_null=True)
    version = serializers.CharField(allow_null=True)
    opened_at = serializers.DateTimeField()
    zone = serializers.CharField(help_text="The subject calendar's IANA zone")
    test_clock = serializers.CharField(allow_null=True)
    items = ClockItemSerializer(many=True)
    next_timer = TimerSummarySerializer(allow_null=True)


CONFLICT = {409: error_response("The object's state refuses it: job_not_open, subscription_not_active …")}
GATE = {409: error_response("clock_not_due, clock_satisfied, or the gate's refusal (date_passed …) with its code")}


# A request body the API's view and the agents' set_policy tool both check with.
class PolicySerializer(serializers.Serializer):
    service = StrictCharField(max_length=64)
    name = StrictCharField(max_length=40, help_text="A policy value the Service declares: stall_days")
    value = StrictIntegerField(min_value=1, max_value=3650, help_text="Days")
    test_clock = StrictCharField(required=False, allow_blank=True, max_length=32, default="")


class ContactSerializer(serializers.Serializer):
    id = serializers.CharField()
    object = const("contact", "ContactObject")
    subject = serializers.CharField()
    name = serializers.CharField()
    email = serializers.CharField()
    phone = serializers.CharField()
    zone = serializers.CharField(allow_null=True)
    role = serializers.CharField()
    primary = serializers.BooleanField()
    created = serializers.CharField()
