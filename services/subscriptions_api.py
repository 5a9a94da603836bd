"""Subscriptions over HTTP: list, retrieve, cancel at the cycle's end, update the input, pause and resume the
schedules; and an event on a subject, which mints the jobs its subscriptions' Services name under ``on``.

Each view parses, calls the service function with a DirectArmer on the object's own clock domain inside
``through_the_gate`` (a refusal is a 409 with its code, and nothing is kept), and renders.
"""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.response import Response

from calendars.models import Subject
from timers.api.inputs import (
    ListQuerySerializer,
    StrictRegexField,
    TextField,
    plain_json,
    query_field,
)
from timers.api.openapi import ERRORS, NOT_FOUND, list_serializer
from timers.api.views import BrandAPIView, SafeJSONParser
from timers.armer import DirectArmer
from timers.errors import KeepingTimeError
from timers.selectors import domain_of, get_owned, owned, page

from .api_json import jobs_json, render_sub, subscriptions_json
from .api_schemas import CONFLICT, DeclaredInputField, JobSerializer, SubscriptionSerializer
from .models import Subscription
from .outside_writes import through_the_gate
from .selectors import get_subscription
from .subject_events import subject_event
from .subscriptions import subscription_cancel, subscription_pause, subscription_resume, subscription_update


class SubscriptionListQuerySerializer(ListQuerySerializer):
    subject = query_field("Only this subject's (sbj_…)")
    test_clock = query_field("The test clock's subscriptions; the live clock's when absent")


class SubjectEventSerializer(serializers.Serializer):
    type = StrictRegexField(r"^[a-z][a-z0-9_.]{0,63}$", help_text="e.g. notice.received")
    key = StrictRegexField(r"^[A-Za-z0-9_.#-]{1,32}$",
                                 help_text="what the event is, e.g. the notice's number: the same key mints once")
    data = serializers.DictField(required=False, default=dict, help_text="the event's data, e.g. reply_by")

    def validate_data(self, value):
        plain_json(value)
        return value


class SubscriptionPauseSerializer(serializers.Serializer):
    note = TextField(required=False, allow_blank=True, max_length=200,
                     help_text="Why the schedules are paused.")


class SubscriptionUpdateSerializer(serializers.Serializer):
    input = DeclaredInputField(help_text="Merged into the subscription's input; the next mint re-arms with it. "
                                         "Jobs already minted keep theirs. Each field is checked against the "
                                         "Service's declared input: invalid_input names the first one refused.")

    def validate_input(self, value):
        plain_json(value)
        return value


SUB_ORDER = ("opened_at", "id")


def _active(sub: Subscription) -> None:
    if sub.status != Subscription.Status.ACTIVE:
        raise KeepingTimeError(f"{sub.id} is {sub.status}; only an active subscription changes",
                               code="subscription_not_active", status=409)


class SubscriptionListView(BrandAPIView):
    @extend_schema(
        operation_id="subscriptions_list", tags=["subscriptions"], parameters=[SubscriptionListQuerySerializer],
        summary="List subscriptions",
        description="The live clock's subscriptions, or a test clock's, in the order they opened; each with its "
                    "allowances this cycle and its next timer.",
        responses={200: list_serializer("SubscriptionList", SubscriptionSerializer), **ERRORS, **NOT_FOUND},
    )
    def get(self, request):
        params = self.query(SubscriptionListQuerySerializer)
        scope = owned(Subscription.objects.all(), self.brand)
        qs = scope.filter(domain=domain_of(self.brand, params.get("test_clock")))
        if params.get("subject"):
            qs = qs.filter(subject_id=params["subject"])
        return Response(page(qs, scope=scope, order=SUB_ORDER, lookup="pk", params=params, url="/subscriptions",
                             render=subscriptions_json, what="subscription"))


class SubscriptionDetailView(BrandAPIView):
    @extend_schema(operation_id="subscriptions_retrieve", tags=["subscriptions"], summary="Retrieve a subscription",
                   responses={200: SubscriptionSerializer, 401: ERRORS[401], **NOT_FOUND})
    def get(self, request, subscription_id: str):
        return Response(render_sub(get_subscription(self.brand, subscription_id)))


class SubscriptionCancelView(BrandAPIView):
    @extend_schema(
        operation_id="subscriptions_cancel", tags=["subscriptions"], request=None,
        summary="Cancel a subscription at the cycle's end",
        description="The next renewal ends it; the jobs of the current period go on.",
        responses={200: SubscriptionSerializer, 401: ERRORS[401], **NOT_FOUND, **CONFLICT},
    )
    def post(self, request, subscription_id: str):
        sub = get_subscription(self.brand, subscription_id)
        _active(sub)
        with through_the_gate():
            subscription_cancel(armer=DirectArmer(brand=self.brand, domain=sub.domain), sub=sub)
        return Response(render_sub(sub))


class SubscriptionUpdateView(BrandAPIView):
    parser_classes = [SafeJSONParser]  # its body carries an object, which a form's flat fields cannot
    @extend_schema(
        operation_id="subscriptions_update", tags=["subscriptions"], request=SubscriptionUpdateSerializer,
        summary="Update a subscription's input",
        description="Merges `input` into the subscription's; the next mint of each schedule re-arms with it.",
        responses={200: SubscriptionSerializer, **ERRORS, **NOT_FOUND, **CONFLICT},
    )
    def post(self, request, subscription_id: str):
        sub = get_subscription(self.brand, subscription_id)
        body = self.body(SubscriptionUpdateSerializer)
        _active(sub)
        with through_the_gate():
            subscription_update(armer=DirectArmer(brand=self.brand, domain=sub.domain), sub=sub, input=body["input"])
        return Response(render_sub(sub))


class SubscriptionPauseView(BrandAPIView):
    @extend_schema(
        operation_id="subscriptions_pause", tags=["subscriptions"], request=SubscriptionPauseSerializer,
        summary="Pause a subscription's schedules",
        description="Holds the next mint of each schedule; the cycle, jobs and money go on.",
        responses={200: SubscriptionSerializer, **ERRORS, **NOT_FOUND, **CONFLICT},
    )
    def post(self, request, subscription_id: str):
        sub = get_subscription(self.brand, subscription_id)
        body = self.body(SubscriptionPauseSerializer)
        with through_the_gate():
            subscription_pause(armer=DirectArmer(brand=self.brand, domain=sub.domain), sub=sub,
                               note=body.get("note", ""))
        return Response(render_sub(sub))


class SubscriptionResumeView(BrandAPIView):
    @extend_schema(
        operation_id="subscriptions_resume", tags=["subscriptions"], request=None,
        summary="Resume a subscription's schedules",
        description="Each held mint comes back at its own time; the periods missed while paused follow the "
                    "schedule's catch_up.",
        responses={200: SubscriptionSerializer, 401: ERRORS[401], **NOT_FOUND, **CONFLICT},
    )
    def post(self, request, subscription_id: str):
        sub = get_subscription(self.brand, subscription_id)
        with through_the_gate():
            subscription_resume(armer=DirectArmer(brand=self.brand, domain=sub.domain), sub=sub)
        return Response(render_sub(sub))


class SubjectEventView(BrandAPIView):
    parser_classes = [SafeJSONParser]  # its body carries an object, which a form's flat fields cannot
    @extend_schema(
        operation_id="subjects_events_create", tags=["subscriptions"], request=SubjectEventSerializer,
        summary="Record an event on a subject",
        description="Each active subscription whose Service names the event under `on` mints a job of that "
                    "Service (once per event key) with the event's data as its input: a notice received mints "
                    "its reply, due on the notice's reply_by.",
        responses={200: list_serializer("MintedJobList", JobSerializer), **ERRORS, **NOT_FOUND, **CONFLICT},
    )
    def post(self, request, subject_id: str):
        subject = get_owned(self.brand, Subject.objects.all(), subject_id, "subject")
        body = self.body(SubjectEventSerializer)
        with through_the_gate():
            jobs = subject_event(armer=DirectArmer(brand=self.brand, domain=subject.domain), subject=subject,
                                 type=body["type"], key=body["key"], data=body["data"])
        return Response({"object": "list", "data": jobs_json(jobs), "has_more": False,
                         "url": f"/subjects/{subject.id}/events"})
