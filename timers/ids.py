"""Prefixed, opaque ids: tmr_, tc_, evt_, cmt_, sub_ …

A seeded id is derived from what it names (a clock domain's seed and a key), so a replay of the same
span mints the same ids and the record's hash does not depend on chance. The domain enters through its
*seed*, not its id: a test clock's id is random, its seed is what the scenario calls itself
(``apis_tax``), so the same scenario loaded twice, or on another machine, mints the same ids.
"""

from __future__ import annotations

import base64
import hashlib
import os
import re

LIVE = "live"
# A seed is joined into id seeds with "|": its alphabet leaves "|" out, so no seed can impersonate a key.
# "live" and tc_… are what the live domain's and an unseeded clock's ids derive from: a seed equal to one
# would mint that domain's ids.
SEED_PATTERN = r"^(?!live$|tc_)[A-Za-z0-9_.:-]{1,64}$"
SEED_RE = re.compile(SEED_PATTERN)

_seeds: dict[str, str] = {}
_SEEDS_KEPT = 4096  # a worker visits many clocks over its life; the cache stays small


def new_id(prefix: str, *, seed: str | None = None, length: int = 14) -> str:
    """``prefix_`` and ``length`` letters and digits (about 6 bits each): random, or derived from ``seed``.

    Base64 with two letters standing in for "+" and "/" is fast (the tick makes two ids per firing);
    the tiny bias it adds does not matter for an opaque id.
    """
    data = hashlib.sha256(seed.encode()).digest() if seed is not None else os.urandom(18)
    return f"{prefix}_{base64.b64encode(data, altchars=b'xZ')[:length].decode()}"


def domain_seed(domain: str) -> str:
    """What ids minted in ``domain`` derive from: "live" for the live clock; a test clock's seed, or its
    id when it has none. Cached per process: a clock's seed is set at its creation and never changes."""
    if domain == LIVE:
        return LIVE
    seed = _seeds.get(domain)
    if seed is None:
        from .models import TestClock  # models import this module for their random ids

        row = TestClock.objects.filter(pk=domain).values_list("seed", flat=True).first()
        if row is None:
            return domain  # not a clock (yet): nothing to remember, the next call asks again
        if len(_seeds) >= _SEEDS_KEPT:
            _seeds.clear()
        seed = _seeds[domain] = row or domain
    return seed


def domain_id(prefix: str, domain: str, *parts: str, length: int = 14) -> str:
    """An id minted inside ``domain``, derived from the domain's seed and ``parts`` (what the id names)."""
    return new_id(prefix, seed="|".join((domain_seed(domain), *parts)), length=length)
