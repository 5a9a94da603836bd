"""Prefixed, opaque ids: tmr_, tc_, evt_, cmt_, sub_ …

A seeded id is derived from what it names (a clock domain and a key), so a replay of the same span
mints the same ids and the record's hash does not depend on chance.
"""

from __future__ import annotations

import hashlib
import secrets

_ALPHABET = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"


def _base62(data: bytes, length: int) -> str:
    n = int.from_bytes(data, "big")
    out = []
    for _ in range(length):
        n, r = divmod(n, 62)
        out.append(_ALPHABET[r])
    return "".join(out)


def new_id(prefix: str, *, seed: str | None = None, length: int = 14) -> str:
    data = hashlib.sha256(seed.encode()).digest() if seed is not None else secrets.token_bytes(16)
    return f"{prefix}_{_base62(data, length)}"
