"""subscriptions create --subject sbj_… --plan tax-plan [--input '{"entity": "C corp", "states": ["CA"]}']
· subscriptions list [--subject sbj_…] [--test-clock tc_…] [--brand]"""

from __future__ import annotations

from calendars.models import Subject
from services import registry
from services.api_json import usage_json
from services.management.cli import brand_and_domain, json_option, pairs_option
from services.models import Subscription
from services.money import usd
from services.orders import subscription_start
from timers.errors import NotFound
from timers.management.base import KTCommand
from timers.timeutil import trace_z


class Command(KTCommand):
    help = "Subscribe a subject to a plan, and list subscriptions."

    def add_arguments(self, parser):
        sub = parser.add_subparsers(dest="action", required=True)
        mk = sub.add_parser("create", help="subscribe a subject to a plan, on the subject's clock at its time")
        mk.add_argument("--subject", required=True, help="sbj_…")
        mk.add_argument("--plan", required=True, help="tax-plan …")
        mk.add_argument("--input", help="the plan's input, as a JSON object")
        mk.add_argument("--metadata", action="append", metavar="KEY=VALUE")
        ls = sub.add_parser("list")
        ls.add_argument("--subject")
        ls.add_argument("--test-clock")
        ls.add_argument("--brand")

    def handle(self, *args, **o):
        if o["action"] == "create":
            subject = Subject.objects.select_related("brand", "calendar").filter(pk=o["subject"]).first()
            if subject is None:
                raise NotFound(f"--subject: no subject {o['subject']!r}")
            sub = subscription_start(brand=subject.brand, subject=subject, plan=o["plan"],
                                     input=json_option(o["input"], option="--input"),
                                     metadata=pairs_option(o["metadata"], option="--metadata"))
            self.stdout.write(self.line(sub))
            return
        brand, domain = brand_and_domain(self, brand=o["brand"], test_clock=o["test_clock"])
        qs = Subscription.objects.filter(brand=brand, domain=domain).select_related("subject").order_by("opened_at", "id")
        if o["subject"]:
            qs = qs.filter(subject_id=o["subject"])
        for sub in qs:
            self.stdout.write(self.line(sub))

    @staticmethod
    def line(sub: Subscription) -> str:
        svc = registry.get(sub.service, sub.version)
        price = f"{usd(svc.price.cents)} a {svc.price.every}" if svc.price.every else usd(svc.price.cents)
        used = ", ".join(f"{name} {u['used']}/{u['of']}" for name, u in usage_json(sub, svc).items() if u["used"])
        return " · ".join(p for p in [sub.id, sub.service, sub.subject.name, price, sub.status,
                                      f"since {trace_z(sub.opened_at)}", used] if p)
