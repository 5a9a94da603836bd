"""pools list · pools add POOL MEMBER · pools remove POOL MEMBER (--brand names the brand when there are
several). A pool is one a registered Service declares (Pool(hold="2d")); who is in it is the brand's data."""

from __future__ import annotations

from services.members import (
    member_get,
    member_says,
    pool_add,
    pool_declared,
    pool_remove,
    pool_rosters,
    pools_declared,
)
from timers.management.base import KTCommand


class Command(KTCommand):
    help = "Who is in each pool the brand's Services declare: list, add a member, remove one."

    def add_arguments(self, parser):
        sub = parser.add_subparsers(dest="action", required=True)
        ls = sub.add_parser("list", help="each declared pool, its hold and its members")
        add = sub.add_parser("add", help="put a member in a pool: they take its open Tasks from now")
        rm = sub.add_parser("remove", help="take a member out of a pool")
        for p in (add, rm):
            p.add_argument("pool")
            p.add_argument("member", help="mem_… or a username")
        for p in (ls, add, rm):
            p.add_argument("--brand", help="the brand's name or id (needed when there are several)")

    def handle(self, *args, **o):
        brand = self.brand(o["brand"])
        if o["action"] == "list":
            rosters = pool_rosters(brand_ids=[brand.id])
            declared = pools_declared()
            if not declared:
                self.stdout.write("no registered Service declares a pool")
            for pool in declared.values():
                members = rosters.get((brand.id, pool.name), [])
                services = ", ".join(s for s, _ in pool.holds)
                self.stdout.write(f"{pool.name}  hold {pool.hold}  ({services})  "
                                  f"{', '.join(member_says(m) for m in members) or 'nobody yet'}")
            return
        pool = pool_declared(o["pool"])
        m = member_get(brand=brand, ref=o["member"])
        if o["action"] == "add":
            pool_add(brand=brand, pool=pool.name, membership=m)
            self.stdout.write(f"{member_says(m)} is in {pool.name}: they take its open Tasks from now")
        else:
            pool_remove(brand=brand, pool=pool.name, membership=m)
            self.stdout.write(f"{member_says(m)} is out of {pool.name}")
