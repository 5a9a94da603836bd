"""Rate limits, as Stripe's: a burst over the limit is ``429 rate_limited`` with ``Retry-After`` (seconds).

The API's is per secret key (``ApiKeyRateThrottle``, on every BrandAPIView): one key's burst never slows
another's, the same brand's included. Sign-ins are per client address (``sign_in_limited``): the customer
portal's one-time link, the delivery portal's login form and the owner console's login, each answered with
an HTML page. Rates are REST_FRAMEWORK's DEFAULT_THROTTLE_RATES (``KT_RATE_LIMIT``, ``KT_SIGN_IN_RATE_LIMIT``:
"100/s", "1000/min"; "off" for none), read per request, so a test's override_settings applies. DRF's
SimpleRateThrottle keeps each key's recent requests in a cache. The API's is Django's default cache: each
process's memory unless CACHE_URL names a shared cache, so with N worker processes a key may make up to N times
the rate. Sign-ins count in the ``sign_in`` cache (``KT_SIGN_IN_CACHE``), by default Django's database cache,
so every worker process counts the same tries: the documented limit is the real one under gunicorn. Its
read-modify-write of an address's tries runs under a PostgreSQL advisory lock on the address, so two processes
counting at once never both take the last try.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

from django.core.cache import caches
from django.core.cache.backends.db import DatabaseCache
from django.db import router, transaction
from django.http import HttpRequest, HttpResponse
from django.template import engines
from rest_framework.settings import api_settings
from rest_framework.throttling import SimpleRateThrottle

from ..sql.requests import wait_for

if TYPE_CHECKING:
    from drf_spectacular.generators import SchemaGenerator
    from rest_framework.request import Request
    from rest_framework.views import APIView


API_SCOPE = "api_key"
SIGN_IN_SCOPE = "sign_in"


def retry_after(wait: float | None) -> int:
    """Whole seconds to wait, at least 1 (``Retry-After: 0`` reads as "now", and the next try is refused)."""
    return max(1, math.ceil(wait or 0))


class _Rated(SimpleRateThrottle):
    scope: str  # each throttle's (DRF's may be None, where a throttle is not scoped)

    def get_rate(self) -> str | None:
        # DRF reads its rates once, at import (THROTTLE_RATES): read them per request instead.
        return api_settings.DEFAULT_THROTTLE_RATES.get(self.scope)  # type: ignore[return-value]  # "100/s": the stubs say a number


class ApiKeyRateThrottle(_Rated):
    """Per secret key: request.auth is the Brand the key authenticated as, with the key's id on it
    (timers.api.auth.SecretKeyAuthentication)."""

    scope = API_SCOPE

    def allow_request(self, request: Request, view: APIView) -> bool:
        if getattr(request, "kt_rate_counted", False):  # counted already, before its Idempotency-Key was looked up
            return True
        return super().allow_request(request, view)

    def get_cache_key(self, request: Request, view: APIView | None) -> str | None:
        key_id = getattr(request.auth, "api_key_id", None)
        if key_id is None:
            return None  # no key: the view answers 401 before any throttle
        return self.cache_format % {"scope": self.scope, "ident": key_id}


class ClientAddressThrottle(_Rated):
    """Per client address: REMOTE_ADDR, or behind NUM_PROXIES proxies the address the first of them saw in
    X-Forwarded-For. NUM_PROXIES is 0 unless set (KT_NUM_PROXIES): DRF's default, None, would take the header
    whole, and a client could name itself anew on every try."""

    scope = SIGN_IN_SCOPE
    CACHE = "sign_in"

    def __init__(self) -> None:
        self.cache = caches[self.CACHE]
        super().__init__()

    def get_cache_key(self, request: Request, view: APIView | None) -> str | None:
        return self.cache_format % {"scope": self.scope, "ident": self.get_ident(request)}

    # Called outside DRF too (sign_in_limited), with no view: the throttle reads only the request.
    def allow_request(self, request: Request, view: APIView) -> bool:
        if not isinstance(self.cache, DatabaseCache):
            return super().allow_request(request, view)
        table = self.cache._table  # type: ignore[attr-defined]  # its rows are read, then written (the stubs leave the name out)
        alias = router.db_for_write(self.cache.cache_model_class)  # where DatabaseCache writes
        with transaction.atomic(using=alias):
            # Held to the transaction's end: another process's count of this address waits for this one.
            wait_for(f"{table}|{self.get_cache_key(request, view)}", using=alias)
            return super().allow_request(request, view)


_PAGE = """{% extends "portals/base.html" %}
{% block title %}Too many tries{% endblock %}
{% block content %}
<h1>Too many tries</h1>
<p class="meta">Too many sign-in attempts came from your address. Try again in {{ seconds }} second{{ seconds|pluralize }}.</p>
{% endblock %}"""


def too_many_page(request: HttpRequest, seconds: int) -> HttpResponse:
    page = engines["django"].from_string(_PAGE).render({"seconds": seconds}, request)
    response = HttpResponse(page, status=429)
    response["Retry-After"] = str(seconds)
    response["Cache-Control"] = "private, no-store"
    return response


def sign_in_limited(request: HttpRequest) -> HttpResponse | None:
    """Count one sign-in attempt from the request's address: None while under the limit, else the 429 page."""
    throttle = ClientAddressThrottle()
    # Outside DRF, with Django's request and no view: the throttle reads only the request's META.
    if throttle.allow_request(request, None):  # type: ignore[arg-type]
        return None
    return too_many_page(request, retry_after(throttle.wait()))


def openapi_rate_limited(result: dict[str, Any], generator: SchemaGenerator, request: Request | None,
                public: bool) -> dict[str, Any]:
    """drf-spectacular's postprocessing hook: every operation a key calls may answer 429 rate_limited."""
    error = {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}
    header = {"Retry-After": {"schema": {"type": "integer", "minimum": 1},
                              "description": "Seconds until the key may call again"}}
    for operations in result.get("paths", {}).values():
        for operation in operations.values():
            if not isinstance(operation, dict) or not operation.get("security"):
                continue
            operation.setdefault("responses", {}).setdefault("429", {
                "description": "rate_limited: the key sent more requests than its rate (KT_RATE_LIMIT); "
                               "quota_exceeded: a create past the brand's quota (KT_QUOTA_*, named in param)",
                "headers": header, "content": error})
    return result
