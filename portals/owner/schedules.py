"""The console's Schedules: a schedule's page says what it runs and when (in the brand's zone), its recent runs and
the ones that failed, and acts on it: pause (with a note) and resume, run now, change (its name, when it runs, its
zone and rules: a new revision, refused when someone changed it since the page was read), backfill a past span,
and delete (a confirm page; afterwards the page stays, readable, with no buttons). The list pauses and resumes the
selected rows.

Each act calls the service function the API calls (``timers.schedules``: pause, resume, trigger;
``timers.schedule_changes``: update, delete, backfill) in one transaction, by POST with the page's CSRF token. A
refusal is an error on the field it names (its param, else the field its code is about) or a sentence (as
``portals.owner.actions`` says them), and nothing is kept. Lookups go through the site's brand-scoped queryset, so
another brand's schedule is not found. A plan's own schedule (a Service's, run by its subscription) is changed
through its subscription: its page says so and offers no buttons, and the service functions refuse it anyway.
Loaded by PortalsConfig.ready; registered on the console's site in place of the runtime's read-only admin. Its
words and forms: portals/owner/schedule_forms.py.
"""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import admin, messages
from django.contrib.admin.utils import quote, unquote
from django.db import transaction
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseRedirect
from django.template.response import TemplateResponse
from django.urls import path, reverse
from django.utils import timezone
from django.utils.html import format_html, format_html_join

from calendars.models import Calendar
from calendars.words import capitalized
from services.models import Job
from timers.admin import RECENT
from timers.admin import ScheduleAdmin as RuntimeScheduleAdmin
from timers.errors import KeepingTimeError
from timers.models import DeadLetter, Schedule, ScheduleTick, is_live
from timers.schedule_bounds import Bounds
from timers.schedule_changes import schedule_backfill, schedule_delete, schedule_update
from timers.schedule_spec import parse as parse_spec
from timers.schedules import fired_count, next_fire_at, schedule_pause, schedule_resume, schedule_trigger
from timers.timeutil import parse_instant

from . import actions
from .schedule_forms import (
    CHANGED_WORDS,
    CLOSED_WORDS,
    OVERLAP_WORDS,
    RESULT_WORDS,
    BackfillForm,
    ChangeForm,
    ConfirmForm,
    PauseForm,
    clock_words,
    managed,
    managed_sentence,
    refusal_to_form,
    refused,
    said,
    span_words,
    what,
    when_words,
)
from .selectors import admin_link, job_title
from .site import site


# -- the pages ------------------------------------------------------------------------------------------------
def _page(model_admin, request, sch: Schedule, *, title: str, form: forms.Form, submit: str,
          intro: str = "") -> TemplateResponse:
    context = {**model_admin.admin_site.each_context(request), "title": title, "form": form, "submit": submit,
               "intro": intro, "cancel": _back(sch), "opts": model_admin.model._meta, "original": sch,
               "has_view_permission": True}
    return TemplateResponse(request, "portals/owner/form_page.html", context)


def _back(sch: Schedule) -> str:
    return reverse("admin:timers_schedule_change", args=[quote(sch.pk)])


def _next_words(sch: Schedule) -> str:
    nxt = next_fire_at(sch)
    return f"Next run: {said(nxt)}." if nxt is not None and not sch.paused else (
        "It is paused." if sch.paused else "No run is ahead.")


def change_page(model_admin, request: HttpRequest, sch: Schedule) -> HttpResponse:
    form = ChangeForm(request.POST if request.method == "POST" else None, schedule=sch)
    if request.method == "POST" and form.is_valid():
        given = form.changes()
        if not given:
            messages.info(request, f"Nothing to change: {what(sch)} is as it was.")
            return HttpResponseRedirect(_back(sch))
        try:
            with transaction.atomic():
                after = schedule_update(schedule=sch, revision=form.cleaned_data["revision"], **given)
        except KeepingTimeError as exc:
            if exc.code == "schedule_revision_conflict":
                sch.refresh_from_db()
                messages.error(request, refused(exc.code))
                form = ChangeForm(schedule=sch)  # as it is now, at its new revision
            else:
                refusal_to_form(form, exc)
        else:
            names = ", ".join(dict.fromkeys(CHANGED_WORDS[k] for k in form.changed_data if k in CHANGED_WORDS))
            messages.success(request, f"{capitalized(what(after))} changed ({names}): it is at revision "
                                      f"{after.revision} now. {_next_words(after)}")
            return HttpResponseRedirect(_back(after))
    return _page(model_admin, request, sch, title=f"Change {what(sch)}", form=form, submit="Save the change",
                 intro="A change is a new revision: a run going now keeps its time and finishes; a new time, zone or "
                       "bound moves the next run.")


def backfill_page(model_admin, request: HttpRequest, sch: Schedule) -> HttpResponse:
    form = BackfillForm(request.POST if request.method == "POST" else None, schedule=sch)
    if request.method == "POST" and form.is_valid():
        d = form.cleaned_data
        try:
            with transaction.atomic():
                got = schedule_backfill(schedule=sch, start=d["start"], end=d["end"], overlap=d["overlap"] or None)
        except KeepingTimeError as exc:
            refusal_to_form(form, exc)
        else:
            messages.success(request, backfilled(sch, got))
            return HttpResponseRedirect(_back(sch))
    return _page(model_admin, request, sch, title=f"Backfill {what(sch)}", form=form, submit="Backfill",
                 intro="Each time in the span that has no run yet starts one, in order; a time that already ran "
                       "starts nothing, and its skip rules still apply.")


def backfilled(sch: Schedule, got: dict[str, Any]) -> str:
    n, done, skipped = len(got["fires"]), len(got["already_run"]), len(got["skipped"])
    start = "start now" if is_live(sch.domain) else "start when the test clock next moves"
    text = (f"Backfill of {what(sch)} from {said(parse_instant(got['start']))} to {said(parse_instant(got['end']))}: "
            f"{n} run{'' if n == 1 else 's'} {start if n else 'to start'}, {done} already ran, {skipped} skipped "
            "by its rules.")
    if got["has_more"]:
        text += f" More remain from {said(parse_instant(got['next_start']))}: backfill again from there."
    return text


def pause_page(model_admin, request: HttpRequest, sch: Schedule) -> HttpResponse:
    form = PauseForm(request.POST if request.method == "POST" else None)
    if request.method == "POST" and form.is_valid():
        outcome = attempt(lambda: paused(sch, note=form.cleaned_data["note"]))
        _report(request, outcome)
        return HttpResponseRedirect(_back(sch))
    return _page(model_admin, request, sch, title=f"Pause {what(sch)}", form=form, submit="Pause",
                 intro="Nothing runs until you resume it. On resume, the runs missed meanwhile start if they are "
                       "within its catch-up window.")


def delete_page(model_admin, request: HttpRequest, sch: Schedule) -> HttpResponse:
    if request.method == "POST":
        _report(request, attempt(lambda: deleted(sch)))
        return HttpResponseRedirect(_back(sch))
    return _page(model_admin, request, sch, title=f"Delete {what(sch)}?", form=ConfirmForm(),
                 submit="Delete the schedule",
                 intro="Nothing runs after it; a run going now finishes. Its page stays here to read, with its runs. "
                       "This cannot be undone.")


# -- the acts (each the API's service function; its sentence) ----------------------------------------------------
def paused(sch: Schedule, *, note: str) -> str:
    schedule_pause(schedule=sch, note=note)
    return f"{capitalized(what(sch))} is paused: nothing runs until you resume it."


def resumed(sch: Schedule) -> str:
    schedule_resume(schedule=sch)
    return (f"{capitalized(what(sch))} resumed: runs missed while it was paused start if they are within its "
            f"catch-up window ({span_words(sch.catchup_window)}). {_next_words(Schedule.objects.get(pk=sch.pk))}")


def run_now(sch: Schedule) -> str:
    schedule_trigger(schedule=sch)
    if is_live(sch.domain):
        return f"{capitalized(what(sch))} runs now."
    return f"{capitalized(what(sch))} runs when the test clock next moves."


def deleted(sch: Schedule) -> str:
    after = schedule_delete(schedule=sch)
    going = after.runs.filter(state="open").count()
    return f"{capitalized(what(sch))} is deleted: nothing runs after it" + (
        f"; the run{'s' if going != 1 else ''} going now finish{'' if going != 1 else 'es'}." if going else ".")


def attempt(fn) -> actions.Outcome:
    """``fn`` in one transaction (portals.owner.actions.attempt), a refusal said as this page says it."""
    outcome = actions.attempt(fn)
    return outcome if outcome.ok else actions.Outcome(False, refused(outcome.code), outcome.code)


def _report(request: HttpRequest, outcome: actions.Outcome) -> None:
    messages.add_message(request, messages.SUCCESS if outcome.ok else messages.ERROR, outcome.message)


POSTED = {"resume": resumed, "run-now": run_now}  # one-click acts: a button on the page, no form


class StateFilter(admin.SimpleListFilter):
    title = "state"
    parameter_name = "state"

    def lookups(self, request, model_admin):
        return [("running", "running"), ("paused", "paused"), ("deleted", "deleted")]

    def queryset(self, request, queryset):
        live = queryset.filter(deleted_at__isnull=True)
        return {"running": live.filter(paused=False), "paused": live.filter(paused=True),
                "deleted": queryset.filter(deleted_at__isnull=False)}.get(self.value() or "", queryset)


@admin.register(Schedule, site=site)
class ScheduleConsoleAdmin(RuntimeScheduleAdmin):
    """A brand's schedules, acted on with the API's service functions; never edited as rows."""

    list_display = ("title", "when", "state", "next_run", "runs_what", "fired", "failed", "clock")
    list_filter = (StateFilter,)
    search_fields = ("name", "id")
    fields = ("name_text", "acts", "when", "runs_what", "state", "next_runs", "rules", "bounds", "counts",
              "runs_table", "failed_table", "revision_text", "clock")
    readonly_fields = fields
    actions = ["pause_selected", "resume_selected"]

    def has_act_permission(self, request: HttpRequest) -> bool:
        return request.user.has_perm("timers.change_schedule")

    # -- the acts' pages ---------------------------------------------------------------------------------------
    def get_urls(self):
        wrap = self.admin_site.admin_view
        return [
            path("<path:object_id>/edit/", wrap(self._acting(change_page)), name="timers_schedule_edit"),
            path("<path:object_id>/backfill/", wrap(self._acting(backfill_page)), name="timers_schedule_backfill"),
            path("<path:object_id>/pause/", wrap(self._acting(pause_page)), name="timers_schedule_pause"),
            path("<path:object_id>/act/<str:act>/", wrap(self.act_view), name="timers_schedule_act"),
            *super().get_urls(),
        ]

    def _schedule(self, request: HttpRequest, object_id: str) -> Schedule:
        sch = self.get_queryset(request).filter(pk=unquote(object_id)).first()
        if sch is None:
            raise Http404("no such schedule")
        return sch

    def _acting(self, page):
        def view(request: HttpRequest, object_id: str) -> HttpResponse:
            sch = self._schedule(request, object_id)  # another brand's: not found, before anything else
            if not self.has_act_permission(request):
                raise Http404("no such page")
            if sch.deleted_at is not None or managed(sch):
                code = "schedule_deleted" if sch.deleted_at is not None else "schedule_of_subscription"
                messages.error(request, refused(code))
                return HttpResponseRedirect(_back(sch))
            return page(self, request, sch)
        return view

    def act_view(self, request: HttpRequest, object_id: str, act: str) -> HttpResponse:
        """Resume and Run now: a button on the page, POST only (the page's form, with its CSRF token)."""
        sch = self._schedule(request, object_id)
        if act not in POSTED or not self.has_act_permission(request):
            raise Http404("no such act")
        if request.method == "POST":
            _report(request, attempt(lambda: POSTED[act](sch)))
        return HttpResponseRedirect(_back(sch))

    def delete_view(self, request, object_id, extra_context=None):
        """Delete is the service's (it stays readable), behind a confirm page; never the row's deletion."""
        return self._acting(delete_page)(request, object_id)

    # -- the list ------------------------------------------------------------------------------------------------
    @admin.display(description="schedule", ordering="name")
    def title(self, obj: Schedule) -> str:
        return obj.name or "(no name)"

    @admin.display(description="when it runs")
    def when(self, obj: Schedule) -> str:
        return f"{when_words(obj.spec or {})} · {obj.zone}"

    @admin.display(description="name")
    def name_text(self, obj: Schedule) -> str:
        return obj.name or "none"

    @admin.display(description="revision")
    def revision_text(self, obj: Schedule) -> str:
        return f"{obj.revision}: each change makes the next one"

    @admin.display(description="what it runs")
    def runs_what(self, obj: Schedule) -> str:
        t = obj.target or {}
        if obj.target_kind == Schedule.Target.HTTP:
            return f"a signed POST to {t.get('url', '')}"
        if obj.target_kind == Schedule.Target.SERVICE:
            return f"a {t.get('service', '')} job"
        return "the plan's work each period"

    @admin.display(description="state")
    def state(self, obj: Schedule) -> str:
        if obj.deleted_at is not None:
            return f"deleted {said(obj.deleted_at)}"
        if obj.paused:
            return f"paused since {said(obj.paused_at)}" + (f": {obj.pause_note}" if obj.pause_note else "")
        if obj.remaining_actions == 0:
            return "ended: its runs are used up"
        if obj.end_at is not None and next_fire_at(obj) is None:
            return "ended: past its end"
        return "running"

    @admin.display(description="next run")
    def next_run(self, obj: Schedule) -> str:
        return said(next_fire_at(obj)) if obj.deleted_at is None and not obj.paused else "—"

    @admin.display(description="runs started")
    def fired(self, obj: Schedule) -> int:
        return fired_count(obj)

    @admin.display(description="failed")
    def failed(self, obj: Schedule) -> int:
        return obj.dead_letters.count()

    @admin.display(description="clock")
    def clock(self, obj: Schedule) -> str:
        return clock_words(obj.domain)

    @admin.action(description="Pause the selected schedules…", permissions=["act"])
    def pause_selected(self, request, queryset):
        form = PauseForm(request.POST if "apply" in request.POST else None)
        if "apply" in request.POST and form.is_valid():
            for sch in queryset.order_by("created_at", "id"):
                _report(request, self._one(sch, lambda s: paused(s, note=form.cleaned_data["note"])))
            return None
        context = {**self.admin_site.each_context(request), "title": "Pause schedules", "opts": self.model._meta,
                   "queryset": queryset, "form": form, "action": "pause_selected",
                   "note": "Nothing runs on them until they resume.",
                   "action_checkbox_name": admin.helpers.ACTION_CHECKBOX_NAME}
        return TemplateResponse(request, "portals/owner/action_form.html", context)

    @admin.action(description="Resume the selected schedules", permissions=["act"])
    def resume_selected(self, request, queryset):
        for sch in queryset.order_by("created_at", "id"):
            _report(request, self._one(sch, resumed))

    @staticmethod
    def _one(sch: Schedule, act) -> actions.Outcome:
        outcome = attempt(lambda: act(sch))  # a plan's is refused by the service (schedule_of_subscription)
        if not outcome.ok:  # which of the selected rows
            return actions.Outcome(False, f"{capitalized(what(sch))}: {outcome.message}", outcome.code)
        return outcome

    # -- the page ------------------------------------------------------------------------------------------------
    @admin.display(description="what you can do")
    def acts(self, obj: Schedule) -> str:
        if obj.deleted_at is not None:
            return format_html("Deleted {}: nothing runs after it, and nothing more can be done to it. Its runs "
                               "stay here to read.", said(obj.deleted_at))
        if managed(obj):
            return managed_sentence(obj)
        pk = quote(obj.pk)

        def link(name: str, label: str) -> str:
            return format_html('<a class="button" href="{}">{}</a>', reverse(f"admin:timers_schedule_{name}",
                                                                             args=[pk]), label)

        def button(act: str, label: str) -> str:
            url = reverse("admin:timers_schedule_act", args=[pk, act])
            return format_html('<button type="submit" class="button" formaction="{}" formmethod="post">{}</button>',
                               url, label)

        return format_html('<div class="kt-acts">' + " ".join(["{}"] * 5) + "</div>", link("edit", "Change"),
                           button("resume", "Resume") if obj.paused else link("pause", "Pause"),
                           button("run-now", "Run now"), link("backfill", "Backfill"),
                           link("delete", "Delete"))

    @admin.display(description="next runs")
    def next_runs(self, obj: Schedule) -> str:
        if obj.deleted_at is not None or obj.paused:
            return "none while it is " + ("deleted" if obj.deleted_at is not None else "paused")
        first = next_fire_at(obj)
        if first is None:
            return "none ahead"
        try:
            bounds = Bounds.of(obj)
            times = bounds.upcoming(bounds.ruled(parse_spec(obj.spec, obj.zone)), first, 5)
        except KeepingTimeError:  # a plan's: its next period's run is the one it knows
            times = [first]
        return format_html_join("", "<div>{}</div>", ((said(t),) for t in times)) or "none ahead"

    @admin.display(description="its rules")
    def rules(self, obj: Schedule) -> str:
        lines = [f"when a run is due while the last one is still going: {OVERLAP_WORDS.get(obj.overlap, obj.overlap)}"
                 + (f" (at most {obj.buffer_limit} kept)" if obj.overlap == "buffer_all" else ""),
                 f"catch-up window: {span_words(obj.catchup_window)}"]
        if obj.jitter:
            lines.append(f"each run starts up to {span_words(obj.jitter)} after its time")
        if obj.calendar:
            cal = Calendar.objects.filter(pk=obj.calendar).values_list("name", flat=True).first()
            lines.append(f"on a closed day of {cal or 'its calendar'}: {CLOSED_WORDS.get(obj.closed_days, '')}")
        return format_html_join("", "<div>{}</div>", ((line,) for line in lines))

    @admin.display(description="bounds")
    def bounds(self, obj: Schedule) -> str:
        lines = []
        if obj.start_at:
            lines.append(f"from {said(obj.start_at)}")
        if obj.end_at:
            lines.append(f"until {said(obj.end_at)}")
        if obj.remaining_actions is not None:
            lines.append(f"{obj.remaining_actions} run{'' if obj.remaining_actions == 1 else 's'} left")
        if obj.skip:
            lines.append("skips " + "; ".join(obj.skip))
        return format_html_join("", "<div>{}</div>", ((line,) for line in lines)) or "none"

    @admin.display(description="counts")
    def counts(self, obj: Schedule) -> str:
        return (f"{fired_count(obj)} runs started · {obj.skipped} skipped while one was still going · "
                f"{obj.dropped} dropped from a full buffer · {obj.missed} missed outside the catch-up window")

    @admin.display(description=f"recent runs (the last {RECENT}, newest first)")
    def runs_table(self, obj: Schedule) -> str:
        ticks = list(ScheduleTick.objects.filter(schedule=obj).select_related("run")
                     .order_by("-fired_at", "-intended_at")[:RECENT])
        if not ticks:
            return "none yet"
        jobs = {j.pk: j for j in Job.objects.filter(pk__in=[t.run.ref for t in ticks if t.run.ref])}
        work = obj.target_kind != Schedule.Target.HTTP  # a job each run: its page; an HTTP call's answer says it

        def row(t: ScheduleTick) -> tuple[str, ...]:
            cells = (said(t.intended_at), said(t.fired_at), RESULT_WORDS.get(t.state, t.state), t.run.outcome or "—")
            job = jobs.get(t.run.ref)
            link = format_html('<a href="{}">{}</a>', admin_link(job), job_title(job)) if job is not None else "—"
            return (*cells, link) if work else cells

        head = ("due", "started", "result", "answer", *(("its work",) if work else ()))
        body = format_html_join("", "<tr>" + "<td>{}</td>" * len(head) + "</tr>", (row(t) for t in ticks))
        return format_html('<table><caption>Times in {}</caption><thead><tr>{}</tr></thead><tbody>{}</tbody>'
                           '</table>', timezone.get_current_timezone_name(),
                           format_html_join("", '<th scope="col">{}</th>', ((h,) for h in head)), body)

    @admin.display(description=f"failed runs (the last {RECENT})")
    def failed_table(self, obj: Schedule) -> str:
        letters = DeadLetter.objects.filter(schedule=obj).select_related("tick").order_by("-at")
        rows = format_html_join("", "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>", (
            (said(d.at), said(d.tick.intended_at), d.status or "—", d.error[:300]) for d in letters[:RECENT]))
        return format_html('<table><thead><tr><th scope="col">when</th><th scope="col">due</th>'
                           '<th scope="col">answer</th><th scope="col">why</th></tr></thead><tbody>{}</tbody></table>',
                           rows) if rows else "none"
