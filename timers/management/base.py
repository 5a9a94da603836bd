"""Commands say what is wrong in one line and exit non-zero: never a traceback."""

from __future__ import annotations

import os
import sys
from typing import Any

from django.core.management.base import BaseCommand, CommandError

from ..errors import KeepingTimeError
from ..models import Brand, TestClock


class KTCommand(BaseCommand):
    def execute(self, *args: Any, **options: Any) -> str | None:
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
