"""A customer's people over HTTP: ``GET/POST /subjects/<id>/contacts``, ``GET/POST/DELETE
/subjects/<id>/contacts/<ctc_…>``. The same functions as the console and the CLI (calendars/contacts.py): bad input
is a coded 400 naming its param (``invalid_email``, ``invalid_role``…), and nothing is written."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.response import Response

from calendars.contacts import contact_create, contact_get, contact_json, contact_remove, contact_update
from calendars.models import Contact
from timers.api.inputs import ListQuerySerializer
from timers.api.openapi import ERRORS, NOT_FOUND, const, error_response, list_serializer
from timers.api.views import BrandAPIView, SafeJSONParser
from timers.domains import domain_now, domain_writable
from timers.ids import brand_domain
from timers.selectors import page

from .api_schemas import ContactSerializer
from .contact_inputs import ContactCreateSerializer, ContactFields
from .subjects_api import get_subject

CONTACT_ORDER = ("seq", "id")


class DeletedContactSerializer(serializers.Serializer):
    id = serializers.CharField()
    object = const("contact", "DeletedContactObject")
    deleted = serializers.BooleanField()


def _writable(subject) -> None:
    # A deleted or advancing test clock's customer takes no changes (409), as every write on its objects.
    domain_writable(domain=brand_domain(subject.domain, subject.brand_id))


class ContactListView(BrandAPIView):
    parser_classes = [SafeJSONParser]

    @extend_schema(operation_id="subjects_contacts_list", tags=["subjects"], parameters=[ListQuerySerializer],
                   summary="List a customer's contacts",
                   description="Primary first, then as they were added.",
                   responses={200: list_serializer("ContactList", ContactSerializer), **ERRORS, **NOT_FOUND})
    def get(self, request, subject_id: str):
        params = self.query(ListQuerySerializer)
        subject = get_subject(self.brand, subject_id)
        scope = Contact.objects.filter(subject=subject)
        return Response(page(scope, scope=scope, order=CONTACT_ORDER, lookup="pk", params=params,
                             url=f"/subjects/{subject.id}/contacts",
                             render=lambda rows: [contact_json(c) for c in rows], what="contact"))

    @extend_schema(
        operation_id="subjects_contacts_create", tags=["subjects"], request=ContactCreateSerializer,
        summary="Add a contact to a customer",
        description="A person of the customer's: who a date the customer answers for goes to, who hears its notices "
                    "and opens their portal. Their first contact is primary. Every open date whose role now names "
                    "someone else moves to them, on the record (clock.assigned). Errors: invalid_name, "
                    "invalid_email, invalid_phone, invalid_zone, invalid_role (400, with param); contact_exists "
                    "(409: that address is theirs already).",
        responses={201: ContactSerializer, **ERRORS, **NOT_FOUND, 409: error_response("contact_exists")},
    )
    def post(self, request, subject_id: str):
        subject = get_subject(self.brand, subject_id)
        body = self.body(ContactCreateSerializer)
        _writable(subject)
        contact = contact_create(subject=subject, values=body, now=domain_now(domain=subject.domain))
        return Response(contact_json(contact), status=201)


class ContactDetailView(BrandAPIView):
    parser_classes = [SafeJSONParser]

    @extend_schema(operation_id="subjects_contacts_retrieve", tags=["subjects"], summary="Retrieve a contact",
                   responses={200: ContactSerializer, 401: ERRORS[401], **NOT_FOUND})
    def get(self, request, subject_id: str, contact_id: str):
        subject = get_subject(self.brand, subject_id)
        return Response(contact_json(contact_get(subject=subject, contact_id=contact_id)))

    @extend_schema(
        operation_id="subjects_contacts_update", tags=["subjects"], request=ContactFields, summary="Change a contact",
        description="Their name, email, phone, zone or role; primary: true makes them the one a customer's date goes "
                    "to first. The dates whose role now names someone else move, on the record.",
        responses={200: ContactSerializer, **ERRORS, **NOT_FOUND, 409: error_response("contact_exists")},
    )
    def post(self, request, subject_id: str, contact_id: str):
        subject = get_subject(self.brand, subject_id)
        contact = contact_get(subject=subject, contact_id=contact_id)
        body = self.body(ContactFields)
        _writable(subject)
        return Response(contact_json(contact_update(contact=contact, values=body)))

    @extend_schema(
        operation_id="subjects_contacts_delete", tags=["subjects"], summary="Remove a contact",
        description="The next oldest contact becomes primary if they were; the dates they answered for go to whoever "
                    "their role names now (nobody, once the customer has no contact), each on the record.",
        responses={200: DeletedContactSerializer, 401: ERRORS[401], **NOT_FOUND},
    )
    def delete(self, request, subject_id: str, contact_id: str):
        subject = get_subject(self.brand, subject_id)
        contact = contact_get(subject=subject, contact_id=contact_id)
        _writable(subject)
        contact_remove(contact=contact)
        return Response({"id": contact_id, "object": "contact", "deleted": True})
