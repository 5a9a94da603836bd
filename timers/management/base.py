"""Commands say what is wrong in one line and exit non-zero: never a traceback."""

from __future__ import annotations

import os
import sys
from typing import Any

from django.core.management.base import BaseCommand, CommandError

from ..api.inputs import name_problem, text_problem
from ..errors import KeepingTimeError
from ..models import Brand, TestClock

# Options that carry what a person wrote, checked for every command as the API checks its fields: a --name
# (of a subject, a calendar, a test clock, a member, a key, a version) and free text (a note, a notice …).
_NAMES = ("name",)
_TEXTS = ("description", "note", "notice", "reason", "what", "by")


def _written(options: dict[str, Any]) -> None:
    for option in _NAMES + _TEXTS:
        value = options.get(option)
        if not isinstance(value, str):
            continue
        problem = name_problem(value) if option in _NAMES else text_problem(value)
        if problem:
            code = "invalid_name" if option in _NAMES else "invalid_text"
            raise CommandError(f"{code}: --{option} {problem}")


class KTCommand(BaseCommand):
    def execute(self, *args: Any, **options: Any) -> str | None:
        _written(options)
        try:
            return super().execute(*args, **options)
        except KeepingTimeError as exc:
            raise CommandError(f"{exc.code}: {exc.message}") from None
        except BrokenPipeError:  # the reader went away (`| head`): nothing more to say, and no traceback
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
            sys.exit(1)

    def test_clock(self, clock_id: str | None) -> TestClock | None:
        if not clock_id:
            return None
        clock = TestClock.objects.exclude(status__in=TestClock.GONE).filter(pk=clock_id).first()
        if clock is None:
            raise CommandError(f"resource_missing: no test clock {clock_id!r}")
        return clock

    def brand(self, name: str | None) -> Brand:
        if name:
            brand = Brand.objects.filter(name=name).first() or Brand.objects.filter(pk=name).first()
            if brand is None:
                raise CommandError(f"resource_missing: no brand {name!r} (createapikey --brand {name!r} makes one)")
            return brand
        brands = list(Brand.objects.all()[:2])
        if len(brands) != 1:
            raise CommandError("brand_required: name the brand with --brand")
        return brands[0]
