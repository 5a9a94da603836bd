"""The console's members and pools: an owner invites a member by email (a one-time link to accept the invite),
changes a member's name or role, puts them in pools and takes them out, and removes one, handing what they
answer for to a successor chosen from the brand's members. Pools: each pool the registered Services declare,
its hold and its members, with add and take out.

Every change calls the service function the API and the CLI call (services/members.py), in one transaction;
a refusal is a message with its code, and nothing changes. Messages name people, never ids. Loaded by
PortalsConfig.ready (portals/apps.py); the site wraps both admins in BrandScoped, so an owner reads and changes
only their brands' members.
"""

from __future__ import annotations

from django import forms
from django.contrib import admin, messages
from django.contrib.admin.utils import unquote
from django.core.exceptions import PermissionDenied
from django.db import transaction
from django.http import HttpResponseRedirect
from django.template.response import TemplateResponse
from django.urls import reverse

from services.handovers import member_holds, member_remove
from services.members import (
    Declared,
    answers_as,
    member_change,
    member_email,
    member_invite,
    member_reinvite,
    member_says,
    member_status,
    member_username,
    pool_add,
    pool_remove,
    pool_rosters,
    pools_declared,
    pools_of,
)
from services.models import PoolMember
from timers.errors import KeepingTimeError
from timers.models import Brand, Membership

from .actions import who
from .scope import is_owner, request_brands
from .site import site

ROLES = [(Membership.Role.MEMBER, "Member: the delivery portal"),
         (Membership.Role.OWNER, "Owner: the owner console too")]


def _may_change(request) -> bool:
    user = request.user
    return bool(user.is_active and (user.is_superuser or is_owner(user)))


def _brands(request) -> list[Brand]:
    ids = request_brands(request)
    qs = Brand.objects.all() if ids is None else Brand.objects.filter(pk__in=ids)
    return list(qs.order_by("name"))


def _link_base(request) -> str:
    # The host the owner reached the console at (Django checks it against ALLOWED_HOSTS).
    return request.build_absolute_uri("/")


def _refused(exc: KeepingTimeError) -> str:
    return f"Not done: {exc.message} ({exc.code}). Nothing was changed."


def _page(model_admin, request, template: str, **context) -> TemplateResponse:
    return TemplateResponse(request, template, {**model_admin.admin_site.each_context(request),
                                                "opts": model_admin.model._meta, **context})


# -- forms -----------------------------------------------------------------------------------------------------
class InviteForm(forms.Form):
    brand = forms.ChoiceField(label="Brand")
    email = forms.EmailField(max_length=150, help_text="The invite goes here; they sign in with it")
    name = forms.CharField(max_length=200, required=False,
                           help_text="What clocks, Tasks and messages call them: Grace Hopper")
    role = forms.ChoiceField(choices=ROLES, initial=Membership.Role.MEMBER)

    def __init__(self, *args, brands: list[Brand], **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["brand"].choices = [(b.id, b.name) for b in brands]
        if len(brands) == 1:
            self.fields["brand"].initial = brands[0].id
            self.fields["brand"].widget = forms.HiddenInput()


class MemberForm(forms.Form):
    name = forms.CharField(max_length=200, required=False, help_text="What clocks, Tasks and messages call them")
    role = forms.ChoiceField(choices=ROLES)


class PoolsForm(forms.Form):
    pools = forms.MultipleChoiceField(required=False, widget=forms.CheckboxSelectMultiple,
                                      help_text="They take the open Tasks of each pool they are in, at once")

    def __init__(self, *args, declared: dict[str, Declared], **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["pools"].choices = [(p.name, f"{p.name} (hold {p.hold})") for p in declared.values()]


class RemoveForm(forms.Form):
    successor = forms.ChoiceField(required=False, label="Hand over to",
                                  help_text="Their dates go to this member; their Tasks too, where this member is "
                                            "in the Task's pool (otherwise back to the pool)")

    def __init__(self, *args, others: list[Membership], **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["successor"].choices = [("", "nobody (they answer for nothing)")] + [
            (str(m.pk), member_says(m)) for m in others]


# -- members -----------------------------------------------------------------------------------------------------
@admin.register(Membership, site=site)
class MemberAdmin(admin.ModelAdmin):
    list_display = ("who", "username", "role", "status", "pools", "brand")
    list_filter = ("role", "brand")
    search_fields = ("user__username", "user__email", "name")
    list_select_related = ("user", "brand")
    ordering = ("brand__name", "name", "user__username")
    actions = None
    change_list_template = "portals/owner/member_change_list.html"

    # The pages below change members through the service functions; Django's own forms never do.
    def has_add_permission(self, request):
        return _may_change(request)

    def has_change_permission(self, request, obj=None):
        return _may_change(request)

    def has_delete_permission(self, request, obj=None):
        return False

    @admin.display(description="name", ordering="name")
    def who(self, obj: Membership) -> str:
        return member_says(obj)

    @admin.display(description="signs in as", ordering="user__username")
    def username(self, obj: Membership) -> str:
        return member_username(obj)

    @admin.display(description="status")
    def status(self, obj: Membership) -> str:
        if obj.user is None:
            return "invited: not accepted yet"
        return "invited: no password yet" if member_status(obj) == "invited" else "active"

    @admin.display(description="pools")
    def pools(self, obj: Membership) -> str:
        return ", ".join(p.pool for p in obj.pools.all()) or "—"

    def get_queryset(self, request):
        # Invites not accepted yet are listed too (Membership.objects leaves them out: they are no one's yet).
        qs = Membership.everyone.get_queryset().select_related("user", "brand").prefetch_related("pools")
        ordering = self.get_ordering(request)
        return qs.order_by(*ordering) if ordering else qs

    def changelist_view(self, request, extra_context=None):
        return super().changelist_view(request, {"title": "Members", **(extra_context or {})})

    # -- invite ------------------------------------------------------------------------------------------------
    def add_view(self, request, form_url="", extra_context=None):
        if not self.has_add_permission(request):
            raise PermissionDenied
        brands = _brands(request)
        form = InviteForm(request.POST or None, brands=brands)
        if request.method == "POST" and form.is_valid():
            d = form.cleaned_data
            brand = next(b for b in brands if b.id == d["brand"])
            try:
                invite = member_invite(brand=brand, email=d["email"], name=d["name"], role=d["role"],
                                       link_base=_link_base(request), by=who(request.user, brand.id))
            except KeepingTimeError as exc:
                param = getattr(exc, "param", None)
                form.add_error(param if param in form.fields else None, f"{exc.message} ({exc.code})")
            else:
                m = invite.membership
                self.message_user(request, f"Invite sent to {m.invited_email}: {member_says(m)} is in {brand.name} "
                                           f"as {'an owner' if m.role == Membership.Role.OWNER else 'a member'} once "
                                           "they accept it.", messages.SUCCESS)
                return HttpResponseRedirect(reverse("admin:timers_membership_change", args=[m.pk]))
        return _page(self, request, "portals/owner/form_page.html", title="Invite a member", form=form,
                     submit="Send the invite", cancel=reverse("admin:timers_membership_changelist"),
                     intro="They get one email with a link to accept (it works once, for a few days): they sign "
                           "in, or choose a password if they have no account. Until they accept they see nothing "
                           "of the brand. A member then signs in to the delivery portal and sees their Tasks and "
                           "dates; an owner also runs the brand from this console.")

    # -- one member: name and role, pools, the invite again, remove -------------------------------------------
    def change_view(self, request, object_id, form_url="", extra_context=None):
        membership = self.get_object(request, unquote(object_id))
        if membership is None:  # another brand's, or none: as every console page, back to the index
            return self._get_obj_does_not_exist_redirect(request, self.opts, object_id)
        brand = membership.brand
        declared = pools_declared()
        others = [m for m in self.get_queryset(request).filter(brand=brand, user__isnull=False)
                  .exclude(pk=membership.pk)]
        details = MemberForm(initial={"name": membership.name, "role": membership.role})
        pools = PoolsForm(initial={"pools": pools_of(membership)}, declared=declared)
        remove = RemoveForm(others=others)
        if request.method == "POST":
            if not self.has_change_permission(request, membership):
                raise PermissionDenied
            do = request.POST.get("do", "")
            if do == "save":
                details = MemberForm(request.POST)
                if details.is_valid():
                    return self._save(request, membership, details.cleaned_data)
            elif do == "pools":
                pools = PoolsForm(request.POST, declared=declared)
                if pools.is_valid():
                    return self._pools(request, membership, set(pools.cleaned_data["pools"]))
            elif do == "reinvite":
                return self._reinvite(request, membership)
            elif do == "remove":
                remove = RemoveForm(request.POST, others=others)
                if remove.is_valid():
                    heir = next((m for m in others if str(m.pk) == remove.cleaned_data["successor"]), None)
                    return self._remove(request, membership, heir)
        clocks, tasks = member_holds(brand=brand, membership=membership)
        return _page(self, request, "portals/owner/member_detail.html", title=member_says(membership),
                     member=membership, status=member_status(membership), answers_as=answers_as(membership),
                     username=member_username(membership),
                     clocks=clocks, tasks=tasks, details=details, pools=pools, remove=remove,
                     can_change=self.has_change_permission(request, membership))

    def _back(self, membership: Membership) -> HttpResponseRedirect:
        return HttpResponseRedirect(reverse("admin:timers_membership_change", args=[membership.pk]))

    def _save(self, request, membership: Membership, d: dict) -> HttpResponseRedirect:
        try:
            m = member_change(brand=membership.brand, membership=membership, name=d["name"], role=d["role"])
        except KeepingTimeError as exc:
            self.message_user(request, _refused(exc), messages.ERROR)
        else:
            self.message_user(request, f"Saved: {member_says(m)} is {'an owner' if m.role == 'owner' else 'a member'} "
                                       f"of {m.brand.name}.", messages.SUCCESS)
        return self._back(membership)

    def _pools(self, request, membership: Membership, wanted: set[str]) -> HttpResponseRedirect:
        have = set(pools_of(membership))
        try:
            with transaction.atomic():
                for pool in sorted(wanted - have):
                    pool_add(brand=membership.brand, pool=pool, membership=membership)
                for pool in sorted(have - wanted):
                    pool_remove(brand=membership.brand, pool=pool, membership=membership)
        except KeepingTimeError as exc:
            self.message_user(request, _refused(exc), messages.ERROR)
            return self._back(membership)
        name = member_says(membership)
        said = [f"{name} is in {', '.join(sorted(wanted - have))} now" if wanted - have else "",
                f"{name} is out of {', '.join(sorted(have - wanted))}" if have - wanted else ""]
        self.message_user(request, "; ".join(s for s in said if s) + "." if any(said) else "No change.",
                          messages.SUCCESS)
        return self._back(membership)

    def _reinvite(self, request, membership: Membership) -> HttpResponseRedirect:
        try:
            member_reinvite(brand=membership.brand, membership=membership, link_base=_link_base(request),
                            by=who(request.user, membership.brand_id))
        except KeepingTimeError as exc:
            self.message_user(request, _refused(exc), messages.ERROR)
        else:
            self.message_user(request, f"A new invite went to {member_email(membership) or member_says(membership)}.",
                              messages.SUCCESS)
        return self._back(membership)

    def _remove(self, request, membership: Membership, heir: Membership | None) -> HttpResponseRedirect:
        try:
            done = member_remove(brand=membership.brand, membership=membership, successor=heir,
                                 by=who(request.user, membership.brand_id))
        except KeepingTimeError as exc:
            self.message_user(request, _refused(exc), messages.ERROR)
            return self._back(membership)
        self.message_user(request, done.says(), messages.SUCCESS)
        return HttpResponseRedirect(reverse("admin:timers_membership_changelist"))


# -- pools -------------------------------------------------------------------------------------------------------
@admin.register(PoolMember, site=site)
class PoolAdmin(admin.ModelAdmin):
    """The pools page is this model's list: each declared pool per brand, with add and take out."""

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return _may_change(request)

    def has_delete_permission(self, request, obj=None):
        return False

    def change_view(self, request, object_id, form_url="", extra_context=None):
        return HttpResponseRedirect(reverse("admin:services_poolmember_changelist"))

    def changelist_view(self, request, extra_context=None):
        if not self.has_view_or_change_permission(request):
            raise PermissionDenied
        brands = _brands(request)
        if request.method == "POST":
            if not self.has_change_permission(request):
                raise PermissionDenied
            self._act(request, brands)
            return HttpResponseRedirect(request.path)
        declared = pools_declared()
        rosters = pool_rosters(brand_ids=[b.id for b in brands])
        people = {}
        for m in Membership.objects.filter(brand__in=brands).select_related("user").order_by("name", "user__username"):
            people.setdefault(m.brand_id, []).append(m)
        sections = []
        for brand in brands:
            rows = []
            for pool in declared.values():
                inside = rosters.get((brand.id, pool.name), [])
                rows.append({"pool": pool, "members": inside,
                             "outside": [m for m in people.get(brand.id, []) if m not in inside]})
            sections.append({"brand": brand, "pools": rows})
        return _page(self, request, "portals/owner/pools.html", title="Pools", sections=sections,
                     can_change=self.has_change_permission(request), several=len(brands) > 1)

    def _act(self, request, brands: list[Brand]) -> None:
        p = request.POST
        brand = next((b for b in brands if b.id == p.get("brand")), None)
        pool = pools_declared().get(p.get("pool", ""))
        member = (Membership.everyone.select_related("user").filter(brand=brand, pk=p.get("member")).first()
                  if brand is not None and str(p.get("member", "")).isdigit() else None)
        if pool is None or member is None or p.get("do") not in ("add", "remove"):
            self.message_user(request, "Not done: choose a member and a pool of your brand.", messages.ERROR)
            return
        try:
            if p["do"] == "add":
                pool_add(brand=brand, pool=pool.name, membership=member)
                said = f"{member_says(member)} is in {pool.name}: they take its open Tasks from now."
            else:
                pool_remove(brand=brand, pool=pool.name, membership=member)
                said = f"{member_says(member)} is out of {pool.name}."
        except KeepingTimeError as exc:
            self.message_user(request, _refused(exc), messages.ERROR)
        else:
            self.message_user(request, said, messages.SUCCESS)
