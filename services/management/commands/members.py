"""members list · members show MEMBER · members invite EMAIL [--name "Grace Hopper"] [--role owner|member]
· members change MEMBER [--name …] [--role …] · members remove MEMBER [--successor MEMBER] (--brand names the
brand when there are several). A member is named by its id (mem_12) or username."""

from __future__ import annotations

from services.handovers import member_holds, member_remove
from services.members import (
    ROLES,
    default_link_base,
    member_change,
    member_get,
    member_id,
    member_invite,
    member_says,
    member_status,
    member_username,
    members_of,
    pools_of,
)
from timers.errors import KeepingTimeError, NotFound
from timers.management.base import KTCommand


class Command(KTCommand):
    help = "A brand's members: invite one by email, list, show, change, remove one handing over to a successor."

    def add_arguments(self, parser):
        sub = parser.add_subparsers(dest="action", required=True)
        ls = sub.add_parser("list", help="the brand's members and owners")
        show = sub.add_parser("show", help="one member: their pools, the dates and Tasks they answer for")
        show.add_argument("member", help="mem_… or a username")
        inv = sub.add_parser("invite", help="email someone a one-time link to join the brand")
        inv.add_argument("email")
        inv.add_argument("--name", default="", help="what clocks and messages call them: 'Grace Hopper'")
        inv.add_argument("--role", default="member", help="member (the delivery portal) or owner (the console too)")
        ch = sub.add_parser("change", help="a member's name or role")
        ch.add_argument("member")
        ch.add_argument("--name")
        ch.add_argument("--role")
        rm = sub.add_parser("remove", help="a member leaves; their dates and Tasks go to the successor")
        rm.add_argument("member")
        rm.add_argument("--successor", default="", help="the member (mem_… or username) who takes over")
        for p in (ls, show, inv, ch, rm):
            p.add_argument("--brand", help="the brand's name or id (needed when there are several)")

    def handle(self, *args, **o):
        self.the_brand = self.brand(o["brand"])
        getattr(self, f"_{o['action']}")(o)

    def _list(self, o):
        rows = list(members_of(brand=self.the_brand))
        if not rows:
            self.stdout.write(f"{self.the_brand.name} has no members: manage.py members invite EMAIL")
            return
        for m in rows:
            pools = ", ".join(pools_of(m)) or "no pool"
            self.stdout.write(f"{member_id(m)}  {member_says(m)}  {member_username(m)}  {m.role}  "
                              f"{member_status(m)}  {pools}")

    def _show(self, o):
        m = member_get(brand=self.the_brand, ref=o["member"])
        clocks, tasks = member_holds(brand=self.the_brand, membership=m)
        self.stdout.write(f"{member_id(m)} · {member_says(m)} · {member_username(m)} · {m.role} of "
                          f"{self.the_brand.name} · {member_status(m)}")
        self.stdout.write(f"pools: {', '.join(pools_of(m)) or 'none'}")
        self.stdout.write(f"answers for {len(clocks)} clock(s); holds {len(tasks)} Task(s)")
        for c in clocks:
            self.stdout.write(f"  clock {c.id} · {c.name} {c.period} · {c.domain}")
        for t in tasks:
            self.stdout.write(f"  Task {t.id} · {t.step} · {t.job.service} {t.job.period} · hold until "
                              f"{t.hold_until:%Y-%m-%d %H:%MZ}")

    def _invite(self, o):
        invite = member_invite(brand=self.the_brand, email=o["email"], name=o["name"], role=self._role(o["role"]),
                               link_base=default_link_base(), by="the brand")
        m = invite.membership
        self.stdout.write(f"{member_id(m)} · invited {m.invited_email} to {self.the_brand.name} as {m.role} with a "
                          "link to accept: they are a member once they do")

    def _role(self, role):
        if role is not None and role not in ROLES:
            raise KeepingTimeError(f"--role is owner or member, not {role!r}", code="invalid_role")
        return role

    def _change(self, o):
        m = member_change(brand=self.the_brand, membership=member_get(brand=self.the_brand, ref=o["member"]),
                          name=o["name"], role=self._role(o["role"]))
        self.stdout.write(f"{member_id(m)} · {member_says(m)} · {m.role}")

    def _remove(self, o):
        m = member_get(brand=self.the_brand, ref=o["member"])
        successor = None
        if o["successor"]:
            try:
                successor = member_get(brand=self.the_brand, ref=o["successor"])
            except NotFound:
                raise KeepingTimeError(f"--successor: no member {o['successor']!r} of {self.the_brand.name}",
                                       code="successor_not_member") from None
        done = member_remove(brand=self.the_brand, membership=m, successor=successor, by="the brand")
        self.stdout.write(done.says())
        for what, ids in (("clock", done.clocks), ("Task", done.tasks), ("reopened Task", done.reopened),
                          ("window closed", done.windows)):
            for i in ids:
                self.stdout.write(f"  {what} {i}")
