"""Amounts as the API takes them: a whole number in the currency's smallest unit, with its ``currency``
(Stripe's ``amount``): 30000 is $300.00, and a float or a dollar string is ``400 invalid_amount``."""

from __future__ import annotations

import re

from django.http import QueryDict
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from timers.api.openapi import Choice
from timers.errors import KeepingTimeError

from .money import CURRENCIES, MAX_AMOUNT, check_amount

_DIGITS_ONLY = re.compile(r"[0-9]{1,15}")


@extend_schema_field({"type": "integer", "minimum": 1, "maximum": MAX_AMOUNT, "example": 30000,
                      "description": "A whole number in the currency's smallest unit: 30000 is $300.00"})
class AmountField(serializers.Field):
    """An amount in cents: a JSON integer (a form field writes it as digits). 300.0, 300.5 and "300.00" are
    refused ``invalid_amount``: each once read as dollars is what turned 30000 into 3,000,000 cents."""

    def to_internal_value(self, data):
        if isinstance(data, str) and isinstance(getattr(self.root, "initial_data", None), QueryDict) \
                and _DIGITS_ONLY.fullmatch(data):
            data = int(data)
        try:
            return check_amount(data, param=self.field_name)[0]
        except KeepingTimeError as exc:
            raise serializers.ValidationError(exc.message.split(": ", 1)[-1], code=exc.code) from None

    def to_representation(self, value):
        return value


class CurrencyField(Choice):
    def __init__(self, **kwargs):
        kwargs.setdefault("help_text", "Three-letter ISO code, lowercase (Stripe's): usd")
        super().__init__(choices=list(CURRENCIES), component="Currency", **kwargs)

    def to_internal_value(self, data):
        if data not in CURRENCIES:
            raise serializers.ValidationError(f"one of {', '.join(CURRENCIES)}, not {data!r}",
                                              code="invalid_currency")
        return data
