"""Secret keys, as Stripe takes them: ``Authorization: Bearer sk_test_…`` or HTTP basic with the key as username.

A good key authenticates as its brand: ``request.auth`` is the Brand and ``request.user`` a BrandUser, so
every view filters what it reads and writes by ``request.auth``.

A key also has a mode, as Stripe's do: ``sk_live_…`` acts on the live clock's objects, ``sk_test_…`` on
the test clocks and their objects. The mode is the key's (its stored prefix) and rides on the Brand the
request carries (``livemode(request.auth)``), so the brand-scoped lookups in ``timers.selectors`` scope by
mode wherever they scope by brand.
"""

from __future__ import annotations

import base64
import binascii
from typing import TYPE_CHECKING, Any

from drf_spectacular.extensions import OpenApiAuthenticationExtension
from rest_framework.authentication import BaseAuthentication, get_authorization_header
from rest_framework.exceptions import AuthenticationFailed
from rest_framework.permissions import BasePermission

from .. import tenants
from ..models import Brand
from ..sql.requests import key_brand

if TYPE_CHECKING:
    from django.http import HttpRequest
    from drf_spectacular.openapi import AutoSchema
    from rest_framework.request import Request
    from rest_framework.views import APIView

INVALID_KEY = "Invalid API key provided. Send it as 'Authorization: Bearer sk_test_…'."
LIVE_PREFIX = "sk_live_"


def livemode(brand: Brand) -> bool:
    """The mode of the key the request's brand authenticated with: True for a live key."""
    mode: bool | None = getattr(brand, "livemode", None)
    if mode is None:
        # Only SecretKeyAuthentication makes the brand a request acts as; anything else is a bug, and
        # guessing a mode here would hand one mode's objects to the other.
        raise RuntimeError(f"brand {brand.pk} did not come from a key: its mode is unknown")
    return mode


class BrandUser:
    """What ``request.user`` is for a request made with a brand's key: not a Django user."""

    is_authenticated = True
    is_anonymous = False
    is_active = True
    is_staff = False
    is_superuser = False

    def __init__(self, brand: Brand):
        self.brand = brand
        self.pk = self.id = brand.pk
        self.username = brand.name
        self.livemode = livemode(brand)

    def __str__(self) -> str:
        return self.username


def _secret_from(header: bytes) -> str | None:
    """The secret in an Authorization header, or None when the header is not one we understand."""
    parts = header.split()
    if len(parts) != 2:
        return None
    scheme, credential = parts[0].lower(), parts[1]
    try:
        if scheme == b"bearer":
            return credential.decode("ascii")
        if scheme == b"basic":
            decoded = base64.b64decode(credential, validate=True).decode("utf-8")
            return decoded.partition(":")[0]  # Stripe: the key is the username, the password is empty
    except (binascii.Error, UnicodeDecodeError, ValueError):
        return None
    return None


class SecretKeyAuthentication(BaseAuthentication):
    # Also Django's request itself: an Idempotency-Key's dispatch asks before DRF wraps it (BrandAPIView).
    def authenticate(self, request: Request | HttpRequest) -> tuple[BrandUser, Brand] | None:
        header = get_authorization_header(request)  # type: ignore[arg-type]  # it reads META, as Django's has
        if not header:
            return None  # HasBrand then answers 401 (NotAuthenticated), as authenticate_header says Bearer
        secret = _secret_from(header)
        if not secret or "\x00" in secret:
            raise AuthenticationFailed(INVALID_KEY)
        found = key_brand(tenants.api_key_digest(secret))
        if found is None:
            raise AuthenticationFailed(INVALID_KEY)
        key_id, prefix, brand = found
        # A fresh instance per request: the mode is this key's, never another request's; and the key's id,
        # which its rate limit counts by (timers.api.throttles.ApiKeyRateThrottle).
        brand.livemode = prefix.startswith(LIVE_PREFIX)
        brand.api_key_id = key_id
        return BrandUser(brand), brand

    def authenticate_header(self, request: Request) -> str:
        # A WWW-Authenticate value makes DRF answer 401 rather than 403.
        return 'Bearer realm="api"'


class HasBrand(BasePermission):
    """Every API view needs a brand's key (without one, DRF raises NotAuthenticated: a 401)."""

    def has_permission(self, request: Request, view: APIView) -> bool:
        return isinstance(request.auth, Brand)


class SecretKeyScheme(OpenApiAuthenticationExtension):
    """The OpenAPI security schemes: a bearer secret key, or basic auth with the key as username."""

    target_class = SecretKeyAuthentication
    name = ["secretKey", "secretKeyBasic"]

    def get_security_requirement(self, auto_schema: AutoSchema) -> list[dict[str, list[Any]]]:
        return [{"secretKey": []}, {"secretKeyBasic": []}]  # either one (OR)

    def get_security_definition(self, auto_schema: AutoSchema) -> list[dict[str, Any]]:
        return [
            {"type": "http", "scheme": "bearer", "description": "A secret key: Authorization: Bearer sk_test_…"},
            {"type": "http", "scheme": "basic", "description": "The secret key as username, no password"},
        ]
