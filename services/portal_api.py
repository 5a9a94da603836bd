"""``POST /portal_sessions {subject}``: a link that signs a subject's customer in to the customer portal for an
hour, as Stripe's customer-portal sessions do. The brand's key makes it; the URL is shown once."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.response import Response

from calendars.contacts import contact_get
from calendars.models import Subject
from timers.api import idempotency
from timers.api.inputs import StrictCharField
from timers.api.openapi import ERRORS, NOT_FOUND
from timers.api.views import BrandAPIView, SafeJSONParser
from timers.selectors import get_owned
from timers.timeutil import iso_z

from .portal_sessions import portal_session_create


class PortalSessionSerializer(serializers.Serializer):
    subject = StrictCharField(max_length=32, help_text="The subject (sbj_…) whose customer signs in")
    contact = StrictCharField(required=False, max_length=32,
                              help_text="Who it is for (ctc_…): the page's 'you', and who its acts are done by; "
                                        "default the primary contact")


class PortalSessionView(BrandAPIView):
    parser_classes = [SafeJSONParser]

    @extend_schema(
        operation_id="portal_sessions_create", tags=["portal"], request=PortalSessionSerializer,
        summary="Make a customer portal link",
        description="A URL valid for one hour, once, that signs one of the customer's contacts in for the subject "
                    "(default: the primary one): their dates, their acts on their own clocks (done by them, on the "
                    "record), their subscriptions. Shown once; only its sha256 is kept (a replay under the same "
                    "Idempotency-Key answers without `url`, and `shown_once: [\"url\"]`).",
        responses={200: dict, **ERRORS, **NOT_FOUND},
    )
    def post(self, request):
        body = self.body(PortalSessionSerializer)
        subject = get_owned(self.brand, Subject.objects.all(), body["subject"], "subject")
        contact = contact_get(subject=subject, contact_id=body["contact"]) if "contact" in body else None
        session, path = portal_session_create(brand=self.brand, subject=subject, contact=contact)
        answer = Response({"id": session.id, "object": "portal_session", "subject": subject.id,
                           "contact": session.contact_id,
                           "url": request.build_absolute_uri(path), "expires_at": iso_z(session.expires_at)})
        return idempotency.shown_once(answer, "url")  # a replay under its Idempotency-Key leaves the link out
