"""The owner console's view of calendars, subjects and clocks.

Dates are never written here: a closed day added, changed or deleted goes through calendar_close_day /
calendar_open_day, so every open date on the calendar re-rolls (calendars are never pinned); clocks and their
items are read-only (they move through the clock services, inside or beside the tick); a subject's feed token
is rotated by subject_feed_rotate and shown once, its digest never.
"""

from __future__ import annotations

from django import forms
from django.contrib import admin, messages
from django.db.models import Count
from django.utils.translation import ngettext

from timers.admin import ReadOnlyAdmin, ReadOnlyMixin
from timers.clock import wall_now
from timers.errors import KeepingTimeError

from . import feed
from .brand_calendars import (
    WEEKDAY_NAMES,
    calendar_close_day,
    calendar_create,
    calendar_open_day,
    calendar_update,
    check_holidays,
    check_weekends,
    check_zone,
)
from .feed_tokens import subject_feed_rotate
from .models import Calendar, Clock, ClockItem, ClosedDay, Subject

WEEKDAYS = [name.capitalize() for name in WEEKDAY_NAMES]

# What decides a roll besides the closed days: no service re-rolls an edit of these, so they are set when the
# calendar is made and shown read-only after.
ROLL_FIELDS = ("brand", "zone", "weekends", "closes", "holiday_country", "holiday_subdiv")


class ClosedDayInline(admin.TabularInline):
    model = ClosedDay
    fields = ("date", "why")
    ordering = ("date",)
    extra = 1


class CalendarForm(forms.ModelForm):
    """What the API checks (calendars/brand_calendars.py), said on the fields: a zone tzdata knows, weekdays, a
    country and subdivision the holidays package knows."""

    weekends = forms.TypedMultipleChoiceField(choices=list(enumerate(WEEKDAYS)), coerce=int, required=False,
                                              widget=forms.CheckboxSelectMultiple, initial=[5, 6],
                                              help_text="The days nothing is due on")
    # Not required: a form that leaves them out keeps the calendar's (a new one takes the seed's rules).
    dst_skipped = forms.ChoiceField(
        choices=[("next_minute", "It happens at the first minute after the gap"),
                 ("skip", "A schedule's fire there does not happen")], required=False,
        help_text="Only while no open date is on the calendar")
    dst_repeated = forms.ChoiceField(
        choices=[("first", "Its first occurrence"), ("second", "Its second occurrence")], required=False,
        help_text="Only while no open date is on the calendar")

    class Meta:
        model = Calendar
        fields = ("name", "brand", "zone", "weekends", "closes", "dst_skipped", "dst_repeated", "holiday_country",
                  "holiday_subdiv", "is_default")
        labels = {"dst_skipped": "A time the clocks skip (spring forward)",
                  "dst_repeated": "A time the clocks repeat (fall back)",
                  "holiday_country": "Holidays of (country)", "holiday_subdiv": "and (subdivision)",
                  "is_default": "The brand's default calendar"}

    def _checked(self, check, *args):
        try:
            return check(*args)
        except KeepingTimeError as exc:
            raise forms.ValidationError(exc.message.split(": ", 1)[-1]) from None

    def clean_dst_skipped(self):
        return self.cleaned_data["dst_skipped"] or (self.instance.dst_skipped if self.instance.pk else "next_minute")

    def clean_dst_repeated(self):
        return self.cleaned_data["dst_repeated"] or (self.instance.dst_repeated if self.instance.pk else "first")

    def clean_zone(self):
        return self._checked(check_zone, self.cleaned_data["zone"])

    def clean_weekends(self):
        return self._checked(check_weekends, list(self.cleaned_data["weekends"]))

    def clean(self):
        data = super().clean()
        if "holiday_country" in data or "holiday_subdiv" in data:
            try:
                data["holiday_country"], data["holiday_subdiv"] = check_holidays(
                    (data.get("holiday_country") or "").upper(), data.get("holiday_subdiv") or "")
            except KeepingTimeError as exc:
                self.add_error("holiday_subdiv" if "subdivision" in exc.message else "holiday_country",
                               exc.message.split(": ", 1)[-1])
        return data


@admin.register(Calendar)
class CalendarAdmin(admin.ModelAdmin):
    list_display = ("id", "name", "brand", "zone", "holiday_country", "holiday_subdiv", "is_default", "closed_days")
    list_filter = ("brand", "zone", "holiday_country")
    search_fields = ("id", "name")
    ordering = ("brand", "name")
    inlines = [ClosedDayInline]
    form = CalendarForm

    def save_model(self, request, obj, form, change):
        if not change:
            # As the API makes one: the brand's first calendar is its default, and one default at a time.
            made = calendar_create(brand=obj.brand, name=obj.name, zone=obj.zone, weekends=obj.weekends,
                                   closes=obj.closes, holiday_country=obj.holiday_country,
                                   holiday_subdivision=obj.holiday_subdiv, default=obj.is_default,
                                   dst_skipped=obj.dst_skipped, dst_repeated=obj.dst_repeated, now=wall_now())
            obj.pk, obj.is_default, obj.created_at = made.pk, made.is_default, made.created_at
            obj._state.adding = False
            return
        changes = {"name": obj.name}
        if "is_default" in form.changed_data:
            changes["default"] = obj.is_default
        for rule in ("dst_skipped", "dst_repeated"):  # only while no open date is on it: else calendar_in_use
            if rule in form.changed_data:
                changes[rule] = getattr(obj, rule)
        try:
            calendar_update(calendar=obj, changes=changes)
        except KeepingTimeError as exc:
            messages.error(request, f"{exc.message} ({exc.code})")

    def get_queryset(self, request):
        return super().get_queryset(request).select_related("brand").annotate(closed_count=Count("closed"))

    @admin.display(description="closed days", ordering="closed_count")
    def closed_days(self, obj: Calendar) -> int:
        return obj.closed_count

    def get_readonly_fields(self, request, obj=None):
        return ("id", *ROLL_FIELDS) if obj is not None else ("id",)

    def save_formset(self, request, form, formset, change):
        if formset.model is not ClosedDay:
            return super().save_formset(request, form, formset, change)
        calendar: Calendar = form.instance
        moved = 0
        deleted, changed, added = [], [], []
        # Deleted first, then moved-away dates opened, then every new or changed date closed: two rows may
        # trade dates in one save.
        for f in formset.deleted_forms:
            if f.instance.pk is not None:
                moved += calendar_open_day(calendar=calendar, day=f.instance.date)
                deleted.append(f.instance)
        to_close = []
        for f in formset.forms:
            if f in formset.deleted_forms or not f.has_changed():
                continue
            day, why = f.cleaned_data["date"], f.cleaned_data["why"]
            if f.instance.pk is None:
                added.append(f)
            else:
                before = ClosedDay.objects.filter(pk=f.instance.pk).values_list("date", flat=True).first()
                if before is not None and before != day:
                    moved += calendar_open_day(calendar=calendar, day=before)
                changed.append(f)
            to_close.append((f, day, why))
        for f, day, why in to_close:
            moved += calendar_close_day(calendar=calendar, day=day, why=why)
            f.instance = ClosedDay.objects.get(calendar=calendar, date=day)
        # What construct_change_message reads of a saved formset.
        formset.new_objects = [f.instance for f in added]
        formset.changed_objects = [(f.instance, f.changed_data) for f in changed]
        formset.deleted_objects = deleted
        if to_close or deleted:
            text = ngettext("%(n)d date re-rolled", "%(n)d dates re-rolled", moved) % {"n": moved}
            self.message_user(request, text, messages.SUCCESS)


@admin.register(Subject)
class SubjectAdmin(ReadOnlyAdmin):
    """Read-only but for one action: a subject's dates come from its clocks, its calendar and its keeps."""

    list_display = ("id", "name", "kind", "key_name", "key", "brand", "domain", "calendar", "feed")
    list_filter = ("brand", "kind", "domain")
    search_fields = ("id", "name", "key")
    list_select_related = ("brand", "calendar")
    fields = ("id", "brand", "domain", "kind", "key_name", "key", "name", "calendar", "keeps", "input",
              "feed", "created_at")
    readonly_fields = ("feed",)  # feed_digest is not among the fields: never shown
    actions = ["rotate_feed"]

    @admin.display(description="feed", boolean=True)
    def feed(self, obj: Subject) -> bool:
        """Whether a calendar feed token is issued (its digest is stored), never the digest."""
        return bool(obj.feed_digest)

    def has_rotate_feed_permission(self, request) -> bool:
        # The admin is read-only; rotating a token is a change to the subject, so it takes that permission.
        opts = self.opts
        return request.user.has_perm(f"{opts.app_label}.change_{opts.model_name}")

    @admin.action(description="Rotate calendar feed token", permissions=["rotate_feed"])
    def rotate_feed(self, request, queryset):
        for subject in queryset.order_by("id"):
            token = subject_feed_rotate(subject=subject)
            self.log_change(request, subject, "Rotated the calendar feed token.")
            self.message_user(
                request,
                f"{subject.name} ({subject.id}): a new calendar feed, shown only this once (the old link no "
                f"longer works): {feed.webcal_url(subject, token)}",
                messages.SUCCESS,
            )


class ClockItemInline(ReadOnlyMixin, admin.TabularInline):
    model = ClockItem
    fields = ("item", "civil", "due_date", "due_at", "status", "moves", "rolled_why", "satisfied_at",
              "changed_at")
    readonly_fields = fields
    ordering = ("due_at", "item")
    extra = 0
    can_delete = False
    show_change_link = True


@admin.register(Clock)
class ClockAdmin(ReadOnlyAdmin):
    list_display = ("id", "name", "period", "subject", "spec", "hard", "lives_on", "owner_ref", "domain")
    list_filter = ("hard", "lives_on", "spec", "domain")
    search_fields = ("id", "owner_ref", "subject__id", "subject__name")
    list_select_related = ("subject",)
    ordering = ("-opened_at", "id")
    inlines = [ClockItemInline]


@admin.register(ClockItem)
class ClockItemAdmin(ReadOnlyAdmin):
    list_display = ("clock", "item", "due_date", "status", "moves", "hard")
    fields = ("clock", "item", "civil", "due_date", "due_at", "rolled_why", "moves", "status", "satisfied_at",
              "changed_at")
    list_filter = ("status", ("clock__hard", admin.BooleanFieldListFilter))
    search_fields = ("clock__id", "item", "clock__subject__name")
    list_select_related = ("clock",)
    ordering = ("due_at", "clock", "item")
    show_full_result_count = False

    @admin.display(description="hard", boolean=True, ordering="clock__hard")
    def hard(self, obj: ClockItem) -> bool:
        return obj.clock.hard
