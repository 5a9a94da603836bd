"""jobs create --subject sbj_… --service annual-return [--period 2027] [--input '{…}']: a one-off order."""

from __future__ import annotations

from calendars.models import Subject
from services.management.cli import json_option, pairs_option
from services.money import usd
from services.orders import job_order
from timers.errors import NotFound
from timers.management.base import KTCommand
from timers.timeutil import trace_z


class Command(KTCommand):
    help = "Order a one-off job for a subject: included within its plan's allowance, else priced."

    def add_arguments(self, parser):
        sub = parser.add_subparsers(dest="action", required=True)
        mk = sub.add_parser("create", help="order a job of a Service for a subject, on its clock at its time")
        mk.add_argument("--subject", required=True, help="sbj_…")
        mk.add_argument("--service", required=True, help="annual-return …")
        mk.add_argument("--period", help="2027, 2027-Q2, 2027-05 … (default: the one today falls in)")
        mk.add_argument("--input", help="the Service's input, as a JSON object")
        mk.add_argument("--metadata", action="append", metavar="KEY=VALUE")

    def handle(self, *args, **o):
        subject = Subject.objects.select_related("brand", "calendar").filter(pk=o["subject"]).first()
        if subject is None:
            raise NotFound(f"--subject: no subject {o['subject']!r}")
        job = job_order(brand=subject.brand, subject=subject, service=o["service"],
                        input=json_option(o["input"], option="--input"), period=o["period"],
                        metadata=pairs_option(o["metadata"], option="--metadata"))
        price = "included in " + job.subscription_id if job.subscription_id and not job.price_cents else usd(job.price_cents)
        late = f" · late at {trace_z(job.late_at)}" if job.late_at else ""
        self.stdout.write(f"{job.id} · {job.service} {job.period} · {subject.name} · {price}{late}")
