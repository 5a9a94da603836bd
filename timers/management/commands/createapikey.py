"""createapikey --brand <name> [--name label] [--live]: prints a secret key once; only its sha256 is kept.

A test key (sk_test_…, the default) reaches the test clocks and their objects; a live key (sk_live_…) the
live clock's. Neither sees the other's (timers.selectors.owned).
"""

from __future__ import annotations

from typing import Any

from django.core.management.base import CommandError, CommandParser

from timers.api.inputs import name_problem
from timers.tenants import api_key_create, brand_get_or_create

from ..base import KTCommand


class Command(KTCommand):
    help = "Create a secret API key for a brand (the brand is created if new)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--brand", required=True)
        parser.add_argument("--name", default="")
        parser.add_argument("--live", action="store_true", help="a live key (sk_live_…) for the live clock")

    def handle(self, *args: Any, **o: Any) -> None:
        for option in ("brand", "name"):
            problem = name_problem(o[option]) or ("is empty" if option == "brand" and not o[option].strip() else None)
            if problem:
                raise CommandError(f"invalid_name: --{option} {problem}")
        brand = brand_get_or_create(name=o["brand"])
        row, secret = api_key_create(brand=brand, name=o["name"], live=o["live"])
        self.stdout.write(f"{brand.id} · {brand.name} · {row.id}")
        self.stdout.write(secret)
