"""Money over HTTP: ``GET /balance`` (the brand's), ``GET /subjects/<id>/statements`` (a statement for each
cycle) and ``GET /members/<id>/earnings`` (what a member earned in a period); and ``AmountField``, the one way
an amount comes in: a whole number in the currency's smallest unit, with its ``currency`` (Stripe's
``amount``), so 30000 is $300.00 and a float or a dollar string is ``400 invalid_amount``.
"""

from __future__ import annotations

from datetime import UTC, datetime

from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.response import Response

from timers.api.auth import livemode
from timers.api.inputs import QueryInstantField, query_field
from timers.api.openapi import ERRORS, NOT_FOUND, WRONG_MODE, const, list_serializer
from timers.api.views import BrandAPIView
from timers.errors import KeepingTimeError
from timers.models import is_live
from timers.selectors import domain_of
from timers.timeutil import iso_z

from .ledger import brand_balance, member_earnings, subject_statements
from .members import member_get, member_says
from .members import member_id as id_of
from .subjects_api import get_subject


def _domain(brand, test_clock: str | None) -> str:
    domain = domain_of(brand, test_clock)
    if is_live(domain) and not livemode(brand):
        raise KeepingTimeError("a test key reads a test clock's money: pass test_clock (tc_…); the live clock's "
                               "takes a live key (sk_live_…)", code="live_mode_only", status=403)
    return domain


# -- GET /balance -------------------------------------------------------------------------------------------
class BalanceQuerySerializer(serializers.Serializer):
    test_clock = query_field("The test clock's balance; the live clock's when absent")


class LedgerBalanceSerializer(serializers.Serializer):
    object = const("balance", "BalanceObject")
    currency = serializers.CharField()
    charged = serializers.IntegerField(help_text="Every charge, in cents")
    credited = serializers.IntegerField(help_text="Credits off the brand's line (late prices, guarantees)")
    refunded = serializers.IntegerField()
    pay = serializers.IntegerField(help_text="What the brand owes its members for the acts they did")
    net = serializers.IntegerField(help_text="What the brand keeps: charged less credited, refunded and pay")
    held = serializers.IntegerField(help_text="What holds of open jobs still keep aside")
    owed = serializers.IntegerField(help_text="Of the lines above, what is not collected yet")
    lines = serializers.IntegerField()
    balanced = serializers.BooleanField(help_text="Every job with a hold: hold = charges + release once ended")
    unbalanced_jobs = serializers.ListField(child=serializers.CharField())


class BalanceView(BrandAPIView):
    @extend_schema(operation_id="balance_retrieve", tags=["money"], parameters=[BalanceQuerySerializer],
                   summary="Retrieve the brand's balance",
                   description="Summed from the money lines (void ones left out), in the currency's smallest unit.",
                   responses={200: LedgerBalanceSerializer, **ERRORS, **NOT_FOUND, **WRONG_MODE})
    def get(self, request):
        params = self.query(BalanceQuerySerializer)
        b = brand_balance(brand_id=self.brand.id, domain=_domain(self.brand, params.get("test_clock")))
        return Response({"object": "balance", "currency": b.currency, "charged": b.charged, "credited": b.credited,
                         "refunded": b.refunded, "pay": b.pay, "net": b.net, "held": b.held, "owed": b.owed,
                         "lines": b.lines, "balanced": b.balanced, "unbalanced_jobs": b.unbalanced})


# -- GET /subjects/<id>/statements ------------------------------------------------------------------------------
class StatementSerializer(serializers.Serializer):
    object = const("statement", "StatementObject")
    subscription = serializers.CharField(allow_null=True, help_text="null: orders outside a plan, by month")
    service = serializers.CharField(help_text="The plan, or the month of orders outside one (2027-06)")
    cycle = serializers.IntegerField(allow_null=True)
    starts = serializers.DateTimeField()
    ends = serializers.DateTimeField(allow_null=True, help_text="null while the cycle runs")
    included = serializers.DictField(child=serializers.IntegerField(), help_text="Jobs the plan included, by Service")
    currency = serializers.CharField()
    charged = serializers.IntegerField()
    credited = serializers.IntegerField()
    refunded = serializers.IntegerField()
    held = serializers.IntegerField()
    total = serializers.IntegerField(help_text="charged less credited and refunded")


def statement_json(s) -> dict:
    return {"object": "statement", "subscription": s.subscription, "service": s.service, "cycle": s.cycle,
            "starts": iso_z(s.starts), "ends": iso_z(s.ends) if s.ends else None, "included": s.included,
            "currency": s.currency, "charged": s.charged, "credited": s.credited, "refunded": s.refunded,
            "held": s.held, "total": s.total}


class SubjectStatementsView(BrandAPIView):
    @extend_schema(operation_id="subjects_statements_list", tags=["money"], summary="List a subject's statements",
                   description="One for each cycle of each of the subject's subscriptions, newest first; orders "
                               "outside a plan by month.",
                   responses={200: list_serializer("StatementList", StatementSerializer), 401: ERRORS[401],
                              **NOT_FOUND})
    def get(self, request, subject_id: str):
        subject = get_subject(self.brand, subject_id)
        return Response({"object": "list", "url": f"/subjects/{subject.id}/statements", "has_more": False,
                         "data": [statement_json(s) for s in subject_statements(subject=subject)]})


# -- GET /members/<id>/earnings ---------------------------------------------------------------------------------
class EarningsQuerySerializer(serializers.Serializer):
    since = QueryInstantField(required=False, help_text="From this instant (the start of time when absent)")
    until = QueryInstantField(required=False,
                              help_text="Up to this instant, not included (the end of time when absent)")
    test_clock = query_field("The test clock's earnings; the live clock's when absent")


class EarnedActSerializer(serializers.Serializer):
    job = serializers.CharField()
    service = serializers.CharField()
    subject = serializers.CharField(help_text="Who the work was for, by name")
    step = serializers.CharField()
    amount = serializers.IntegerField()
    status = serializers.CharField(help_text="owed, or collected once its money timer ran")
    at = serializers.DateTimeField()


class EarningsSerializer(serializers.Serializer):
    object = const("earnings", "EarningsObject")
    member = serializers.CharField()
    name = serializers.CharField()
    since = serializers.DateTimeField(allow_null=True)
    until = serializers.DateTimeField(allow_null=True)
    currency = serializers.CharField()
    earned = serializers.IntegerField()
    paid = serializers.IntegerField(help_text="Of what was earned, what is collected")
    acts = EarnedActSerializer(many=True)


START, END = datetime(1, 1, 1, tzinfo=UTC), datetime(9999, 12, 31, 23, 59, 59, tzinfo=UTC)


class MemberEarningsView(BrandAPIView):
    @extend_schema(operation_id="members_earnings_retrieve", tags=["members"], parameters=[EarningsQuerySerializer],
                   summary="What a member earned in a period",
                   description="Their pay lines: a member's share of each paid act they did, posted as the act "
                               "committed; a lapse, a cancel or a guarantee's credit never takes it back.",
                   responses={200: EarningsSerializer, **ERRORS, **NOT_FOUND, **WRONG_MODE})
    def get(self, request, member_id: str):
        params = self.query(EarningsQuerySerializer)
        membership = member_get(brand=self.brand, ref=member_id)
        domain = _domain(self.brand, params.get("test_clock"))
        e = member_earnings(brand_id=self.brand.id, domain=domain, user_id=membership.user_id,
                            since=params.get("since") or START, until=params.get("until") or END)
        return Response({
            "object": "earnings", "member": id_of(membership), "name": member_says(membership),
            "since": iso_z(params["since"]) if params.get("since") else None,
            "until": iso_z(params["until"]) if params.get("until") else None, "currency": e.currency,
            "earned": e.earned, "paid": e.paid,
            "acts": [{"job": a["job_id"], "service": a["job__service"], "subject": a["job__subject__name"],
                      "step": a["step"], "amount": a["amount_cents"], "status": a["status"], "at": iso_z(a["owed_at"])}
                     for a in e.acts]})

