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

# What a user sees of a brand's live clock ("live" in the CLI and the owner console, no test_clock in the
# API), and the domain of Deploys, which reach every brand's live clock at once.
LIVE = "live"
# Each brand's live clock is its own clock domain, live_<brand id>: keys are unique per brand, and one
# brand's backlog is its own domain's work, run apart from another's (timers/live.py).
LIVE_PREFIX = "live_"
# A seed is joined into id seeds with "|": its alphabet leaves "|" out, so no seed can impersonate a key.
# "live", live_… and tc_… are what the live domains' and an unseeded clock's ids derive from: a seed equal
# to one would mint that domain's ids.
SEED_PATTERN = r"^(?!live$|live_|tc_)[A-Za-z0-9_.:-]{1,64}$"
SEED_RE = re.compile(SEED_PATTERN)


def new_id(prefix: str, *, seed: str | None = None, length: int = 14) -> str:
    """``prefix_`` and ``length`` letters and digits (about 6 bits each): random, or derived from ``seed``.

    Base64 with two letters standing in for "+" and "/" is fast (the tick makes two ids per firing);
    the tiny bias it adds does not matter for an opaque id.
    """
    if seed is None and length <= _RANDOM_CHARS:
        try:
            return f"{prefix}_{_random.pop()[:length]}"
        except IndexError:
            return f"{prefix}_{_refill()[:length]}"
    data = hashlib.sha256(seed.encode()).digest() if seed is not None else os.urandom(18)
    return f"{prefix}_{base64.b64encode(data, altchars=b'xZ')[:length].decode()}"


# Random ids' letters, drawn _RANDOM_AHEAD at a time: one getrandom and one base64 of them cost less than a
# tenth of what each id's own did, and the tick makes two ids a firing (a quarter of its per-timer Python was
# ids). Each id is 18 random bytes as before (24 letters, of which it takes ``length``). ``list.pop`` is
# atomic, so threads never share one; a forked child starts empty, never minting its parent's next ids.
_RANDOM_CHARS = 24
_RANDOM_AHEAD = 512
_random: list[str] = []


def _refill() -> str:
    text = base64.b64encode(os.urandom(18 * _RANDOM_AHEAD), altchars=b"xZ").decode()
    _random.extend(text[i:i + _RANDOM_CHARS] for i in range(_RANDOM_CHARS, len(text), _RANDOM_CHARS))
    return text[:_RANDOM_CHARS]


os.register_at_fork(after_in_child=_random.clear)


def live_domain(brand_id: str) -> str:
    """The clock domain of a brand's live clock."""
    return f"{LIVE_PREFIX}{brand_id}"


def brand_domain(domain: str | None, brand_id: str) -> str:
    """A clock domain as a caller names it, made the brand's: "live" (or nothing) is the brand's live clock."""
    return live_domain(brand_id) if not domain or domain == LIVE else domain


def is_live(domain: str | None) -> bool:
    """Whether ``domain`` is a live clock (a brand's, or "live" itself, where Deploys go)."""
    return domain is not None and (domain == LIVE or domain.startswith(LIVE_PREFIX))
