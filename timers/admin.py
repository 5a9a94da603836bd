"""The owner console's view of the runtime: timers, test clocks and the record, read-only."""

from __future__ import annotations

from datetime import timedelta

from django.conf import settings
from django.contrib import admin

from .models import ApiKey, Brand, Commit, Event, Outbox, TestClock, Timer
from .timeutil import duration_text


class ReadOnlyMixin:
    """The record and the runtime's state are written by the tick and the service functions, never by hand."""

    def has_add_permission(self, request, obj=None):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False


class ReadOnlyAdmin(ReadOnlyMixin, admin.ModelAdmin):
    pass


class LateFilter(admin.SimpleListFilter):
    """Timers that fired more than LATE_AFTER_SECONDS after they were owed (the partial index timer_late)."""

    title = "late"
    parameter_name = "late"

    def lookups(self, request, model_admin):
        return [("yes", "fired late (> 5 min)")]

    def queryset(self, request, queryset):
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
class BrandAdmin(admin.ModelAdmin):
    list_display = ("id", "name", "created_at")
    readonly_fields = ("created_at",)


@admin.register(ApiKey)
class ApiKeyAdmin(ReadOnlyAdmin):
    list_display = ("id", "prefix", "brand", "name", "created_at", "revoked_at")
    exclude = ("digest",)
