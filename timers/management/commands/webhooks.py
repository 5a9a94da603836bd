"""webhooks create --brand <name> --url <url> --events <type,…> [--live] [--description …] · webhooks list [--brand …]
· webhooks listen --brand <name> [--events job.*,clock.*] [--port 4242] [--count N] [--until TYPE]: receive them
on this machine

``create`` prints the endpoint and, on a line of its own, its signing secret (whsec_…), shown once. A test
endpoint (the default) hears the brand's test clocks; ``--live`` the live clock, as a key's mode decides over the
API. ``list`` prints one endpoint a line, with what it is still owed. Errors are one line, ``code: message``,
and a non-zero exit.
"""

from __future__ import annotations

from typing import Any

from django.core.management.base import CommandError, CommandParser

from timers import webhooks
from timers.models import WebhookEndpoint
from timers.webhook_listener import listen

from ..base import KTCommand


class Command(KTCommand):
    help = "Create and list webhook endpoints: where a brand's own systems hear its record."

    def add_arguments(self, parser: CommandParser) -> None:
        sub = parser.add_subparsers(dest="action", required=True)
        create = sub.add_parser("create", help="an endpoint; prints its secret once")
        create.add_argument("--brand")
        create.add_argument("--url", required=True, help="http:// or https://")
        create.add_argument("--events", required=True,
                            help='comma-separated: "*", exact types (clock.due) or prefixes (job.*)')
        create.add_argument("--live", action="store_true", help="hear the live clock (default: the test clocks)")
        create.add_argument("--description", default="")
        ls = sub.add_parser("list", help="a brand's endpoints, one a line")
        ls.add_argument("--brand")
        lsn = sub.add_parser("listen", help="receive the brand's events here: an endpoint at 127.0.0.1:PORT that "
                                            "prints each one (removed when it stops)")
        lsn.add_argument("--brand")
        lsn.add_argument("--events", default="*", help='comma-separated: "*", exact types or prefixes (job.*)')
        lsn.add_argument("--port", type=int, default=4242)
        lsn.add_argument("--live", action="store_true", help="hear the live clock (default: the test clocks)")
        lsn.add_argument("--count", type=int, help="stop after this many events")
        lsn.add_argument("--until", help="stop at an event of this type (test_clock.ready: an advance's end)")
        lsn.add_argument("--keep", action="store_true", help="keep the endpoint when it stops")

    def handle(self, *args: Any, **o: Any) -> None:
        getattr(self, f"_{o['action']}")(o)

    def _create(self, o: dict[str, Any]) -> None:
        brand = self.brand(o["brand"])
        events = [e.strip() for e in o["events"].split(",") if e.strip()]
        endpoint = webhooks.endpoint_create(brand=brand, livemode=o["live"], url=o["url"], enabled_events=events,
                                            description=o["description"])
        self.stdout.write(f"{endpoint.id} · {'live' if endpoint.livemode else 'test'} · {endpoint.url} · "
                          f"{', '.join(endpoint.enabled_events)}")
        self.stdout.write(endpoint.secret)

    def _listen(self, o: dict[str, Any]) -> None:
        events = [e.strip() for e in o["events"].split(",") if e.strip()]
        try:
            listen(brand=self.brand(o["brand"]), livemode=o["live"], events=events, port=o["port"],
                   count=o["count"], until=o["until"], keep=o["keep"], say=self._say)
        except OSError as exc:
            raise CommandError(f"port_unavailable: 127.0.0.1:{o['port']} cannot be listened on ({exc.strerror})") \
                from None

    def _say(self, line: str) -> None:
        self.stdout.write(line)
        self.stdout.flush()  # each event as it arrives, also into a pipe

    def _list(self, o: dict[str, Any]) -> None:
        brand = self.brand(o["brand"])
        rows = WebhookEndpoint.objects.filter(brand=brand).order_by("created_at", "id")
        self.stdout.write(f"{rows.count()} webhook endpoints of {brand.name}")
        for e in rows:
            owed = webhooks.owed_summary(e)
            self.stdout.write(f"  {e.id}  {'live' if e.livemode else 'test'}  {e.status}  {e.url}  "
                              f"{', '.join(e.enabled_events)}  owed {owed['owed']}"
                              + (f"  {e.description}" if e.description else ""))
