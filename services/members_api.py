"""A brand's members and pools over HTTP: ``/members`` (invite, read, change, remove with a successor) and
``/pools`` (each pool the registered Services declare, who is in it; add and remove a member).

Members are the brand's people, not a mode's objects: a live key and a test key both read them (a test
clock's Tasks are taken by the same people as the live clock's). Changing them takes a live key
(``403 live_mode_only`` for a test key), as they are real people: an invite sends a real email and an owner
enters the console, and a removal hands over their dates on every clock, the live one too. The owner console
and ``manage.py members|pools`` change them as well, with the same service functions (services/members.py).

A member is named by its id (``mem_12``) or its username, anywhere a member is asked for.
"""

from __future__ import annotations

from drf_spectacular.utils import extend_schema, inline_serializer
from rest_framework import serializers
from rest_framework.response import Response

from timers.api.auth import livemode
from timers.api.inputs import ListQuerySerializer, NameField, StrictCharField, query_field
from timers.api.openapi import ERRORS, NOT_FOUND, Choice, const, error_response, list_serializer
from timers.api.views import BrandAPIView, SafeJSONParser
from timers.errors import KeepingTimeError, NotFound
from timers.models import Brand, Membership
from timers.selectors import page

from .handovers import Handover, member_remove
from .members import (
    MEMBER_ID,
    ROLES,
    Declared,
    member_change,
    member_email,
    member_get,
    member_invite,
    member_status,
    member_username,
    members_of,
    pool_add,
    pool_declared,
    pool_remove,
    pool_rosters,
    pools_declared,
)
from .members import member_id as id_of
from .models import PoolMember

STATUSES = ("invited", "active")
MEMBER_ORDER = ("id",)


# -- JSON -------------------------------------------------------------------------------------------------------
def members_json(rows: list[Membership]) -> list[dict]:
    """Members with their pools, in one query for all of them."""
    pools: dict[int, list[str]] = {}
    for membership_id, pool in (PoolMember.objects.filter(membership__in=[m.pk for m in rows])
                                .order_by("pool").values_list("membership_id", "pool")):
        pools.setdefault(membership_id, []).append(pool)
    return [member_json(m, pools=pools.get(m.pk, [])) for m in rows]


def member_json(m: Membership, *, pools: list[str] | None = None) -> dict:
    if pools is None:
        return members_json([m])[0]
    # An invite not accepted yet says the address it went to, and nothing of any account that address names.
    return {"id": id_of(m), "object": "member", "name": m.name, "username": member_username(m),
            "email": member_email(m) or None, "role": m.role, "status": member_status(m), "pools": pools}


def _member_ref(m: Membership) -> dict:
    return {"id": id_of(m), "name": m.name, "username": member_username(m)}


def pool_json(pool: Declared, members: list[Membership]) -> dict:
    return {"object": "pool", "name": pool.name, "hold": pool.hold,
            "services": [{"service": s, "hold": h} for s, h in pool.holds],
            "members": [_member_ref(m) for m in members]}


def handover_json(done: Handover, *, successor: Membership | None) -> dict:
    return {"successor": id_of(successor) if successor is not None else None, "clocks": done.clocks,
            "tasks": done.tasks, "reopened": done.reopened, "windows": done.windows}


# -- what the API takes and answers (the answers only describe the JSON above, for the schema) -------------------
class InviteSerializer(serializers.Serializer):
    email = StrictCharField(max_length=254, help_text="Where the invite goes; the member signs in with it")
    name = NameField(required=False, allow_blank=True, max_length=200, default="",
                     help_text="What clocks, Tasks and messages call them: Grace Hopper")
    role = Choice(choices=list(ROLES), component="MemberRole", required=False, default=Membership.Role.MEMBER,
                  help_text="owner (the owner console too) or member (the delivery portal)")


class MemberUpdateSerializer(serializers.Serializer):
    name = NameField(required=False, allow_blank=True, max_length=200)
    role = Choice(choices=list(ROLES), component="MemberRole", required=False)


class RemoveSerializer(serializers.Serializer):
    successor = StrictCharField(required=False, allow_blank=True, max_length=150, default="",
                                help_text="The member (id or username) who takes over their dates and Tasks")


class RemoveQuerySerializer(serializers.Serializer):
    successor = query_field("The member (id or username) who takes over their dates and Tasks", max_length=150)


class PoolMemberSerializer(serializers.Serializer):
    member = StrictCharField(max_length=150, help_text="A member of the brand: its id (mem_…) or username")


class MemberSerializer(serializers.Serializer):
    id = serializers.CharField(help_text="mem_…")
    object = const("member", "MemberObject")
    name = serializers.CharField()
    username = serializers.CharField()
    email = serializers.CharField(allow_null=True)
    role = Choice(choices=list(ROLES), component="MemberRole")
    status = Choice(choices=list(STATUSES), component="MemberStatus",
                    help_text="invited until they have accepted their invite")
    pools = serializers.ListField(child=serializers.CharField())


HANDOVER = {
    "successor": serializers.CharField(allow_null=True),
    "clocks": serializers.ListField(child=serializers.CharField(), help_text="now answered for by the successor"),
    "tasks": serializers.ListField(child=serializers.CharField(), help_text="held by the successor, hold as it was"),
    "reopened": serializers.ListField(child=serializers.CharField(),
                                      help_text="back to their pool: the successor is not in it"),
    "windows": serializers.ListField(child=serializers.CharField(), help_text="standby windows closed"),
}


class DeletedMemberSerializer(serializers.Serializer):
    id = serializers.CharField()
    object = const("member", "MemberObject")
    deleted = serializers.BooleanField()
    handed_over = inline_serializer("Handover", fields=HANDOVER)


class PoolSerializer(serializers.Serializer):
    object = const("pool", "PoolObject")
    name = serializers.CharField()
    hold = serializers.CharField(help_text="How long a take holds a Task: 2d (each Service's, when they differ)")
    services = serializers.ListField(child=inline_serializer("PoolService", fields={
        "service": serializers.CharField(), "hold": serializers.CharField()}))
    members = serializers.ListField(child=inline_serializer("MemberRef", fields={
        "id": serializers.CharField(), "name": serializers.CharField(), "username": serializers.CharField()}))


MEMBER_CONFLICT = {409: error_response("member_exists (invite), member_in_pool, last_owner (the brand's only owner)")}
MEMBER_BAD = {400: error_response("invalid_request (the field is the param), invalid_email, invalid_json")}
REMOVE_BAD = {400: error_response("successor_required (they answer for dates or hold Tasks), successor_not_member, "
                          "successor_is_leaver (param successor), invalid_request")}
LIVE_ONLY = {403: error_response("live_mode_only: members and pools change with a live key")}
EMAIL_FAILED = {502: error_response("email_not_sent: the invite could not be sent, and no one was added")}


# -- views ---------------------------------------------------------------------------------------------------------
def _writes(brand: Brand) -> None:
    if not livemode(brand):
        raise KeepingTimeError("members and pools are the brand's people, the same in both modes: change them with a "
                               "live key (sk_live_…), the owner console, or manage.py members|pools",
                               code="live_mode_only", status=403)


def _successor(brand: Brand, ref: str) -> Membership | None:
    if not ref:
        return None
    try:
        return member_get(brand=brand, ref=ref)
    except NotFound:
        err = KeepingTimeError(f"successor: no member {ref!r} of {brand.name}; name one of its members",
                               code="successor_not_member")
        err.param = "successor"
        raise err from None


def _remove(view: BrandAPIView, member: str, successor: str) -> Response:
    membership = member_get(brand=view.brand, ref=member)
    heir = _successor(view.brand, successor)
    done = member_remove(brand=view.brand, membership=membership, successor=heir, by="the brand")
    return Response({"id": id_of(membership), "object": "member", "deleted": True,
                     "handed_over": handover_json(done, successor=heir)})


class MemberListView(BrandAPIView):
    @extend_schema(operation_id="members_list", tags=["members"], parameters=[ListQuerySerializer],
                   summary="List the brand's members",
                   description="Every member and owner of the brand, in the order they joined; either key's mode.",
                   responses={200: list_serializer("MemberList", MemberSerializer), **ERRORS, **NOT_FOUND})
    def get(self, request):
        params = self.query(ListQuerySerializer)
        scope = members_of(brand=self.brand)
        after = params.get("starting_after")
        if after:
            m = MEMBER_ID.match(after)
            if m is None or not scope.filter(pk=int(m[1])).exists():
                err = NotFound(f"starting_after: no member {after!r}")
                err.param = "starting_after"
                raise err
            params = {**params, "starting_after": m[1]}
        return Response(page(scope, scope=scope, order=MEMBER_ORDER, lookup="pk", params=params, url="/members",
                             render=members_json, what="member"))

    @extend_schema(operation_id="members_invite", tags=["members"], request=InviteSerializer,
                   summary="Invite a member",
                   description="Makes an invite and emails the address a one-time link to accept it: whoever "
                               "the address names signs in with their account or chooses a password, and only "
                               "then is a member (an owner: the owner console too). Until then they see nothing "
                               "of the brand, and the answer is the same whether the address has an account or "
                               "not (username: the address). A live key only.",
                   responses={201: MemberSerializer, **ERRORS, **MEMBER_BAD, **LIVE_ONLY, **MEMBER_CONFLICT,
                              **EMAIL_FAILED})
    def post(self, request):
        _writes(self.brand)
        body = self.body(InviteSerializer)
        invite = member_invite(brand=self.brand, email=body["email"], name=body["name"], role=body["role"],
                               link_base=request.build_absolute_uri("/"), by="the brand")
        return Response(member_json(invite.membership), status=201)


class MemberDetailView(BrandAPIView):
    @extend_schema(operation_id="members_retrieve", tags=["members"], summary="Retrieve a member",
                   responses={200: MemberSerializer, 401: ERRORS[401], **NOT_FOUND})
    def get(self, request, member_id: str):
        return Response(member_json(member_get(brand=self.brand, ref=member_id)))

    @extend_schema(operation_id="members_update", tags=["members"], request=MemberUpdateSerializer,
                   summary="Change a member's name or role",
                   description="The brand's only owner stays an owner (last_owner). A live key only.",
                   responses={200: MemberSerializer, **ERRORS, **MEMBER_BAD, **NOT_FOUND, **LIVE_ONLY,
                              **MEMBER_CONFLICT})
    def post(self, request, member_id: str):
        _writes(self.brand)
        membership = member_get(brand=self.brand, ref=member_id)
        body = self.body(MemberUpdateSerializer)
        membership = member_change(brand=self.brand, membership=membership, name=body.get("name"),
                                   role=body.get("role"))
        return Response(member_json(membership))

    @extend_schema(operation_id="members_delete", tags=["members"], parameters=[RemoveQuerySerializer],
                   summary="Remove a member, handing over to a successor",
                   description="The same as POST /members/{member_id}/remove, the successor in the query string.",
                   responses={200: DeletedMemberSerializer, **ERRORS, **REMOVE_BAD, **NOT_FOUND, **LIVE_ONLY,
                              **MEMBER_CONFLICT})
    def delete(self, request, member_id: str):
        _writes(self.brand)
        params = self.query(RemoveQuerySerializer)
        return _remove(self, member_id, params.get("successor") or "")


class MemberRemoveView(BrandAPIView):
    parser_classes = [SafeJSONParser]

    @extend_schema(operation_id="members_remove", tags=["members"], request=RemoveSerializer,
                   summary="Remove a member, handing over to a successor",
                   description="Each clock they answer for that still has a date to keep goes to the successor "
                               "(clock.reassigned), each Task they hold to the successor if the successor is in its "
                               "pool (task.handed_over, the hold as it stood) or else back to its pool "
                               "(task.reopened), each on its own clock domain's record; then their pool places and "
                               "membership go. A successor is required while they answer for something. A live key "
                               "only.",
                   responses={200: DeletedMemberSerializer, **ERRORS, **REMOVE_BAD, **NOT_FOUND, **LIVE_ONLY,
                              **MEMBER_CONFLICT})
    def post(self, request, member_id: str):
        _writes(self.brand)
        body = self.body(RemoveSerializer)
        return _remove(self, member_id, body["successor"])


class PoolListView(BrandAPIView):
    @extend_schema(operation_id="pools_list", tags=["members"], summary="List the pools",
                   description="Each pool a registered Service declares (by name: a name several Services declare "
                               "is one pool), its hold, and the brand's members in it. Every pool in one page.",
                   responses={200: list_serializer("PoolList", PoolSerializer), 401: ERRORS[401]})
    def get(self, request):
        rosters = pool_rosters(brand_ids=[self.brand.id])
        data = [pool_json(p, rosters.get((self.brand.id, p.name), [])) for p in pools_declared().values()]
        return Response({"object": "list", "data": data, "has_more": False, "url": "/pools"})


def _pool_answer(brand: Brand, pool: Declared) -> Response:
    return Response(pool_json(pool, pool_rosters(brand_ids=[brand.id]).get((brand.id, pool.name), [])))


class PoolMemberAddView(BrandAPIView):
    parser_classes = [SafeJSONParser]

    @extend_schema(operation_id="pools_members_add", tags=["members"], request=PoolMemberSerializer,
                   summary="Put a member in a pool",
                   description="From now on they take the pool's open Tasks. unknown_pool (404), member_in_pool "
                               "(409). A live key only.",
                   responses={200: PoolSerializer, **ERRORS, **NOT_FOUND, **LIVE_ONLY, **MEMBER_CONFLICT})
    def post(self, request, pool: str):
        _writes(self.brand)
        declared = pool_declared(pool)
        body = self.body(PoolMemberSerializer)
        pool_add(brand=self.brand, pool=declared.name,
                 membership=member_get(brand=self.brand, ref=body["member"], param="member"))
        return _pool_answer(self.brand, declared)


class PoolMemberDeleteView(BrandAPIView):
    @extend_schema(operation_id="pools_members_remove", tags=["members"], summary="Take a member out of a pool",
                   description="They take none of its Tasks from now; one they hold stays theirs until it is done, "
                               "given back or its hold ends. A live key only.",
                   responses={200: PoolSerializer, 401: ERRORS[401], **NOT_FOUND, **LIVE_ONLY})
    def delete(self, request, pool: str, member: str):
        _writes(self.brand)
        declared = pool_declared(pool)
        pool_remove(brand=self.brand, pool=declared.name,
                    membership=member_get(brand=self.brand, ref=member, param="member"))
        return _pool_answer(self.brand, declared)
