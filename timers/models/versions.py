"""Service code's tables: the content-addressed bundles (versions) and their deploys in a clock domain."""

from __future__ import annotations

from django.db import models
from django.db.models import Q


class Version(models.Model):
    """A bundle of Service code, content-addressed: the Service module and every module it imports from
    its own package, their source stored. Never edited; never deleted while anything pins it."""

    digest = models.CharField(primary_key=True, max_length=80, help_text="sha256:… over the files")
    name = models.CharField(max_length=64, blank=True, help_text="A deploy's name, e.g. 2027-06")
    module = models.CharField(max_length=200, help_text="The entry module's dotted path")
    services = models.JSONField(default=list, help_text="The Services the bundle declares")
    sources = models.JSONField(default=dict, help_text="{module name: {path, source}} for each file")
    created_at = models.DateTimeField()

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["name"], condition=~Q(name=""), name="version_name_once"),
        ]

    def __str__(self) -> str:
        return self.name or self.digest[:15]

    @property
    def label(self) -> str:
        """How headers print it: the name where it has one, else the short hash."""
        return self.name or self.digest[:15]


class Deploy(models.Model):
    """A version going live for a Service in a clock domain at an instant (a test clock replays deploys)."""

    domain = models.CharField(max_length=32, help_text='"live" or the test clock id')
    service = models.CharField(max_length=64)
    version = models.ForeignKey(Version, on_delete=models.PROTECT, related_name="deploys")
    at = models.DateTimeField(help_text="From this instant in the domain's time, new work pins the version")
    created_at = models.DateTimeField()

    class Meta:
        indexes = [
            # registry.live_version: the latest deploy of a Service in a domain at or before now.
            models.Index(fields=["domain", "service", "at"], name="deploy_live"),
        ]

    def __str__(self) -> str:
        return f"{self.service} {self.version} on {self.domain} at {self.at}"
