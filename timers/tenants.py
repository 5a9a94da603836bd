"""Tenants: brands and their secret API keys (only a key's sha256 is stored)."""

from __future__ import annotations

import hashlib
import secrets

from .clock import wall_now
from .models import ApiKey, Brand


def brand_get_or_create(*, name: str) -> Brand:
    brand = Brand.objects.filter(name=name).first()
    if brand is None:
        brand, _ = Brand.objects.get_or_create(name=name, defaults={"created_at": wall_now()})
    return brand


def api_key_create(*, brand: Brand, name: str = "", live: bool = False) -> tuple[ApiKey, str]:
    """Make a secret key; returns (row, secret). Only the secret's sha256 is stored."""
    secret = f"sk_{'live' if live else 'test'}_{secrets.token_urlsafe(32)}"
    row = ApiKey.objects.create(brand=brand, name=name, prefix=secret[:12], digest=api_key_digest(secret),
                                created_at=wall_now())
    return row, secret


def api_key_digest(secret: str) -> str:
    # A key is 256 random bits: a fast hash is right (a slow KDF protects low-entropy passwords).
    return hashlib.sha256(secret.encode()).hexdigest()


def api_key_brand(*, secret: str) -> Brand | None:
    row = ApiKey.objects.select_related("brand").filter(digest=api_key_digest(secret), revoked_at=None).first()
    return None if row is None else row.brand
