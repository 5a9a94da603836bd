"""The console's admins for what a brand runs: jobs (steps, clocks and timers on the page), subscriptions (usage
against allowances; pause, resume, cancel at the cycle's end), the money ledger, Tasks and pools, clock dates
(mark done, choose, postpone), notifications, memberships. Registered on the console's site only.

Rows are never edited by hand: every change is an admin action that calls the same service function the API
calls (portals.owner.actions), in one transaction, a refusal shown as a message with its code. The app's
``PortalsConfig.ready`` imports this module and its siblings (customers, members, webhooks): importing registers.
"""

from __future__ import annotations

from django import forms
from django.contrib import admin, messages
from django.contrib.admin.utils import quote, unquote
from django.db.models import Q, Sum
from django.template.response import TemplateResponse
from django.urls import path, reverse
from django.utils import timezone
from django.utils.html import format_html, format_html_join

from calendars import specs
from calendars.admin import ClockItemAdmin as CalendarsClockItemAdmin
from calendars.entries import clock_what, rolled_text
from calendars.models import Clock, ClockItem
from calendars.words import local
from services import registry
from services.api_json import usage_json
from services.members import pool_named, pool_usernames_of
from services.models import (
    Ask,
    Grant,
    Job,
    MoneyLine,
    Notification,
    PolicyValue,
    PortalSession,
    Subscription,
    Task,
    Window,
)
from services.money import usd
from timers.admin import ReadOnlyAdmin, ReadOnlyMixin
from timers.models import Timer

from . import actions
from .history import HISTORY_TEMPLATE, history_context, item_history
from .money import money_page
from .risks import date_row
from .scope import as_of, request_brands, scope
from .selectors import service_of
from .site import site

RECENT = 100  # timers a job's page lists


def _report(model_admin, request, outcome: actions.Outcome) -> None:
    model_admin.message_user(request, outcome.message, messages.SUCCESS if outcome.ok else messages.ERROR)


class SettleMixin:
    """An action permission of its own: the model's change permission (which an owner holds by membership),
    while the admin itself stays read-only."""

    def has_settle_permission(self, request) -> bool:
        opts = self.opts
        return request.user.has_perm(f"{opts.app_label}.change_{opts.model_name}")


def _table(headers: tuple[str, ...], rows) -> str:
    body = format_html_join("", "<tr>" + "<td>{}</td>" * len(headers) + "</tr>", rows)
    if not body:
        return "none"
    head = format_html_join("", "<th scope=\"col\">{}</th>", ((h,) for h in headers))
    return format_html("<table><thead><tr>{}</tr></thead><tbody>{}</tbody></table>", head, body)


def _local(dt) -> str:
    return f"{timezone.localtime(dt):%Y-%m-%d %H:%M}" if dt else "—"


def _intermediate(model_admin, request, queryset, *, title: str, form, action: str, note: str = ""):
    """Django's intermediate action page: the form, the selected rows, and apply."""
    context = {
        **model_admin.admin_site.each_context(request),
        "title": title,
        "opts": model_admin.model._meta,
        "queryset": queryset,
        "form": form,
        "action": action,
        "note": note,
        "action_checkbox_name": admin.helpers.ACTION_CHECKBOX_NAME,
    }
    return TemplateResponse(request, "portals/owner/action_form.html", context)


# -- jobs ------------------------------------------------------------------------------------------------------
class TaskInline(ReadOnlyMixin, admin.TabularInline):
    model = Task
    fields = ("id", "step", "pool", "status", "member", "hold_until", "extended", "due_at", "closed_at")
    readonly_fields = fields
    ordering = ("entry",)
    extra = 0
    can_delete = False
    show_change_link = True


@admin.register(Job, site=site)
class JobAdmin(SettleMixin, ReadOnlyAdmin):
    list_display = ("id", "service", "period", "subject", "status", "step", "late", "late_at", "waiting_on",
                    "price", "domain")
    list_filter = ("status", "late", "service", "domain")
    search_fields = ("id", "subject__name", "subject__key", "period")
    list_select_related = ("subject",)
    ordering = ("-opened_at", "id")
    fields = ("id", "service", "version", "subject", "subscription", "period", "status", "step", "late", "late_at",
              "waiting_on", "price", "opened_at", "closed_at", "last_activity_at", "steps_table", "clocks_table",
              "timers_table", "domain")
    readonly_fields = fields
    inlines = [TaskInline]
    actions = ["deliver", "cancel"]

    def get_inlines(self, request, obj):
        # A job without Tasks (a system-delivered return) shows no empty Tasks table.
        return self.inlines if obj is not None and obj.tasks.exists() else []

    @admin.display(description="price", ordering="price_cents")
    def price(self, obj: Job) -> str:
        return usd(obj.price_cents)

    @admin.display(description="steps")
    def steps_table(self, obj: Job) -> str:
        svc = service_of(obj.service, obj.version)
        if svc is None or not svc.steps:
            return "no steps: the system delivers it"
        tasks = {t.step: t for t in Task.objects.filter(job=obj).select_related("member").order_by("entry")}
        asks = {a.step: a for a in Ask.objects.filter(job=obj).exclude(step="").order_by("entry")}
        rows = []
        for s in svc.steps:
            t, a = tasks.get(s.name), asks.get(s.name)
            by = f"pool {s.pool}" if s.pool else (s.party or "the system")
            if t is not None:
                state = f"Task {t.status}" + (f" · {t.member.get_username()} until {_local(t.hold_until)}"
                                              if t.member_id and t.hold_until else "")
            elif a is not None:
                state = f"link {a.link} {a.status} · expires {_local(a.expires_at)}"
            else:
                state = "current" if obj.step == s.name else "—"
            rows.append((("▶ " if obj.step == s.name else "") + s.name, by, s.within or "—",
                         usd(round(s.usd * 100)) if s.usd else "—", state))
        return _table(("step", "done by", "within", "charges", "now"), rows)

    @admin.display(description="clocks")
    def clocks_table(self, obj: Job) -> str:
        items = ClockItem.objects.filter(clock__owner_ref=obj.id, clock__domain=obj.domain).select_related(
            "clock").order_by("due_at", "item")
        return _table(("date", "due", "status", "hard", "answers for"), (
            (format_html('<a href="{}">{}</a>', reverse("admin:calendars_clockitem_change", args=[i.pk]),
                         clock_what(i)),
             i.due_date, i.status, "yes" if i.clock.hard else "", i.clock.answers_for) for i in items))

    @admin.display(description=f"timers (in tick order, the first {RECENT})")
    def timers_table(self, obj: Job) -> str:
        owners = [obj.id, *Clock.objects.filter(owner_ref=obj.id, domain=obj.domain).values_list("id", flat=True)]
        match = Q(owner__in=owners)
        for o in owners[1:]:
            match |= Q(owner__startswith=f"{o}#")
        timers = Timer.objects.filter(match, domain=obj.domain).order_by("owed_at", "place", "opened_at", "key")
        return _table(("key", "status", "owed", "fired", "late by"), (
            (format_html('<a href="{}">{}</a>', reverse("admin:timers_timer_change", args=[quote(t.id)]), t.key), t.status,
             _local(t.owed_at), _local(t.fired_at), t.late_by or "") for t in timers[:RECENT]))

    @admin.action(description="Deliver the selected jobs", permissions=["settle"])
    def deliver(self, request, queryset):
        for job in queryset.select_related("subscription").order_by("id"):
            _report(self, request, actions.attempt(lambda job=job: actions.job_deliver_now(job)))

    @admin.action(description="Cancel the selected jobs (the hold returns)", permissions=["settle"])
    def cancel(self, request, queryset):
        reason = f"canceled from the owner console by {actions.who(request.user)}"
        for job in queryset.order_by("id"):
            _report(self, request, actions.attempt(lambda job=job: actions.job_cancel_now(job, reason=reason)))


# -- subscriptions --------------------------------------------------------------------------------------------
class PauseForm(forms.Form):
    note = forms.CharField(max_length=200, required=False, help_text="Why: shown on the subscription")


@admin.register(Subscription, site=site)
class SubscriptionAdmin(SettleMixin, ReadOnlyAdmin):
    list_display = ("id", "service", "subject", "status", "cycle", "usage_text", "paused_at", "cancel_at_period_end",
                    "domain")
    list_filter = ("status", "cancel_at_period_end", "service", "domain")
    search_fields = ("id", "subject__name", "subject__key")
    list_select_related = ("subject",)
    ordering = ("-opened_at", "id")
    fields = ("id", "service", "version", "subject", "status", "price", "cycle", "cycle_started_at", "usage_table",
              "input", "paused_at", "pause_note", "cancel_at_period_end", "opened_at", "domain")
    readonly_fields = fields
    actions = ["pause", "resume", "cancel_at_cycle_end"]

    @admin.display(description="price")
    def price(self, obj: Subscription) -> str:
        svc = service_of(obj.service, obj.version)
        if svc is None:
            return "—"
        return f"{usd(svc.price.cents)}" + (f" a {svc.price.every}" if svc.price.every else "")

    @admin.display(description="usage this cycle")
    def usage_text(self, obj: Subscription) -> str:
        usage = usage_json(obj, service_of(obj.service, obj.version))
        return " · ".join(f"{name} {u['used']} of {u['of']}" for name, u in usage.items()) or "—"

    @admin.display(description="usage against allowances (this cycle)")
    def usage_table(self, obj: Subscription) -> str:
        usage = usage_json(obj, service_of(obj.service, obj.version))
        return _table(("Service", "used", "of", "left"), (
            (name, u["used"], u["of"], max(0, u["of"] - u["used"]) if u["used"] <= u["of"] else
             f"{u['used'] - u['of']} beyond the plan") for name, u in usage.items()))

    @admin.action(description="Pause the selected subscriptions' schedules…", permissions=["settle"])
    def pause(self, request, queryset):
        if "apply" in request.POST:
            form = PauseForm(request.POST)
            if form.is_valid():
                for sub in queryset.order_by("id"):
                    _report(self, request, actions.attempt(
                        lambda sub=sub: actions.sub_pause(sub, note=form.cleaned_data["note"])))
                return None
        else:
            form = PauseForm()
        return _intermediate(self, request, queryset, title="Pause subscriptions", form=form, action="pause",
                             note="Each schedule's next mint is held; the cycle, jobs and money go on.")

    @admin.action(description="Resume the selected subscriptions' schedules", permissions=["settle"])
    def resume(self, request, queryset):
        for sub in queryset.order_by("id"):
            _report(self, request, actions.attempt(lambda sub=sub: actions.sub_resume(sub)))

    @admin.action(description="Cancel the selected subscriptions at the cycle's end", permissions=["settle"])
    def cancel_at_cycle_end(self, request, queryset):
        for sub in queryset.order_by("id"):
            _report(self, request, actions.attempt(lambda sub=sub: actions.sub_cancel(sub)))


# -- the money ledger --------------------------------------------------------------------------------------------
@admin.register(MoneyLine, site=site)
class MoneyLineAdmin(ReadOnlyAdmin):
    list_display = ("id", "owed_at", "kind", "amount", "status", "memo", "member", "job", "subscription",
                    "collected_at", "domain")
    list_filter = ("kind", "status", "domain")
    search_fields = ("id", "memo", "job__id", "subscription__id")
    ordering = ("-owed_at", "id")
    show_full_result_count = False

    @admin.display(description="amount", ordering="amount_cents")
    def amount(self, obj: MoneyLine) -> str:
        return f"{usd(obj.amount_cents)} {obj.currency.upper()}"

    def changelist_view(self, request, extra_context=None):
        response = super().changelist_view(request, extra_context)
        cl = getattr(response, "context_data", {}).get("cl") if hasattr(response, "context_data") else None
        if cl is not None:
            sums = dict(cl.queryset.exclude(status=MoneyLine.Status.VOID).values_list("kind").annotate(
                total=Sum("amount_cents")).order_by("kind"))
            response.context_data["totals"] = [(k, usd(v or 0)) for k, v in sums.items()]
        return response

    change_list_template = "portals/owner/moneyline_change_list.html"

    def get_urls(self):
        return [path("money/", self.admin_site.admin_view(lambda request: money_page(self, request)),
                     name="services_moneyline_money"), *super().get_urls()]


# -- Tasks and pools ------------------------------------------------------------------------------------------------
class AssignForm(forms.Form):
    member = forms.ChoiceField(help_text="A member of the Task's pool")

    def __init__(self, *args, members=(), **kwargs):
        # members: (username sent, the name shown), as services.members.pool_named gives them
        super().__init__(*args, **kwargs)
        self.fields["member"].choices = list(members)


def _pools(brands) -> list[dict]:
    """The pools of the Services the brands run (a Service no job of theirs runs is not theirs to show)."""
    used = set(scope(Job.objects.all(), brands).values_list("service", flat=True).distinct())
    rosters = pool_usernames_of(brand_ids=brands)  # who is in a pool is the brands' data (PoolMember)
    rows = []
    for name, svc in sorted(registry.all_services().items()):
        if name not in used:
            continue
        for pool_name, pool in (getattr(svc, "pools", None) or {}).items():
            rows.append({"service": name, "pool": pool_name, "members": ", ".join(rosters.get(pool_name, [])),
                         "hold": pool.hold})
    return rows


@admin.register(Task, site=site)
class TaskAdmin(SettleMixin, ReadOnlyAdmin):
    list_display = ("id", "job", "step", "pool", "status", "member", "hold_until", "extended", "due_at", "domain")
    list_filter = ("status", "pool", "step", "domain")
    search_fields = ("id", "job__id", "job__subject__name", "member__username")
    list_select_related = ("job", "member")
    ordering = ("due_at", "id")
    actions = ["assign", "mark_done"]
    change_list_template = "portals/owner/task_change_list.html"

    def changelist_view(self, request, extra_context=None):
        return super().changelist_view(request, {**(extra_context or {}), "pools": _pools(request_brands(request))})

    @admin.action(description="Assign the selected Tasks to a member…", permissions=["settle"])
    def assign(self, request, queryset):
        tasks = list(queryset.select_related("job").order_by("id"))
        members = sorted({m for brand_id, pool in {(t.brand_id, t.pool) for t in tasks}
                          for m in pool_named(brand_id=brand_id, pool=pool)})  # once per pool, not per Task
        if "apply" in request.POST:
            form = AssignForm(request.POST, members=members)
            if form.is_valid():
                for task in tasks:
                    _report(self, request, actions.attempt(
                        lambda task=task: actions.task_assign(task, member=form.cleaned_data["member"])))
                return None
        else:
            form = AssignForm(members=members)
        return _intermediate(self, request, queryset, title="Assign Tasks", form=form, action="assign",
                             note="The member takes each Task for the pool's hold (warned at three quarters).")

    @admin.action(description="Mark the selected Tasks' steps done", permissions=["settle"])
    def mark_done(self, request, queryset):
        by = actions.who(request.user)
        for task in queryset.select_related("job").order_by("id"):
            _report(self, request, actions.attempt(
                lambda task=task: actions.job_step_done(task.job, step=task.step, by=by)))


@admin.register(Ask, site=site)
class AskAdmin(ReadOnlyAdmin):
    list_display = ("id", "job", "step", "scope", "party", "status", "link", "expires_at", "answered_at", "domain")
    list_filter = ("status", "link", "domain")
    search_fields = ("id", "job__id", "party")
    ordering = ("expires_at", "id")


@admin.register(Grant, site=site)
class GrantAdmin(ReadOnlyAdmin):
    list_display = ("id", "job", "scope", "party", "status", "granted_at", "ends_at", "domain")
    list_filter = ("status", "scope", "domain")
    search_fields = ("id", "job__id", "party")
    ordering = ("ends_at", "id")


@admin.register(Window, site=site)
class WindowAdmin(ReadOnlyAdmin):
    list_display = ("id", "member", "status", "opened_at", "closes_at", "closed_at", "domain")
    list_filter = ("status", "domain")
    ordering = ("-opened_at", "id")


@admin.register(PolicyValue, site=site)
class PolicyValueAdmin(ReadOnlyAdmin):
    list_display = ("service", "name", "value", "set_at", "domain")
    list_filter = ("service", "domain")


# -- clock dates: mark done, choose, postpone -------------------------------------------------------------------
class PostponeForm(forms.Form):
    to = forms.DateField(help_text="The new date, YYYY-MM-DD (a day on the customer's calendar)")
    notice = forms.CharField(max_length=200, help_text="The notice that postpones it: IR-2028-41 …")


class ChooseForm(forms.Form):
    option = forms.ChoiceField()

    def __init__(self, *args, options=(), **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["option"].choices = [(o, o) for o in options]


class ClockItemAdmin(SettleMixin, CalendarsClockItemAdmin):
    """The date page says the date in words, in the brand's zone with the zone named, and carries the same
    controls as its dashboard row (a date the customer answers for: remind them, or assign it)."""

    list_display = ("clock", "item", "due_date", "status", "moves", "hard", "answers_for")
    actions = ["mark_done", "choose", "postpone"]
    fields = ("what", "customer", "due", "kind", "state", "answered_by", "rolled", "moves", "done_at", "changed")
    readonly_fields = fields
    change_form_template = "portals/owner/clockitem_change_form.html"
    object_history_template = HISTORY_TEMPLATE

    @admin.display(description="answers for", ordering="clock__answers_for")
    def answers_for(self, obj: ClockItem) -> str:
        return obj.clock.answers_for

    # -- the date page, in words --------------------------------------------------------------------------------
    @admin.display(description="date")
    def what(self, obj: ClockItem) -> str:
        return clock_what(obj)

    @admin.display(description="customer")
    def customer(self, obj: ClockItem) -> str:
        return obj.clock.subject.name

    @admin.display(description="due")
    def due(self, obj: ClockItem) -> str:
        return local(obj.due_at, timezone.get_current_timezone())

    @admin.display(description="kind")
    def kind(self, obj: ClockItem) -> str:
        return "a fixed date: it can't be extended" if obj.clock.hard else "a due date"

    @admin.display(description="status")
    def state(self, obj: ClockItem) -> str:
        return {ClockItem.Status.OPEN: "open: not yet done", ClockItem.Status.SATISFIED: "done",
                ClockItem.Status.DUE: "missed: waits on a choice", ClockItem.Status.PASSED: "missed (a fixed date)",
                ClockItem.Status.VOIDED: "no longer needed: its work ended"}.get(obj.status, obj.status)

    @admin.display(description="answers for it")
    def answered_by(self, obj: ClockItem) -> str:
        who = obj.clock.answers_for
        if actions.customers_date(obj):
            return f"{who} (the customer)" if who else "the customer: nobody named yet (add a contact)"
        return who or "nobody yet"

    @admin.display(description="moved from")
    def rolled(self, obj: ClockItem) -> str:
        return rolled_text(obj.civil, obj.rolled_why) if obj.civil != obj.due_date else "—"

    @admin.display(description="done at")
    def done_at(self, obj: ClockItem) -> str:
        return local(obj.satisfied_at, timezone.get_current_timezone()) or "—"

    @admin.display(description="last changed")
    def changed(self, obj: ClockItem) -> str:
        return local(obj.changed_at, timezone.get_current_timezone())

    def change_view(self, request, object_id, form_url="", extra_context=None):
        item = self.get_object(request, object_id)
        extra = dict(extra_context or {})
        if item is not None:
            extra["subtitle"] = f"{clock_what(item)} for {item.clock.subject.name}"
            extra["date_row"] = date_row(item, as_of(request))
            extra["date_rows"] = [extra["date_row"]]
        return super().change_view(request, object_id, form_url, extra)

    def history_view(self, request, object_id, extra_context=None):
        """History: what happened to the date and what happens next, read from the record, above the console's
        own log of changes."""
        item = self.get_object(request, unquote(object_id))
        extra = dict(extra_context or {})
        if item is not None:
            extra.update(history_context(request, item, item_history))
        return super().history_view(request, object_id, extra)

    @admin.action(description="Mark the selected dates done", permissions=["settle"])
    def mark_done(self, request, queryset):
        by = actions.who(request.user)
        for item in queryset.select_related("clock__subject").order_by("due_at", "pk"):
            if actions.customers_date(item):  # the customer's to keep: refused, as the dashboard's button
                _report(self, request, actions.not_yours(item))
                continue
            _report(self, request, actions.attempt(lambda item=item: actions.item_satisfy(item, by=by)))

    @admin.action(description="Choose what happens on the selected missed dates…", permissions=["settle"])
    def choose(self, request, queryset):
        items = list(queryset.select_related("clock__subject").order_by("due_at", "pk"))
        options = sorted({o for i in items for o in specs.get(i.clock.spec).options})
        if not options:
            self.message_user(request, "None of the selected dates' clocks declares an option to choose.",
                              messages.WARNING)
            return None
        if "apply" in request.POST:
            form = ChooseForm(request.POST, options=options)
            if form.is_valid():
                by = actions.who(request.user)
                for item in items:
                    if actions.customers_date(item):
                        _report(self, request, actions.not_yours(item))
                        continue
                    _report(self, request, actions.attempt(
                        lambda item=item: actions.item_choose(item, option=form.cleaned_data["option"], by=by)))
                return None
        else:
            form = ChooseForm(options=options)
        return _intermediate(self, request, queryset, title="Choose", form=form, action="choose",
                             note="A choice that starts a step is refused once a fixed date has passed.")

    @admin.action(description="Move the selected dates by a postponement notice…", permissions=["settle"])
    def postpone(self, request, queryset):
        if "apply" in request.POST:
            form = PostponeForm(request.POST)
            if form.is_valid():
                items = list(queryset.select_related("clock__subject__calendar").order_by("due_at", "pk"))
                _report(self, request, actions.attempt(lambda: actions.items_postpone(
                    items, to=form.cleaned_data["to"], notice=form.cleaned_data["notice"])))
                return None
        else:
            form = PostponeForm()
        return _intermediate(self, request, queryset, title="Postpone dates", form=form, action="postpone",
                             note="A postponement notice moves each date (fixed dates too); their reminders move "
                                  "with them.")


site.register(ClockItem, ClockItemAdmin)


# -- notifications ----------------------------------------------------------------------------------------------------
class ReadFilter(admin.SimpleListFilter):
    title = "read"
    parameter_name = "read"

    def lookups(self, request, model_admin):
        return [("no", "unread"), ("yes", "read")]

    def queryset(self, request, queryset):
        if self.value() == "no":
            return queryset.filter(read_at__isnull=True)
        if self.value() == "yes":
            return queryset.filter(read_at__isnull=False)
        return queryset


@admin.register(Notification, site=site)
class NotificationAdmin(SettleMixin, ReadOnlyAdmin):
    list_display = ("created_at", "kind", "recipient", "subject", "message", "read_at", "domain")
    list_filter = (ReadFilter, "kind", "recipient", "domain")
    search_fields = ("subject", "recipient", "message")
    ordering = ("-created_at", "id")
    actions = ["mark_read"]

    @admin.action(description="Mark the selected notifications read", permissions=["settle"])
    def mark_read(self, request, queryset):
        _report(self, request, actions.attempt(lambda: actions.notifications_read(queryset)))


# -- who may use the apps (members and pools: portals/owner/members.py) ------------------------------------------------
@admin.register(PortalSession, site=site)
class PortalSessionAdmin(ReadOnlyAdmin):
    list_display = ("id", "brand", "subject", "created_at", "expires_at")
    exclude = ("digest",)

