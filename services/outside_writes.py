"""A write from outside the tick (an API view, an MCP tool): one transaction through the gate, whose refusal
(``timers.errors.Refused``, e.g. date_passed or needs_grant) is answered 409 with its code, nothing kept.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from django.db import transaction

from timers.errors import KeepingTimeError, Refused


@contextmanager
def through_the_gate() -> Iterator[None]:
    """One transaction; a refusal rolls it back and answers 409 with the refusal's code."""
    try:
        with transaction.atomic():
            yield
    except Refused as exc:
        raise KeepingTimeError(exc.message or f"refused: {exc.code}", code=exc.code, status=409) from None
