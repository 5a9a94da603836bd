"""The queue of proposals over HTTP (calendars/proposals.py): propose a step on a clock's date, and approve one
that waits on a person. Whose time decides near the close: a proposal in the gate is judged by when it was
proposed, one that waited on a person by when it commits."""

from __future__ import annotations

import re

from django.db import transaction
from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.response import Response

from calendars.models import Clock, Proposal
from calendars.proposals import clock_propose, proposal_approve, proposals_commit
from timers.api.inputs import NameField, StrictRegexField
from timers.api.openapi import ERRORS, NOT_FOUND, error_response
from timers.api.views import BrandAPIView, SafeJSONParser
from timers.armer import DirectArmer
from timers.errors import NotFound
from timers.selectors import get_owned
from timers.timeutil import iso_z

from .outside_writes import through_the_gate
from .selectors import get_clock, get_item


class ProposalCreateSerializer(serializers.Serializer):
    step = StrictRegexField(r"^[a-z][a-z0-9_]{0,39}$", max_length=40, help_text="The step proposed: pay, extend …")
    waits_on = NameField(required=False, allow_blank=True, max_length=200, default="",
                         help_text="The person who must say yes first; it is then judged when it commits")


class ProposalSerializer(serializers.Serializer):
    id = serializers.CharField()
    object = serializers.CharField()
    clock = serializers.CharField()
    item = serializers.CharField()
    step = serializers.CharField()
    waits_on = serializers.CharField()
    state = serializers.ChoiceField(choices=Proposal.State.choices)
    proposed_at = serializers.DateTimeField()
    committed_at = serializers.DateTimeField(allow_null=True)
    judged_at = serializers.DateTimeField(allow_null=True, help_text="The instant on time was judged at")
    on_time = serializers.BooleanField(allow_null=True)
    outcome = serializers.CharField(help_text="committed, moved, submitted, or the refusal's code (date_passed)")


def proposal_json(p: Proposal) -> dict:
    return {"id": p.id, "object": "proposal", "clock": p.item.clock_id, "item": p.item.item, "step": p.step,
            "waits_on": p.waits_on, "state": p.state, "proposed_at": iso_z(p.proposed_at),
            "committed_at": iso_z(p.committed_at), "judged_at": iso_z(p.judged_at), "on_time": p.on_time,
            "outcome": p.outcome}


def _get(brand, proposal_id: str) -> Proposal:
    """One of the caller's proposals (its clock's brand, in the key's mode), or 404 as for any object."""
    found = Proposal.objects.select_related("item__clock").filter(pk=proposal_id).first() \
        if re.fullmatch(r"[A-Za-z0-9_]{1,32}", proposal_id) else None
    if found is not None:
        get_owned(brand, Clock.objects.all(), found.item.clock_id, "proposal")  # 404 unless the caller's
        return found
    raise NotFound(f"no proposal {proposal_id!r}")


class ClockProposalView(BrandAPIView):
    parser_classes = [SafeJSONParser]

    @extend_schema(operation_id="clocks_items_propose", tags=["clocks"], request=ProposalCreateSerializer,
                   summary="Propose a step on a date",
                   description="The step enters the gate's queue now. Without waits_on the gate takes the queue "
                               "in order at once, judging each by when it was proposed; with waits_on it waits "
                               "for POST /proposals/{id}/approve and is judged when it commits. A hard date "
                               "judged late refuses it (outcome date_passed).",
                   responses={200: ProposalSerializer, **ERRORS, **NOT_FOUND})
    def post(self, request, clock_id: str, item: str):
        clock = get_clock(self.brand, clock_id)
        it = get_item(clock, item)
        body = self.body(ProposalCreateSerializer)
        with transaction.atomic():
            p = clock_propose(armer=DirectArmer(brand=self.brand, domain=clock.domain), item=it, step=body["step"],
                              waits_on=body["waits_on"])
        if p.state == Proposal.State.QUEUED:
            with through_the_gate():
                proposals_commit(armer=DirectArmer(brand=self.brand, domain=clock.domain))
            p.refresh_from_db()
        return Response(proposal_json(p))


class ProposalApproveView(BrandAPIView):
    parser_classes = [SafeJSONParser]

    @extend_schema(operation_id="proposals_approve", tags=["clocks"], request=None,
                   summary="Approve a proposal that waits on a person",
                   description="It commits now, and now judges it.",
                   responses={200: ProposalSerializer, **ERRORS, **NOT_FOUND,
                              409: error_response("proposal_not_waiting: it was committed or refused already")})
    def post(self, request, proposal_id: str):
        p = _get(self.brand, proposal_id)
        with through_the_gate():
            p = proposal_approve(armer=DirectArmer(brand=self.brand, domain=p.domain), proposal=p)
        return Response(proposal_json(p))


class ProposalDetailView(BrandAPIView):
    @extend_schema(operation_id="proposals_retrieve", tags=["clocks"], summary="Retrieve a proposal",
                   responses={200: ProposalSerializer, 401: ERRORS[401], **NOT_FOUND})
    def get(self, request, proposal_id: str):
        return Response(proposal_json(_get(self.brand, proposal_id)))
