"""A contact as a request gives it (POST /subjects/<id>/contacts, a subject's ``contacts``): the fields and the
schema that says what calendars/contacts.py's checks take, so a request the schema allows is one the API takes."""

from __future__ import annotations

from typing import Any

from drf_spectacular.extensions import OpenApiSerializerFieldExtension
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from calendars.contacts import MAX_CONTACTS
from calendars.roles import ROLE_NAME
from timers.api.inputs import NameField, StrictBooleanField, StrictCharField, ZoneField


class EmailField(StrictCharField):
    """An address as calendars/contacts.py checks it (Django's validate_email): invalid_email otherwise."""


class PhoneField(StrictCharField):
    """A number of 4 to 20 digits, each maybe followed by a separator: invalid_phone otherwise."""


class RoleField(StrictCharField):
    """A lowercase word (calendars/roles.py's ROLE_NAME): invalid_role otherwise."""


class MakePrimaryField(StrictBooleanField):
    """A change's ``primary``: true makes them primary; false is refused (another is made primary instead)."""


PHONE_PATTERN = r"^\+?\(?(?:[0-9][ ()\-.]{0,2}){3,19}[0-9]$"


class EmailSchema(OpenApiSerializerFieldExtension):
    target_class = EmailField

    def map_serializer_field(self, auto_schema: Any, direction: Any) -> dict[str, Any]:
        return {"type": "string", "format": "email"}


class PhoneSchema(OpenApiSerializerFieldExtension):
    target_class = PhoneField

    def map_serializer_field(self, auto_schema: Any, direction: Any) -> dict[str, Any]:
        return {"type": "string", "pattern": PHONE_PATTERN}


class RoleSchema(OpenApiSerializerFieldExtension):
    target_class = RoleField

    def map_serializer_field(self, auto_schema: Any, direction: Any) -> dict[str, Any]:
        return {"type": "string", "pattern": ROLE_NAME.pattern}


class MakePrimarySchema(OpenApiSerializerFieldExtension):
    target_class = MakePrimaryField

    def map_serializer_field(self, auto_schema: Any, direction: Any) -> dict[str, Any]:
        return {"type": "boolean", "enum": [True]}


class ContactFields(serializers.Serializer):
    name = NameField(required=False, max_length=200, help_text="Ada Lovelace")
    email = EmailField(required=False, max_length=254, help_text="ada@example.com: where their dates' emails go")
    phone = PhoneField(required=False, allow_blank=True, max_length=32, help_text="+1 212 555 0100")
    zone = ZoneField(required=False, allow_blank=True, max_length=64,
                     help_text="The zone their times are said in; empty: the customer's calendar's")
    role = RoleField(required=False, max_length=32,
                     help_text="The brand's word for them (officer, bookkeeper): a Service's "
                               "answers_for='customer:officer' finds them by it")
    primary = MakePrimaryField(required=False, help_text="true: they become the one a customer's date goes to "
                                                         "first (false is refused: make another primary instead)")


class ContactCreateSerializer(ContactFields):
    name = NameField(max_length=200, help_text="Ada Lovelace")
    email = EmailField(max_length=254, help_text="ada@example.com: where their dates' emails go")
    primary = StrictBooleanField(required=False, help_text="Who a date the customer answers for goes to first (one "
                                                           "is): their first contact is, whatever it says")


@extend_schema_field(ContactCreateSerializer(many=True))
class ContactsField(serializers.ListField):
    """A subject's people as its create takes them: calendars/contacts.py's check_contacts reads each (one
    primary, each address once), naming the one at fault (contacts[1].email)."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(child=serializers.DictField(), max_length=MAX_CONTACTS, **kwargs)
