"""Prefixed, opaque ids: tmr_, tc_, evt_, cmt_, sub_ …

A seeded id is derived from what it names (a clock domain and a key), so a replay of the same span
mints the same ids and the record's hash does not depend on chance.
"""

from __future__ import annotations

import base64
import hashlib
import os


def new_id(prefix: str, *, seed: str | None = None, length: int = 14) -> str:
    """``prefix_`` and ``length`` letters and digits (about 6 bits each): random, or derived from ``seed``.

    Base64 with two letters standing in for "+" and "/" is fast (the tick makes two ids per firing);
    the tiny bias it adds does not matter for an opaque id.
    """
    data = hashlib.sha256(seed.encode()).digest() if seed is not None else os.urandom(18)
    return f"{prefix}_{base64.b64encode(data, altchars=b'xZ')[:length].decode()}"
