"""Clocks over HTTP: retrieve one (each item's date, rolled, and its next timer), choose on a date that came
unsatisfied, mark a date kept, and record a penalty notice (credited under the brand's guarantee).

Each view parses, calls the service function with a DirectArmer on the clock's own domain inside
``through_the_gate`` (a refusal is a 409 with its code, and nothing is kept), and renders.
"""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.response import Response

from calendars.clocks import clock_choose, clock_satisfy
from calendars.models import ClockItem
from calendars.undo import clock_reopen
from timers.api.inputs import StrictCharField, TextField
from timers.api.openapi import ERRORS, NOT_FOUND, const
from timers.api.views import BrandAPIView
from timers.armer import DirectArmer
from timers.errors import KeepingTimeError

from .amounts import AmountField, CurrencyField
from .api_json import clock_json
from .api_schemas import CONFLICT, GATE, ClockSerializer
from .guarantees import penalty_notice
from .outside_writes import through_the_gate
from .selectors import get_clock, get_item


class ClockChooseSerializer(serializers.Serializer):
    option = StrictCharField(max_length=64, help_text="One of the clock's options")
    by = TextField(required=False, allow_blank=True, max_length=200, default="",
                               help_text="Who chose")


class ClockSatisfySerializer(serializers.Serializer):
    by = TextField(required=False, allow_blank=True, max_length=200, default="",
                               help_text="Who kept the date")


class ClockDetailView(BrandAPIView):
    @extend_schema(operation_id="clocks_retrieve", tags=["clocks"], summary="Retrieve a clock",
                   description="Its items: each date, rolled, closing in the subject calendar's zone, and the next "
                               "timer of each.",
                   responses={200: ClockSerializer, 401: ERRORS[401], **NOT_FOUND})
    def get(self, request, clock_id: str):
        return Response(clock_json(get_clock(self.brand, clock_id)))


class ClockChooseView(BrandAPIView):
    @extend_schema(
        operation_id="clocks_items_choose", tags=["clocks"], request=ClockChooseSerializer,
        summary="Choose on a date that came unsatisfied",
        description="The owner's choice on an item that is due or passed (`-` names a clock's single unnamed "
                    "item). An option that names a step runs it through the gate: a hard date past refuses it "
                    "with date_passed (409). Errors: clock_not_due (409), unknown_option.",
        responses={200: ClockSerializer, **ERRORS, **NOT_FOUND, **GATE},
    )
    def post(self, request, clock_id: str, item: str):
        clock = get_clock(self.brand, clock_id)
        it = get_item(clock, item)
        body = self.body(ClockChooseSerializer)
        with through_the_gate():
            clock_choose(armer=DirectArmer(brand=self.brand, domain=clock.domain), item=it, option=body["option"],
                         by=body["by"])
        return Response(clock_json(clock))


class ClockSatisfyView(BrandAPIView):
    @extend_schema(
        operation_id="clocks_items_satisfy", tags=["clocks"], request=ClockSatisfySerializer,
        summary="Mark a date kept",
        description="The item arms nothing further and what it had armed is superseded (`-` names a clock's "
                    "single unnamed item). Satisfying a kept date again changes nothing. Errors: "
                    "clock_item_voided (409).",
        responses={200: ClockSerializer, **ERRORS, **NOT_FOUND, **CONFLICT},
    )
    def post(self, request, clock_id: str, item: str):
        clock = get_clock(self.brand, clock_id)
        it = get_item(clock, item)
        body = self.body(ClockSatisfySerializer)
        if it.status == ClockItem.Status.VOIDED:
            raise KeepingTimeError(f"{it.owner_key} is voided; its job ended", code="clock_item_voided", status=409)
        with through_the_gate():
            clock_satisfy(armer=DirectArmer(brand=self.brand, domain=clock.domain), item=it, by=body["by"])
        return Response(clock_json(clock))


class ClockReopenView(BrandAPIView):
    @extend_schema(
        operation_id="clocks_items_reopen", tags=["clocks"], request=ClockSatisfySerializer,
        summary="Take back a date marked done",
        description="Until the date passes: the item is open again, its reminders still ahead, its ask chain's next "
                    "day, its run and its due timer armed again (one move on), and clock.reopened is recorded "
                    "after the clock.satisfied it takes back (`-` names a clock's single unnamed item). Errors: "
                    "clock_not_done (409) for a date not done, undo_too_late (409) once the date has passed.",
        responses={200: ClockSerializer, **ERRORS, **NOT_FOUND, **CONFLICT},
    )
    def post(self, request, clock_id: str, item: str):
        clock = get_clock(self.brand, clock_id)
        it = get_item(clock, item)
        body = self.body(ClockSatisfySerializer)
        with through_the_gate():
            clock_reopen(armer=DirectArmer(brand=self.brand, domain=clock.domain), item=it, by=body["by"])
        return Response(clock_json(clock))


class ClockPenaltySerializer(serializers.Serializer):
    notice = TextField(max_length=64, help_text="The notice that assessed it, e.g. CP14")
    amount = AmountField(help_text="The penalty assessed, in the currency's smallest unit: 30000 is $300.00")
    currency = CurrencyField(required=False, default="usd")


class PenaltySerializer(serializers.Serializer):
    object = const("penalty", "PenaltyObject")
    clock = serializers.CharField()
    period = serializers.CharField()
    notice = serializers.CharField()
    amount = serializers.IntegerField(help_text="The penalty, in cents")
    currency = serializers.CharField()
    amount_cents = serializers.IntegerField(help_text="The same as amount (kept for older clients)")
    guarantee_cap_cents = serializers.IntegerField(help_text="0 when the clock carries no guarantee")
    credited_cents = serializers.IntegerField(help_text="What the brand's line credits: the penalty, up to what is "
                                              "left of the cap")
    money_line = serializers.CharField(allow_null=True, help_text="The credit's money line (collected by its "
                                       "money timer), or null when nothing is credited")


class ClockPenaltyView(BrandAPIView):
    @extend_schema(
        operation_id="clocks_penalties_create", tags=["clocks"], request=ClockPenaltySerializer,
        summary="Record a penalty notice for the clock's period",
        description="Recorded as clock.penalty. When the clock carries a guarantee, the penalty is credited from "
                    "the brand's line up to the guarantee's cap (members' pay stays whole); a clock the customer "
                    "answers for carries no guarantee of the brand's (409 guarantee_not_brands), and with "
                    "excludes: 'held' the time the job waited on the party is left out. The amount is in cents "
                    "(400 invalid_amount for a float or a dollar string). The same notice again answers with "
                    "its first credit and records nothing.",
        responses={201: PenaltySerializer, **ERRORS, **NOT_FOUND, **CONFLICT},
    )
    def post(self, request, clock_id: str):
        clock = get_clock(self.brand, clock_id)
        body = self.body(ClockPenaltySerializer)
        cents = body["amount"]
        with through_the_gate():
            line = penalty_notice(armer=DirectArmer(brand=self.brand, domain=clock.domain), clock=clock,
                                  amount_cents=cents, notice=body["notice"], currency=body["currency"])
        return Response({
            "object": "penalty", "clock": clock.id, "period": clock.period, "notice": body["notice"],
            "amount": cents, "currency": body["currency"], "amount_cents": cents, "guarantee_cap_cents": clock.guarantee_cap_cents,
            "credited_cents": line.amount_cents if line is not None else 0,
            "money_line": line.id if line is not None else None,
        }, status=201)
