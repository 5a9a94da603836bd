"""mcp [--key sk_test_…]: the agent tools over MCP on stdio, acting as one API key's brand, in its mode."""

from __future__ import annotations

import os

from django.core.management.base import CommandError
from rest_framework.exceptions import AuthenticationFailed

from agents.tools import keyed_brand
from timers.management.base import KTCommand


class Command(KTCommand):
    help = ("Serve the agent tools (list_timers, get_timer, subject_calendar, list_events, set_policy, "
            "advance_test_clock, acknowledge) over MCP on stdio, as the brand of one API key.")

    def add_arguments(self, parser):
        parser.add_argument("--key", help="a secret key, sk_test_… or sk_live_… (default: $KT_API_KEY; the "
                                          "environment keeps it out of the process list)")

    def handle(self, *args, **o):
        secret = o["key"] or os.environ.get("KT_API_KEY", "")
        if not secret:
            raise CommandError("invalid_api_key: no key: pass --key sk_test_… or set KT_API_KEY")
        try:
            brand = keyed_brand(secret)
        except AuthenticationFailed:
            raise CommandError("invalid_api_key: that key opens no brand (unknown or revoked); "
                               "createapikey makes one") from None
        mode = "live" if brand.livemode else "test"
        # stdout is the protocol's: anything said to a person goes to stderr.
        self.stderr.write(f"Keeping Time MCP on stdio for {brand.name}, {mode} key; stop with Ctrl-D")
        from agents.server import build  # noqa: PLC0415 - the mcp package costs a second to import: only when serving

        build(secret).run("stdio")
