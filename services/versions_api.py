"""Versions over HTTP: the bundles Services run on, newest first, with what of the caller's each still runs."""

from __future__ import annotations

from django.db.models import Q
from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.response import Response

from timers.api.inputs import QueryBooleanField, query_field
from timers.api.openapi import ERRORS, NOT_FOUND, const, list_serializer
from timers.api.views import BrandAPIView
from timers.domains import domain_now
from timers.selectors import domain_of
from timers.timeutil import iso_z

from .versions import versions_summary


class VersionListQuerySerializer(serializers.Serializer):
    pinned = QueryBooleanField(required=False, default=False,
                               help_text="Only versions still running a timer of the caller's")
    test_clock = query_field("Count what is on this test clock; the live clock's when absent")


class VersionSerializer(serializers.Serializer):
    id = serializers.CharField(help_text="sha256:… over the bundle's files")
    object = const("version", "VersionObject")
    name = serializers.CharField(allow_null=True, help_text="A deploy's name, e.g. 2027-06")
    label = serializers.CharField(help_text="How headers print it: the name, else the short hash")
    services = serializers.ListField(child=serializers.CharField())
    files = serializers.ListField(child=serializers.CharField(), help_text="The bundle's files")
    live = serializers.BooleanField(help_text="What new work of one of its Services pins now")
    armed_timers = serializers.IntegerField(help_text="Armed and held timers of the caller's it still runs")
    subjects = serializers.IntegerField(help_text="Subjects with open work on it")
    keeps_until = serializers.DateTimeField(allow_null=True, help_text="The last owed time of those timers")
    summary = serializers.CharField(help_text="What keeps it, in a line: 1,412 armed timers on 61 subjects, or, "
                                              "held only by clocks on their subjects, 1 clock · expiring on "
                                              "sbj_…, to 2045-12-31")
    created_at = serializers.DateTimeField()


class VersionListView(BrandAPIView):
    @extend_schema(
        operation_id="versions_list", tags=["versions"], parameters=[VersionListQuerySerializer],
        summary="List versions",
        description="The bundles Services run on, newest first; with pinned=true only those still running a "
                    "timer of the caller's (a version with armed timers stays runnable until its last one closes).",
        responses={200: list_serializer("VersionList", VersionSerializer), **ERRORS, **NOT_FOUND},
    )
    def get(self, request):
        params = self.query(VersionListQuerySerializer)
        domain = domain_of(self.brand, params.get("test_clock"))
        now = domain_now(domain=domain)
        rows = versions_summary(brand=self.brand, domains=Q(domain=domain), now=now,
                                pinned_only=params["pinned"], live_domain=domain)
        return Response({"object": "list", "url": "/versions", "has_more": False, "data": [
            {"id": p.version.digest, "object": "version", "name": p.version.name or None, "label": p.version.label,
             "services": list(p.version.services), "files": sorted(s["path"] for s in p.version.sources.values()),
             "live": p.live, "armed_timers": p.armed, "subjects": p.subjects,
             "keeps_until": iso_z(p.last) if p.last else None, "summary": p.summary,
             "created_at": iso_z(p.version.created_at)}
            for p in rows]})
