"""What the console's schedule pages say and the forms they take (portals/owner/schedules.py draws the pages and
acts): a schedule's policies, times and refusals in the owner's words, times in the page's zone (the brand's: the
site overrides it per request), and the change, backfill and pause forms, which only parse; the service functions
check what they are given. A refusal goes on the field it is about: its param, else the field its code names.
"""

from __future__ import annotations

import re
from datetime import datetime, timedelta
from typing import Any

from cronsim import CronSim, CronSimError
from django import forms
from django.contrib.admin.utils import quote
from django.urls import reverse
from django.utils import timezone
from django.utils.html import format_html

from calendars.models import Calendar
from services.models import Subscription
from timers.errors import KeepingTimeError
from timers.models import OVERLAPS, Schedule, ScheduleTick, TestClock, is_live
from timers.timeutil import local_text

from . import actions
from .selectors import service_of

# What an owner reads for each of the schedule's policies.
OVERLAP_WORDS = {
    "skip": "skip the new one",
    "buffer_one": "keep one to start next",
    "buffer_all": "keep each, up to the buffer limit",
    "cancel_other": "cancel the one going, start the new",
    "allow": "start it too: both at once",
}
CLOSED_WORDS = {"skip": "skip that run", "next_open": "run on the next open day, same time",
                "previous_open": "run on the open day before, same time"}
RESULT_WORDS = {ScheduleTick.State.OPEN: "going", ScheduleTick.State.SUCCEEDED: "done",
                ScheduleTick.State.DEAD_LETTERED: "failed"}

# A refusal's param (the API's) or, where the runtime names none, its code: the form field it is about.
FIELD_OF = {"spec": "cron", "zone": "zone", "name": "name", "overlap": "overlap", "buffer_limit": "buffer_limit",
            "catchup_window": "catchup_window", "start_at": "start_at", "end_at": "end_at",
            "remaining_actions": "remaining_actions", "skip": "skip", "jitter": "jitter", "calendar": "calendar",
            "closed_days": "closed_days", "schedule_period": "cron", "start": "start", "end": "end"}
FIELD_OF_CODE = {"invalid_spec": "cron", "invalid_zone": "zone", "invalid_name": "name",
                 "schedule_name_taken": "name", "invalid_overlap": "overlap", "invalid_buffer_limit": "buffer_limit",
                 "invalid_catchup_window": "catchup_window", "schedule_not_buffering": "overlap"}

# What a change changed, as its message lists it.
CHANGED_WORDS = {"name": "name", "cron": "when it runs", "every": "when it runs", "phase": "when it runs",
                 "zone": "zone", "overlap": "what happens when runs meet", "buffer_limit": "buffer limit",
                 "catchup_window": "catch-up window", "start_at": "start", "end_at": "end",
                 "remaining_actions": "runs left", "skip": "skips", "jitter": "jitter", "calendar": "calendar",
                 "closed_days": "closed days"}

# The schedule's refusals, said (the others are portals.owner.actions.REFUSED's).
REFUSED = {
    "schedule_paused": "It is paused already",
    "schedule_not_paused": "It is not paused",
    "schedule_triggered": "It was started at this minute already: one run an instant",
    "schedule_deleted": "That schedule was deleted: it can be read, not changed",
    "schedule_of_subscription": "That schedule is a plan's: pause or resume it on the subscription's page",
    "schedule_revision_conflict": "It was changed since you opened this page (by someone else, or in another "
                                  "tab). Here it is as it is now: make your change again",
    "schedule_target_kind": "A schedule keeps its kind of target",
}


def refused(code: str) -> str:
    said = REFUSED.get(code)
    return f"Not done. {said}. Nothing was changed." if said else actions.refused(code)


# -- words ------------------------------------------------------------------------------------------------------
def when_words(spec: dict[str, Any]) -> str:
    """'at 09:00 on Monday through Friday', 'every 30 minutes, offset 5 minutes', 'each month, 1 month after its
    end, at 06:30': a cron in the words of cronsim (the library that evaluates it), an interval and a period in
    units."""
    if "cron" in spec:
        try:
            said = CronSim(spec["cron"], datetime(2000, 1, 1)).explain()  # noqa: DTZ001 - cron reads wall time
        except (CronSimError, TypeError):  # a spec stored before the grammar was checked: say it as written
            return f"cron {spec['cron']}"
        return said[:1].lower() + said[1:]
    if "every" in spec:
        phase = str(spec.get("phase") or "0s")
        offset = f", offset {_units(phase)}" if re.match(r"0*[1-9]", phase) else ""
        return f"every {_units(spec['every'], one='')}{offset}"
    if "each" in spec:
        period = str(spec["each"]).replace("_", " ")
        at = _units(spec["at"]).replace(" start", " its start").replace(" end", " its end") if spec.get("at") else ""
        return f"each {period}" + (f", {at}" if at else "") + (f", at {spec['time']}" if spec.get("time") else "")
    return ", ".join(f"{k} {v}" for k, v in spec.items())


UNIT_WORDS = {"s": "second", "m": "minute", "min": "minute", "h": "hour", "d": "day", "w": "week", "mo": "month",
              "y": "year"}


def _units(text: str, *, one: str = "1 ") -> str:
    """'30m' -> '30 minutes', '1mo after end' -> '1 month after end'; ``one`` is what a count of 1 says ('every
    hour', not 'every 1 hour')."""
    def words(m: re.Match[str]) -> str:
        count, unit = int(m[1]), UNIT_WORDS[m[2]]
        return f"{one}{unit}" if count == 1 else f"{count} {unit}s"
    return re.sub(r"\b([0-9]+)(mo|min|s|m|h|d|w|y)\b", words, str(text))


def what(sch: Schedule) -> str:
    """How a message names the schedule: its name, else what it runs on (never its id)."""
    return sch.name or f"the schedule that runs {when_words(sch.spec or {})}"


def span(value: timedelta) -> str:
    """A span in its largest whole unit, as the forms take it back: 365d, 6h, 45m, 90s."""
    seconds = int(value.total_seconds())
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds and seconds % size == 0:
            return f"{seconds // size}{unit}"
    return f"{seconds}s"


def span_words(value: timedelta) -> str:
    """A span as a page says it: 365 days, 6 hours, a minute."""
    return _units(span(value), one="a ")


def said(dt: datetime | None) -> str:
    """An instant in the page's zone (the brand's: the site overrides it per request), its abbreviation named."""
    return local_text(dt, timezone.get_current_timezone()) if dt is not None else "—"


def _plan_of(sch: Schedule) -> Subscription | None:
    sub_id = (sch.target or {}).get("subscription") or sch.owner_ref.split(":")[0]
    return Subscription.objects.filter(pk=sub_id).select_related("subject").first() if sub_id else None


def managed(sch: Schedule) -> bool:
    """A plan's own schedule (a Service's, kept by its subscription): never changed here."""
    return bool(sch.owner_ref) or sch.target_kind == Schedule.Target.SUBSCRIPTION


def managed_sentence(sch: Schedule) -> str:
    sub = _plan_of(sch)
    if sub is None:
        return "This schedule belongs to a plan: it is kept by its subscription, not changed here."
    svc = service_of(sub.service, sub.version)
    plan = svc.title if svc is not None and svc.title else sub.service.replace("-", " ")
    return format_html("This schedule belongs to {}’s {}: it opens the plan’s work each period, so it is paused, "
                       "resumed or ended on <a href=\"{}\">the subscription’s page</a>, not changed here.",
                       sub.subject.name, plan, reverse("admin:services_subscription_change", args=[quote(sub.pk)]))


def clock_words(domain: str) -> str:
    if is_live(domain):
        return "the live clock"
    tc = TestClock.objects.filter(pk=domain).only("name").first()
    return f"test clock {tc.name}" if tc is not None and tc.name else "a test clock"


# -- forms ------------------------------------------------------------------------------------------------------
def _instant_field(label: str, help_text: str, *, required: bool = False) -> forms.DateTimeField:
    # A local wall time in the page's zone (the brand's); to the second, as the API keeps it.
    return forms.DateTimeField(label=label, required=required, help_text=help_text,
                               widget=forms.DateTimeInput(attrs={"type": "datetime-local", "step": "1"},
                                                          format="%Y-%m-%dT%H:%M:%S"))


class ChangeForm(forms.Form):
    """What an owner changes on a schedule; only what they changed is sent, with the revision the page read."""

    revision = forms.IntegerField(widget=forms.HiddenInput)
    name = forms.CharField(required=False, max_length=63,
                           help_text="A lowercase letter, then lowercase letters, digits or hyphens: nightly-report. "
                                     "Blank for none.")
    cron = forms.CharField(label="Cron", required=False, max_length=200,
                           help_text="When it runs, in its zone: minute hour day month weekday, e.g. 0 9 * * 1-5 "
                                     "(09:00 on weekdays).")
    every = forms.CharField(label="Or every", required=False, max_length=10,
                            help_text="Or an interval instead of a cron: 30m, 6h, 1d.")
    phase = forms.CharField(required=False, max_length=10,
                            help_text="With an interval: how far past each interval it runs (every 1h, phase 15m: "
                                      "at a quarter past).")
    zone = forms.CharField(max_length=64, help_text="Where its times are read: America/New_York, Europe/London, UTC.")
    overlap = forms.ChoiceField(label="When a run is due while the last one is still going",
                                choices=[(o, OVERLAP_WORDS[o]) for o in OVERLAPS])
    buffer_limit = forms.IntegerField(label="Buffer limit", help_text="How many kept runs wait at most (1 to 1000).")
    catchup_window = forms.CharField(label="Catch-up window", max_length=12,
                                     help_text="A run missed while paused or down still starts if it is this recent: "
                                               "45m, 6h, 30d (10s to 365d).")
    start_at = _instant_field("Starts", "No run before it. Blank: from now.")
    end_at = _instant_field("Ends", "No run after it. Blank: no end.")
    remaining_actions = forms.IntegerField(label="Runs left", required=False,
                                           help_text="How many more runs it may start; blank: no limit.")
    skip = forms.CharField(label="Skip", required=False, widget=forms.Textarea(attrs={"rows": 3}),
                           help_text="One a line: a date (2027-12-25) or a cron (0 9 25 12 *) whose runs it skips.")
    jitter = forms.CharField(label="Jitter", required=False, max_length=10,
                             help_text="Each run starts up to this much after its time: 30s, 5m. Blank: on time.")
    calendar = forms.ChoiceField(required=False, help_text="A calendar of yours whose closed days it minds.")
    closed_days = forms.ChoiceField(label="On a closed day", choices=list(CLOSED_WORDS.items()))

    def __init__(self, *args, schedule: Schedule, **kwargs):
        spec = schedule.spec or {}
        initial = {
            "revision": schedule.revision, "name": schedule.name, "cron": spec.get("cron", ""),
            "every": spec.get("every", ""), "phase": spec.get("phase", ""), "zone": schedule.zone,
            "overlap": schedule.overlap, "buffer_limit": schedule.buffer_limit,
            "catchup_window": span(schedule.catchup_window), "start_at": schedule.start_at,
            "end_at": schedule.end_at, "remaining_actions": schedule.remaining_actions,
            "skip": "\n".join(schedule.skip or []), "jitter": span(schedule.jitter) if schedule.jitter else "",
            "calendar": schedule.calendar, "closed_days": schedule.closed_days,
        }
        super().__init__(*args, initial=initial, **kwargs)
        self.schedule = schedule
        zone = timezone.get_current_timezone_name()
        for name in ("start_at", "end_at"):
            self.fields[name].help_text += f" In {zone}."
        cals = Calendar.objects.filter(brand_id=schedule.brand_id).order_by("name").values_list("id", "name")
        self.fields["calendar"].choices = [("", "none: it runs on every day")] + list(cals)
        if not ("cron" in spec or "every" in spec):
            self.fields["cron"].help_text += f" Now: {when_words(spec)}; fill one of these to replace it."

    def clean(self) -> dict[str, Any]:
        data = super().clean()
        if data.get("cron") and data.get("every"):
            self.add_error("every", "Give a cron or an interval, not both.")
        elif data.get("phase") and not data.get("every"):
            self.add_error("phase", "A phase goes with an interval (every).")
        return data

    def changes(self) -> dict[str, Any]:
        """The service function's keyword arguments for what the owner changed (each checked there)."""
        d, changed, out = self.cleaned_data, set(self.changed_data), {}
        if changed & {"cron", "every", "phase"}:
            if d["cron"]:
                out["spec"] = {"cron": d["cron"]}
            elif d["every"]:
                out["spec"] = {"every": d["every"], **({"phase": d["phase"]} if d["phase"] else {})}
            else:
                out["spec"] = {}  # neither: the runtime says what a spec is (invalid_spec, on the cron)
        for name in ("name", "zone", "overlap", "buffer_limit", "start_at", "end_at", "remaining_actions",
                     "closed_days", "calendar"):
            if name in changed:
                out[name] = d[name]
        if "catchup_window" in changed:
            text = d["catchup_window"].strip()
            out["catchup_window"] = int(text) if text.isdigit() else text
        if "jitter" in changed:
            out["jitter"] = d["jitter"].strip() or None
        if "skip" in changed:
            out["skip"] = [line.strip() for line in d["skip"].splitlines() if line.strip()]
        return out


class BackfillForm(forms.Form):
    start = _instant_field("From", "The first time to fill in (included).", required=True)
    end = _instant_field("To", "The last (included); no later than now.", required=True)
    overlap = forms.ChoiceField(label="When a run is due while the last one is still going", required=False)

    def __init__(self, *args, schedule: Schedule, **kwargs):
        super().__init__(*args, **kwargs)
        zone = timezone.get_current_timezone_name()
        for name in ("start", "end"):
            self.fields[name].help_text += f" In {zone}."
        self.fields["overlap"].choices = [("", f"the schedule's own: {OVERLAP_WORDS[schedule.overlap]}")] + [
            (o, OVERLAP_WORDS[o]) for o in OVERLAPS]

    def clean(self) -> dict[str, Any]:
        data = super().clean()
        if data.get("start") and data.get("end") and data["end"] < data["start"]:
            self.add_error("end", "The end is before the start.")
        return data


class PauseForm(forms.Form):
    note = forms.CharField(required=False, max_length=200, help_text="Why, for whoever looks next: endpoint moving")


class ConfirmForm(forms.Form):
    pass


def refusal_to_form(form: forms.Form, exc: KeepingTimeError) -> None:
    """A refusal on the field it names (its param, else the field its code is about), else on the form."""
    param = (getattr(exc, "param", None) or "").split(".")[0].split("[")[0]
    name = FIELD_OF.get(param) or FIELD_OF_CODE.get(exc.code) or ""
    data = getattr(form, "cleaned_data", {})
    if name == "cron" and data.get("every") and not data.get("cron"):
        name = "every"  # the spec given was an interval
    if name in form.fields:
        form.add_error(name, f"{exc.message.removeprefix(f'{param}: ')} ({exc.code})")
    else:
        form.add_error(None, f"{refused(exc.code)} ({exc.code})")
