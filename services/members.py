"""A brand's people: its members and owners (``timers.models.Membership``) and who is in each pool
(``PoolMember``). Keyword-only service functions the API (services/members_api.py), the owner console
(portals/owner/members.py) and the CLI (``manage.py members``, ``manage.py pools``) share.

A Service declares a pool by name and its hold (``Pool(hold="2d")``); who is in it is a PoolMember row, per
brand, so a member added to ``brokers`` takes the next open Task at once, with no deploy. Invites and pool
changes are wall-clock acts on the tenant, not domain time: nothing of them is on the record. A member who
leaves hands over what they answer for, and that is on the record of each clock domain it touches
(``clock.reassigned``, ``task.handed_over``, ``task.reopened``, ``window.closed``, each with why
``member_left``): see ``handovers.member_remove``, which sits above Tasks and windows.
"""

from __future__ import annotations

import hashlib
import re
import secrets
import smtplib
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.password_validation import validate_password
from django.contrib.auth.tokens import default_token_generator
from django.core.exceptions import ValidationError
from django.core.mail import send_mail
from django.core.validators import validate_email
from django.db import IntegrityError, transaction
from django.db.models import Q
from django.urls import reverse
from django.utils.encoding import force_bytes
from django.utils.http import urlsafe_base64_encode

from timers.clock import wall_now
from timers.errors import KeepingTimeError, NotFound
from timers.models import Brand, Membership

from . import registry
from .models import PoolMember

STAFF_NAMES = ("the brand",)
MEMBER_ID = re.compile(r"^mem_([0-9]{1,18})$")
ROLES = tuple(Membership.Role.values)


def brand_people(brand_id: str) -> set[str]:
    """The names that stand for the brand: "the brand", and each member's and owner's name and username.
    A clock answered for by one of these is the brand's; any other name is the customer's."""
    names = set(STAFF_NAMES)
    for name, username in Membership.objects.filter(brand_id=brand_id).values_list("name", "user__username"):
        names.update(n for n in (name, username) if n)
    return names


def member_names(user) -> set[str]:
    """What clocks call this member: their username and their membership names."""
    names = {user.get_username()}
    names.update(n for n in Membership.objects.filter(user=user).values_list("name", flat=True) if n)
    return names


# -- who a member is -----------------------------------------------------------------------------------------
def member_id(membership: Membership) -> str:
    """A member's id in the API and the CLI: ``mem_`` and the membership's number."""
    return f"mem_{membership.pk}"


def member_username(membership: Membership) -> str:
    """What they sign in as; for an invite not accepted yet, the address it went to (whoever the address
    names, and whether it names anyone yet, is the invitee's to say, not the brand's to see)."""
    return membership.user.get_username() if membership.user is not None else membership.invited_email


def member_email(membership: Membership) -> str:
    return (membership.user.email if membership.user is not None else membership.invited_email) or ""


def member_says(membership: Membership) -> str:
    """How a message names a member: their name, else their username (never an id)."""
    if membership.user is None:
        return membership.name or membership.invited_email
    return membership.name or membership.user.get_full_name() or membership.user.get_username()


def answers_as(membership: Membership) -> str:
    """The name a clock answers for them by (as the delivery portal's withdraw writes it)."""
    return membership.name or member_username(membership)


def member_status(membership: Membership) -> str:
    """``invited`` until the invite is accepted (an account made by an invite before invites were accepted:
    until it has a password), then ``active``."""
    user = membership.user
    return "active" if user is not None and user.has_usable_password() else "invited"


def members_of(*, brand: Brand):
    """The brand's memberships, invites not accepted yet among them, with their users, in the order they
    were made."""
    return Membership.everyone.filter(brand=brand).select_related("user").order_by("id")


def member_get(*, brand: Brand, ref: str, param: str | None = None) -> Membership:
    """One of the brand's members by id (``mem_12``) or username (an invite: the address it went to);
    another brand's is not found, the same as one that never was."""
    ref = ref if isinstance(ref, str) else ""
    qs = members_of(brand=brand)
    m = MEMBER_ID.match(ref)
    found = qs.filter(pk=int(m[1])).first() if m else (
        qs.filter(Q(user__username=ref) | Q(user__isnull=True, invited_email=ref.strip().lower())).first()
        if 0 < len(ref) <= 150 else None)
    if found is None:
        err = NotFound(f"no member {ref!r} of {brand.name}")
        err.param = param
        raise err
    return found


def brand_member(username: str, brand_id: str):
    """The brand's member of that username. Anyone else, of another brand or of none, is the same answer,
    so a key can't tell another brand's usernames from names nobody has."""
    user = get_user_model().objects.filter(username=username, is_active=True, memberships__brand_id=brand_id).first()
    if user is None:
        raise KeepingTimeError(f"no member {username!r} in this brand", code="unknown_member", status=404)
    return user


def _bad(message: str, *, code: str, param: str, status: int = 400) -> KeepingTimeError:
    err = KeepingTimeError(message, code=code, status=status)
    err.param = param
    return err


def _role(role: str) -> str:
    if role not in ROLES:
        raise _bad(f"role is owner or member, not {role!r}", code="invalid_role", param="role")
    return role


def _name(name: str) -> str:
    name = (name or "").strip()
    if len(name) > 200:
        raise _bad("name: at most 200 characters", code="invalid_name", param="name")
    return name


def sync_staff(user) -> None:
    """An owner of a brand is staff (the owner console lets in staff who own a brand); one who owns none no
    longer is. A superuser is left as they are."""
    if user is None or user.is_superuser:
        return
    owns = Membership.objects.filter(user=user, role=Membership.Role.OWNER).exists()
    if user.is_staff != owns:
        user.is_staff = owns
        user.save(update_fields=["is_staff"])


def keep_an_owner(brand: Brand, membership: Membership, doing: str) -> None:
    """A brand that has an owner keeps one: the last may not leave or become a member."""
    if membership.role != Membership.Role.OWNER:
        return
    if membership.user is None:
        return  # an invite: it owns nothing yet
    # Locked, so two owners removing each other at once cannot both pass the count.
    owners = list(Membership.objects.select_for_update().filter(brand=brand, role=Membership.Role.OWNER)
                  .values_list("pk", flat=True))
    if owners == [membership.pk]:
        raise KeepingTimeError(f"{member_says(membership)} is {brand.name}'s only owner and cannot {doing}: "
                               "make another member an owner first", code="last_owner", status=409)


# -- invite ---------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Invite:
    membership: Membership
    link: str  # the one-time link to accept (and, for someone with no account yet, to choose a password)


def invite_link(user, *, link_base: str) -> str:
    """A one-time link to set a password (Django's token: it dies when the password changes, and after
    PASSWORD_RESET_TIMEOUT), on the delivery portal: what an account made by an invite before invites were
    accepted is sent again (``member_reinvite``)."""
    path = reverse("delivery:welcome", kwargs={"uidb64": urlsafe_base64_encode(force_bytes(user.pk)),
                                               "token": default_token_generator.make_token(user)})
    return f"{link_base.rstrip('/')}{path}"


def default_link_base() -> str:
    """Where links point when no request names the host (the CLI): KT_FEED_HOST, as the CLI's portal links."""
    host = (getattr(settings, "KEEPING_TIME", {}) or {}).get("FEED_HOST") or "localhost:8000"
    return host.rstrip("/") if "://" in host else f"http://{host.rstrip('/')}"


def _digest(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def _new_link(membership: Membership, *, link_base: str, now: datetime) -> str:
    """A new one-time link for an invite (the last one dies): only its digest is kept."""
    token = secrets.token_urlsafe(32)
    membership.invite_digest, membership.invited_at = _digest(token), now
    path = reverse("delivery:invite", kwargs={"token": token})
    return f"{link_base.rstrip('/')}{path}"


def _email_of(email: str) -> str:
    email = (email or "").strip().lower() if isinstance(email, str) else ""
    try:
        validate_email(email)
    except ValidationError:
        raise _bad(f"email: {email!r} is not an email address", code="invalid_email", param="email") from None
    if len(email) > 150:  # it is the username of an account the invite makes
        raise _bad("email: at most 150 characters", code="invalid_email", param="email")
    return email


def accounts_of(email: str):
    """The accounts an address names: its username, or its email."""
    return get_user_model().objects.filter(Q(username__iexact=email) | Q(email__iexact=email))


def member_invite(*, brand: Brand, email: str, name: str = "", role: str = Membership.Role.MEMBER,
                  link_base: str, by: str = "", now: datetime | None = None) -> Invite:
    """Invite a person to the brand by email: an invite (a membership with no one in it yet) and one email to
    the address with a one-time link to accept it. Whoever the address names accepts it by the link, signing
    in to their account or, with none, choosing a password (``member_accept``); until then they are no member
    and see nothing of the brand. The invite, and what the caller is answered, is the same whether the address
    has an account or not, here or on another brand: nothing here says which. One already in the brand (or
    invited to it) is refused ``member_exists``. The email is sent before the transaction commits: if it
    cannot be sent (``email_not_sent``), no one was invited."""
    email = _email_of(email)
    name, role = _name(name), _role(role)
    now = now or wall_now()
    exists = _bad(f"{email} is a member of {brand.name} already (or invited)", code="member_exists",
                  param="email", status=409)
    with transaction.atomic():
        if Membership.objects.filter(brand=brand, user__in=accounts_of(email)).exists():
            raise exists
        membership = Membership(brand=brand, role=role, name=name, invited_email=email)
        link = _new_link(membership, link_base=link_base, now=now)
        try:
            with transaction.atomic():
                membership.save()
        except IntegrityError:  # invited already, or the same invite sent at the same time
            raise exists from None
        _send_invite(membership, link=link, link_base=link_base, by=by)
    return Invite(membership, link)


def member_reinvite(*, brand: Brand, membership: Membership, link_base: str, by: str = "",
                    now: datetime | None = None) -> Invite:
    """Send an invite not accepted yet a new link (the last one dies; it may have expired). An account an
    invite made before invites were accepted, with no password yet, is sent a new link to choose one."""
    if membership.brand_id != brand.id:
        raise NotFound(f"no member {member_id(membership)}")
    if membership.user is None:
        with transaction.atomic():
            link = _new_link(membership, link_base=link_base, now=now or wall_now())
            membership.save(update_fields=["invite_digest", "invited_at"])
            _send_invite(membership, link=link, link_base=link_base, by=by)
        return Invite(membership, link)
    if membership.user.has_usable_password():
        raise KeepingTimeError(f"{member_says(membership)} has accepted already: they sign in with their password",
                               code="member_active", status=409)
    link = invite_link(membership.user, link_base=link_base)
    _send_invite(membership, link=link, link_base=link_base, by=by)
    return Invite(membership, link)


def _send_invite(membership: Membership, *, link: str, link_base: str, by: str) -> None:
    brand = membership.brand
    base = link_base.rstrip("/")
    to = member_email(membership) or member_username(membership)
    hello = f"Hello {membership.name}," if membership.name else "Hello,"
    who = f"{by} invited you" if by and by not in STAFF_NAMES else "You are invited"
    owner = membership.role == Membership.Role.OWNER
    timeout_days = max(1, round(settings.PASSWORD_RESET_TIMEOUT / 86400))
    works = f"it works once, for {timeout_days} day{'s' if timeout_days != 1 else ''}"
    lines = [hello, "", f"{who} to join {brand.name} on Keeping Time as {'an owner' if owner else 'a member'}."]
    if membership.user is None:
        lines += ["", f"To accept, open this link ({works}). If you have a Keeping Time account, you sign in "
                      f"with it there; if not, you choose a password for {to}:", "", link]
    else:
        lines += ["", f"Choose your password here ({works}):", "", link, "",
                  f"Then sign in as {member_username(membership)}: {base}{reverse('delivery:login')}"]
    lines += ["", f"Once you are in, the delivery portal shows your Tasks and the dates you answer for: "
                  f"{base}{reverse('delivery:home')}"]
    if owner:
        lines += ["", f"As an owner you also run {brand.name} from the owner console: {base}/admin/"]
    lines += ["", "If you did not expect this, ignore this email: nothing happens until the link is used."]
    try:
        send_mail(f"You're invited to {brand.name}", "\n".join(lines), settings.DEFAULT_FROM_EMAIL, [to])
    except (OSError, smtplib.SMTPException) as exc:
        raise KeepingTimeError(f"the invite to {to} could not be sent ({exc}); no one was invited",
                               code="email_not_sent", status=502) from None


# -- accept -----------------------------------------------------------------------------------------------------
class InviteUnusable(KeepingTimeError):
    def __init__(self) -> None:
        super().__init__("this invite has been used, was sent again, or has expired: ask for a new one",
                         code="invite_unusable", status=404)


def invite_open(token: str, *, now: datetime | None = None) -> Membership:
    """The invite a link's token opens: not accepted yet, its link the latest, within PASSWORD_RESET_TIMEOUT."""
    if not isinstance(token, str) or not 20 <= len(token) <= 100:
        raise InviteUnusable()
    found = (Membership.everyone.select_related("brand")
             .filter(user__isnull=True, invite_digest=_digest(token)).first())
    now = now or wall_now()
    if found is None or found.invited_at is None or \
            now - found.invited_at > timedelta(seconds=settings.PASSWORD_RESET_TIMEOUT):
        raise InviteUnusable()
    return found


def invited_is(user, membership: Membership) -> bool:
    """Whether ``user`` is whom the invite's address names (their username or their email)."""
    email = membership.invited_email.lower()
    return bool(user.is_active and email and (user.get_username().lower() == email or
                                              (user.email or "").lower() == email))


def member_accept(*, token: str, user, now: datetime | None = None) -> Membership:
    """The person the invite's address names, signed in, takes their place in the brand: the membership is
    theirs from now, the link dies, and an owner is made staff. Another account is refused
    ``invite_not_yours``; one in the brand already keeps their place (the invite goes)."""
    with transaction.atomic():
        membership = invite_open(token, now=now)
        membership = Membership.everyone.select_for_update().get(pk=membership.pk)
        if membership.user_id is not None or not membership.invite_digest:
            raise InviteUnusable()
        if not invited_is(user, membership):
            raise KeepingTimeError(f"this invite is for {membership.invited_email}: sign in as that account",
                                   code="invite_not_yours", status=403)
        if Membership.objects.filter(user=user, brand=membership.brand_id).exists():
            membership.delete()
            raise KeepingTimeError(f"you are in {membership.brand.name} already", code="member_exists", status=409)
        membership.user, membership.invite_digest = user, ""
        membership.save(update_fields=["user", "invite_digest"])
        sync_staff(user)
    return membership


def member_accept_new(*, token: str, password: str, now: datetime | None = None):
    """Someone with no account accepts: an account whose username is the address, with the password they
    chose (Django's validators), then ``member_accept``. An address that has an account by now signs in
    instead (``account_exists``)."""
    with transaction.atomic():
        membership = invite_open(token, now=now)
        email = membership.invited_email
        if accounts_of(email).exists():
            raise KeepingTimeError(f"{email} has an account: sign in with it to accept", code="account_exists",
                                   status=409)
        user = get_user_model()(username=email, email=email, first_name=membership.name[:150],
                                date_joined=now or wall_now())
        try:
            validate_password(password, user)
        except ValidationError as exc:
            raise _bad(" ".join(exc.messages), code="invalid_password", param="password") from None
        user.set_password(password)
        try:
            with transaction.atomic():
                user.save()
        except IntegrityError:
            raise KeepingTimeError(f"{email} has an account: sign in with it to accept", code="account_exists",
                                   status=409) from None
        member_accept(token=token, user=user, now=now)
    return user


# -- change ---------------------------------------------------------------------------------------------------
def member_change(*, brand: Brand, membership: Membership, name: str | None = None,
                  role: str | None = None) -> Membership:
    """A member's name (what clocks and messages call them) or role. The last owner stays an owner."""
    with transaction.atomic():
        membership = membership_locked(brand, membership)
        fields = []
        if name is not None:
            membership.name = _name(name)
            fields.append("name")
        if role is not None and _role(role) != membership.role:
            if role == Membership.Role.MEMBER:
                keep_an_owner(brand, membership, "become a member")
            membership.role = role
            fields.append("role")
        if fields:
            membership.save(update_fields=fields)
            sync_staff(membership.user)
    return membership


def membership_locked(brand: Brand, membership: Membership) -> Membership:
    """The brand's membership read FOR UPDATE, with its user and brand, for a change or a removal."""
    found = (Membership.everyone.select_for_update(of=("self",)).select_related("user", "brand")
             .filter(pk=membership.pk, brand=brand).first())
    if found is None:  # removed meanwhile
        raise NotFound(f"no member {member_id(membership)} of {brand.name}")
    return found




# -- pools ----------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Declared:
    """A pool as the registered Services declare it: each Service that has it, with its hold there."""

    name: str
    holds: tuple[tuple[str, str], ...]  # (service, hold)

    @property
    def hold(self) -> str:
        """The hold, or each Service's when they differ ("deal 2d · audit 1d")."""
        spans = {h for _, h in self.holds}
        return spans.pop() if len(spans) == 1 else " · ".join(f"{s} {h}" for s, h in self.holds)


def pools_declared() -> dict[str, Declared]:
    """Every pool a registered Service declares, by name (a pool of one name is one pool for the brand,
    whichever Services declare it)."""
    holds: dict[str, list[tuple[str, str]]] = {}
    for service, svc in sorted(registry.all_services().items()):
        for pool, decl in (getattr(svc, "pools", None) or {}).items():
            holds.setdefault(pool, []).append((service, decl.hold))
    return {name: Declared(name, tuple(h)) for name, h in sorted(holds.items())}


def pool_declared(pool: str, *, param: str | None = None) -> Declared:
    found = pools_declared().get(pool) if isinstance(pool, str) else None
    if found is None:
        err = KeepingTimeError(f"no Service declares a pool {pool!r}; pools: "
                               f"{', '.join(pools_declared()) or 'none'}", code="unknown_pool", status=404)
        err.param = param
        raise err
    return found


def pool_rosters(*, brand_ids: Iterable[str]) -> dict[tuple[str, str], list[Membership]]:
    """Who is in each pool of these brands, (brand id, pool) → memberships by name, in one query."""
    rosters: dict[tuple[str, str], list[Membership]] = {}
    for row in (PoolMember.objects.filter(brand_id__in=list(brand_ids)).select_related("membership__user")
                .order_by("pool", "membership__name", "membership__user__username")):
        rosters.setdefault((row.brand_id, row.pool), []).append(row.membership)
    return rosters


def pool_members(*, brand: Brand, pool: str) -> list[Membership]:
    return pool_rosters(brand_ids=[brand.id]).get((brand.id, pool), [])


def pool_named(*, brand_id: str, pool: str) -> tuple[tuple[str, str], ...]:
    """The pool's members (whom a Task of the pool may be assigned to) as (username, member_says), by username."""
    rows = (PoolMember.objects.filter(brand_id=brand_id, pool=pool, membership__user__is_active=True)
            .select_related("membership__user").order_by("membership__user__username"))
    return tuple((row.membership.user.get_username(), member_says(row.membership)) for row in rows)


def pool_usernames_of(*, brand_ids: Iterable[str] | None) -> dict[str, list[str]]:
    """Pool → the usernames in it across these brands (None: every brand), in one query: the Tasks page's
    table of pools."""
    rows = PoolMember.objects.filter(membership__user__is_active=True)
    if brand_ids is not None:
        rows = rows.filter(brand_id__in=list(brand_ids))
    out: dict[str, list[str]] = {}
    for pool, username in rows.order_by("pool", "membership__user__username").values_list(
            "pool", "membership__user__username").distinct():
        out.setdefault(pool, []).append(username)
    return out


def in_pool(*, brand_id: str, pool: str, username: str) -> bool:
    """Whether the brand's member ``username`` is in ``pool`` now: what task_take asks."""
    return PoolMember.objects.filter(brand_id=brand_id, pool=pool, membership__brand_id=brand_id,
                                     membership__user__username=username,
                                     membership__user__is_active=True).exists()


def pools_of(membership: Membership) -> list[str]:
    return sorted(PoolMember.objects.filter(membership=membership).values_list("pool", flat=True))


def pool_add(*, brand: Brand, pool: str, membership: Membership, now: datetime | None = None) -> PoolMember:
    """Put a member of the brand in a pool a Service declares: from now they take its open Tasks."""
    pool_declared(pool)
    if membership.brand_id != brand.id:
        raise _bad(f"{member_says(membership)} is not a member of {brand.name}", code="resource_missing",
                   param="member", status=404)
    try:
        with transaction.atomic():
            return PoolMember.objects.create(brand=brand, pool=pool, membership=membership, added_at=now or wall_now())
    except IntegrityError:
        raise _bad(f"{member_says(membership)} is in {pool} already", code="member_in_pool", param="member",
                   status=409) from None


def pool_remove(*, brand: Brand, pool: str, membership: Membership) -> None:
    """Take a member out of a pool: they take none of its Tasks from now (one they hold stays theirs until
    it is done, given back, or its hold ends)."""
    gone, _ = PoolMember.objects.filter(brand=brand, pool=pool, membership=membership).delete()
    if not gone:
        raise _bad(f"{member_says(membership)} is not in {pool}", code="resource_missing", param="member",
                   status=404)
