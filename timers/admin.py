"""The owner console's view of the runtime: timers, test clocks and the record, read-only."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from django.conf import settings
from django.contrib import admin
from django.db.models import Model, QuerySet
from django.http import HttpRequest
from django.utils import timezone
from django.utils.html import format_html, format_html_join

from .models import ApiKey, Brand, Commit, DeadLetter, Event, Outbox, Schedule, ScheduleTick, TestClock, Timer
from .schedules import fired_count, next_fire_at
from .timeutil import duration_text

if TYPE_CHECKING:
    # The stubs' ModelAdmin is generic in its model (Django's is not subscriptable).
    ModelAdmin = admin.ModelAdmin[Any]
else:
    ModelAdmin = admin.ModelAdmin


class ReadOnlyMixin:
    """The record and the runtime's state are written by the tick and the service functions, never by hand."""

    def has_add_permission(self, request: HttpRequest, obj: Model | None = None) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Model | None = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Model | None = None) -> bool:
        return False


class ReadOnlyAdmin(ReadOnlyMixin, ModelAdmin):
    pass


class LateFilter(admin.SimpleListFilter):
    """Timers that fired more than LATE_AFTER_SECONDS after they were owed (the partial index timer_late)."""

    title = "late"
    parameter_name = "late"

    def lookups(self, request: HttpRequest, model_admin: ModelAdmin) -> list[tuple[str, str]]:
        return [("yes", "fired late (> 5 min)")]

    def queryset(self, request: HttpRequest, queryset: QuerySet[Any]) -> QuerySet[Any]:
        if self.value() == "yes":
            late = timedelta(seconds=settings.KEEPING_TIME["LATE_AFTER_SECONDS"])
            return queryset.filter(late_by__gt=late).order_by("-late_by")
        return queryset


@admin.register(Timer)
class TimerAdmin(ReadOnlyAdmin):
    list_display = ("id", "key", "status", "place", "kind", "owed_at", "fired_at", "late", "domain")
    list_filter = ("status", "kind", LateFilter, "place", "domain")
    search_fields = ("id", "key", "owner")
    ordering = ("owed_at", "place", "key")
    list_select_related = ()
    show_full_result_count = False

    @admin.display(description="late by", ordering="late_by")
    def late(self, obj: Timer) -> str:
        return duration_text(obj.late_by) or ""


@admin.register(TestClock)
class TestClockAdmin(ReadOnlyAdmin):
    list_display = ("id", "name", "seed", "brand", "frozen_time", "status", "advance_to")
    list_filter = ("status", "brand")
    search_fields = ("id", "name", "seed")


@admin.register(Event)
class EventAdmin(ReadOnlyAdmin):
    list_display = ("id", "type", "subject", "owed_at", "key", "domain")
    list_filter = ("type", "domain")
    search_fields = ("id", "key", "subject")
    ordering = ("-seq",)
    show_full_result_count = False


@admin.register(Commit)
class CommitAdmin(ReadOnlyAdmin):
    list_display = ("id", "key", "outcome", "code", "at", "domain")
    list_filter = ("outcome",)
    search_fields = ("key",)


@admin.register(Outbox)
class OutboxAdmin(ReadOnlyAdmin):
    list_display = ("id", "key", "transport", "status", "created_at", "sent_at")
    list_filter = ("status", "transport")


@admin.register(Brand)
class BrandAdmin(ModelAdmin):
    list_display = ("id", "name", "created_at")
    readonly_fields = ("created_at",)


@admin.register(ApiKey)
class ApiKeyAdmin(ReadOnlyAdmin):
    list_display = ("id", "prefix", "brand", "name", "created_at", "revoked_at")
    exclude = ("digest",)


def _local(dt: datetime | None) -> str:
    return f"{timezone.localtime(dt):%Y-%m-%d %H:%M:%S %Z}" if dt is not None else "—"


RECENT = 50  # ticks and dead letters a schedule's page shows: a year of a schedule is thousands


@admin.register(Schedule)
class ScheduleAdmin(ReadOnlyAdmin):
    """Schedules with their recent ticks (and each Run's outcome) and dead letters, read-only. The owner console
    serves its own (portals/owner/schedules.py), which acts on them as the API and the CLI do."""

    list_display = ("id", "name", "spec_text", "zone", "target_kind", "overlap", "paused", "next_fire", "fired",
                    "skipped", "dropped", "missed", "dead_letters_count", "domain")
    list_filter = ("paused", "target_kind", "overlap", "domain")
    search_fields = ("id", "name", "owner_ref")
    ordering = ("-created_at",)
    exclude = ("secret",)
    readonly_fields = ("ticks_table", "dead_letters_table")

    @admin.display(description="spec")
    def spec_text(self, obj: Schedule) -> str:
        return ", ".join(f"{k} {v}" for k, v in (obj.spec or {}).items())

    @admin.display(description="next fire")
    def next_fire(self, obj: Schedule) -> datetime | None:
        return next_fire_at(obj)

    @admin.display(description="fired")
    def fired(self, obj: Schedule) -> int:
        return fired_count(obj)

    @admin.display(description="dead letters")
    def dead_letters_count(self, obj: Schedule) -> int:
        return obj.dead_letters.count()

    @admin.display(description=f"recent ticks (the last {RECENT})")
    def ticks_table(self, obj: Schedule) -> str:
        ticks = ScheduleTick.objects.filter(schedule=obj).select_related("run").order_by("-fired_at", "-intended_at")
        rows = format_html_join("", "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>", (
            (_local(t.intended_at), _local(t.fired_at), t.state, t.run.state, t.run.outcome or "—", t.run.ref or "—")
            for t in ticks[:RECENT]))
        # The page's zone: the one the site's view runs in (the console sets the brand's), named in the caption.
        return format_html("<table><caption>times in {}</caption><tr><th>scheduled</th><th>fired</th><th>tick</th>"
                           "<th>run</th><th>outcome</th><th>ref</th></tr>{}</table>",
                           timezone.get_current_timezone_name(), rows) if rows else "none yet"

    @admin.display(description=f"dead letters (the last {RECENT})")
    def dead_letters_table(self, obj: Schedule) -> str:
        letters = DeadLetter.objects.filter(schedule=obj).select_related("tick").order_by("-at")
        rows = format_html_join("", "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>", (
            (_local(d.at), _local(d.tick.intended_at), d.status or "—", d.error[:300]) for d in letters[:RECENT]))
        return format_html("<table><tr><th>at</th><th>scheduled</th><th>status</th><th>refused</th></tr>{}</table>",
                           rows) if rows else "none"
