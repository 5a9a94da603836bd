"""brands list · brands delete NAME --confirm NAME: a brand and everything of it, gone (services/brands.py)."""

from __future__ import annotations

from django.core.management.base import CommandError
from django.db.models import Count

from services.brands import brand_delete
from timers.management.base import KTCommand
from timers.models import Brand


class Command(KTCommand):
    help = "List the brands; delete one and everything of it (its clocks, timers, record, people's places)."

    def add_arguments(self, parser):
        sub = parser.add_subparsers(dest="action", required=True)
        sub.add_parser("list", help="each brand, its test clocks and members")
        rm = sub.add_parser("delete", help="delete a brand and everything of it; its workers let it go")
        rm.add_argument("brand", help="the brand's name or id")
        rm.add_argument("--confirm", default="", help="the brand's name again: nothing is deleted without it")

    def handle(self, *args, **o):
        getattr(self, f"_{o['action']}")(o)

    def _list(self, o):
        rows = Brand.objects.annotate(n_clocks=Count("test_clocks", distinct=True),
                                      n_people=Count("memberships", distinct=True)).order_by("name")
        for b in rows:
            self.stdout.write(f"{b.id}  {b.name}  {b.tier}  {b.n_clocks} test clock(s)  {b.n_people} member(s)")
        if not rows:
            self.stdout.write("no brands")

    def _delete(self, o):
        brand = self.brand(o["brand"])
        if o["confirm"] != brand.name:
            raise CommandError(f"confirm_required: deleting {brand.name} removes everything of it for good; "
                               f"say so with --confirm {brand.name!r}")
        self.stdout.write(brand_delete(brand=brand).says())
