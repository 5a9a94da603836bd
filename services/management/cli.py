"""What the domain's commands share: which brand and clock a command acts on, and its JSON options."""

from __future__ import annotations

import json
from typing import Any

from django.core.management.base import CommandError

from timers.management.base import KTCommand
from timers.models import Brand, live_domain


def brand_and_domain(cmd: KTCommand, *, brand: str | None, test_clock: str | None) -> tuple[Brand, str]:
    """The brand named (or the only one) and the clock domain: the test clock named, else the brand's live clock.
    A test clock is one brand's: naming another brand beside it is an error."""
    clock = cmd.test_clock(test_clock)
    if clock is None:
        b = cmd.brand(brand)
        return b, live_domain(b.id)
    if brand and brand not in (clock.brand.name, clock.brand_id):
        raise CommandError(f"invalid_request: test clock {clock.id} is {clock.brand.name}'s, not {brand}'s")
    return clock.brand, clock.id


def json_option(text: str | None, *, option: str) -> dict[str, Any]:
    if not text:
        return {}
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise CommandError(f"invalid_json: {option}: {exc.msg} at character {exc.pos}") from None
    if not isinstance(value, dict):
        raise CommandError(f"invalid_json: {option}: a JSON object, e.g. '{{\"entity\": \"C corp\"}}'")
    return value


def pairs_option(values: list[str] | None, *, option: str) -> dict[str, str]:
    """``--metadata key=value`` (repeatable)."""
    out = {}
    for text in values or []:
        key, sep, value = text.partition("=")
        if not sep or not key:
            raise CommandError(f"invalid_request: {option}: write key=value, not {text!r}")
        out[key] = value
    return out
