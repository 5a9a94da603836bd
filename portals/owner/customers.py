"""The console's pages for a brand's first day: add a customer (a subject on its calendar), subscribe it to a
plan (the plan's declared input as a form, with its errors on the fields), order a job, and the brand's API
keys (created and shown once, revoked). Each form calls the service function the API calls, in one transaction;
a refusal is a message or an error on its field, and nothing is kept.
"""

from __future__ import annotations

from datetime import date
from typing import Any

from django import forms
from django.contrib import admin, messages
from django.contrib.admin.utils import quote, unquote
from django.db import transaction
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseRedirect
from django.template.response import TemplateResponse
from django.urls import path, reverse
from django.utils.html import format_html, format_html_join

from calendars.admin import SubjectAdmin as CalendarsSubjectAdmin
from calendars.models import Calendar, Subject
from services import registry
from services.declare import Input, Service
from services.models import Job, Subscription
from services.money import usd
from services.orders import PERIOD_NAMES, is_plan, job_order, subscription_start
from services.subjects import subject_create, subject_kinds
from timers.admin import ApiKeyAdmin as RuntimeApiKeyAdmin
from timers.clock import wall_now
from timers.domains import domain_now
from timers.errors import KeepingTimeError
from timers.models import ApiKey, Brand, TestClock, is_live, live_domain
from timers.tenants import api_key_create

from .contacts import contact_act, contact_add, contacts_table, values_of
from .history import HISTORY_TEMPLATE, history_context, subject_history
from .scope import as_of, request_brands, test_clocks
from .site import site


def service_label(svc: Service) -> str:
    """What people call a Service: the Tax Plan, an annual return."""
    return svc.name.replace("-", " ").capitalize()


def _brands(request) -> list[Brand]:
    ids = request_brands(request)
    qs = Brand.objects.order_by("name")
    return list(qs if ids is None else qs.filter(pk__in=ids))


# A contact's param (contacts[1].email) as the Add a customer form's field.
CONTACT_FIELDS = {f"contacts[{i}].{name}": f"{prefix}{name}" for i, prefix in enumerate(("contact_", "second_"))
                  for name in ("name", "email", "role", "zone")}


def _error_to_form(form: forms.Form, exc: KeepingTimeError, *, fields: dict[str, str] | None = None) -> None:
    """A refusal on the field it names (its param), else on the form: in words, with its code for support."""
    param = getattr(exc, "param", None) or ""
    name = (fields or {}).get(param) or param.removeprefix("input.").split(".")[0].split("[")[0]
    message = exc.message.removeprefix(f"{param}: ") if param else exc.message
    if name in form.fields:
        form.add_error(name, message)
    else:
        form.add_error(None, f"{message} ({exc.code})")


def _page(request, model_admin, *, title: str, form: forms.Form, submit: str, intro: str = "",
          cancel: str = "", obj=None) -> TemplateResponse:
    context = {**model_admin.admin_site.each_context(request), "title": title, "form": form, "submit": submit,
               "intro": intro, "cancel": cancel, "opts": model_admin.model._meta, "original": obj,
               "has_view_permission": True}
    return TemplateResponse(request, "portals/owner/form_page.html", context)


# -- a customer -----------------------------------------------------------------------------------------------------
class CustomerForm(forms.Form):
    name = forms.CharField(max_length=200, help_text="What the customer is called: Acme Robotics")
    kind = forms.ChoiceField(help_text="What kind of customer the brand's Services take")
    key = forms.CharField(max_length=128)
    calendar = forms.ModelChoiceField(queryset=Calendar.objects.none(), required=False,
                                      help_text="Where their dates fall (zone, weekends, holidays)")
    where = forms.ChoiceField(label="Clock", help_text="The live clock, or a test clock to try it first")
    brand = forms.ModelChoiceField(queryset=Brand.objects.none(), empty_label=None)
    # Their people: the first is primary; more are added on their page.
    contact_name = forms.CharField(label="First contact", max_length=200, required=False,
                                   help_text="Who their dates go to, by name: Ada Lovelace (their first contact is "
                                             "the one a date of theirs goes to first)")
    contact_email = forms.CharField(label="First contact's email", max_length=254, required=False)
    contact_role = forms.CharField(label="First contact's role", max_length=32, required=False,
                                   help_text="Your word for them: officer, bookkeeper")
    contact_zone = forms.CharField(label="First contact's zone", max_length=64, required=False,
                                   help_text="Where they are, e.g. America/Los_Angeles (blank: the calendar's)")
    second_name = forms.CharField(label="Second contact", max_length=200, required=False)
    second_email = forms.CharField(label="Second contact's email", max_length=254, required=False)
    second_role = forms.CharField(label="Second contact's role", max_length=32, required=False)
    second_zone = forms.CharField(label="Second contact's zone", max_length=64, required=False)

    def contacts(self) -> list[dict]:
        return [values_of(self.cleaned_data, prefix=p) for p in ("contact_", "second_")
                if self.cleaned_data.get(f"{p}name") or self.cleaned_data.get(f"{p}email")]

    def __init__(self, *args, brands: list[Brand], clocks: list[TestClock], chosen: str, **kwargs):
        super().__init__(*args, **kwargs)
        kinds = subject_kinds()
        self.fields["kind"].choices = [(k, k) for k in kinds]
        self.fields["key"].help_text = "; ".join(
            f"a {k}'s {spec.key}" + (f", e.g. {spec.example}" if spec.example else "") for k, spec in kinds.items())
        self.fields["brand"].queryset = Brand.objects.filter(pk__in=[b.pk for b in brands]).order_by("name")
        self.fields["brand"].initial = brands[0].pk if brands else None
        if len(brands) == 1:
            self.fields["brand"].widget = forms.HiddenInput()
        cals = Calendar.objects.filter(brand__in=brands).order_by("name")
        self.fields["calendar"].queryset = cals
        default = cals.filter(is_default=True).first()
        self.fields["calendar"].empty_label = (f"the brand's default ({default.name})" if default
                                               else "its Service's, else the brand's default")
        self.fields["where"].choices = [("live", "the live clock")] + [
            (c.id, f"test clock {c.name or c.id}") for c in clocks]
        self.fields["where"].initial = chosen if chosen in dict(self.fields["where"].choices) else "live"


def customer_add(model_admin, request: HttpRequest) -> HttpResponse:
    brands = _brands(request)
    if not brands:
        raise Http404("no brand")
    clocks = list(test_clocks(frozenset(b.pk for b in brands)))
    form = CustomerForm(request.POST or None, brands=brands, clocks=clocks, chosen=as_of(request).domain)
    if request.method == "POST" and form.is_valid():
        brand, where = form.cleaned_data["brand"], form.cleaned_data["where"]
        clock = next((c for c in clocks if c.id == where and c.brand_id == brand.pk), None)
        domain = live_domain(brand.pk) if where == "live" else (clock.id if clock else None)
        cal = form.cleaned_data["calendar"]
        if domain is None:
            form.add_error("where", "that test clock is another brand's")
        elif cal is not None and cal.brand_id != brand.pk:
            form.add_error("calendar", "that calendar is another brand's")
        else:
            try:
                with transaction.atomic():
                    subject = subject_create(brand=brand, domain=domain, kind=form.cleaned_data["kind"],
                                             key=form.cleaned_data["key"], name=form.cleaned_data["name"],
                                             calendar=cal, contacts=form.contacts(), now=domain_now(domain=domain))
            except KeepingTimeError as exc:
                _error_to_form(form, exc, fields=CONTACT_FIELDS)
            else:
                model_admin.log_addition(request, subject, "Added in the owner console.")
                messages.success(request, f"{subject.name} is a customer now, their dates in "
                                          f"{subject.calendar.zone}. Next: subscribe them to a plan, or order a job.")
                return HttpResponseRedirect(reverse("admin:calendars_subject_change", args=[quote(subject.pk)]))
    return _page(request, model_admin, title="Add a customer", form=form, submit="Add the customer",
                 intro="A customer is who the work is for. Their key is checked against what the brand's Services "
                       "take; their dates fall on their calendar.",
                 cancel=reverse("admin:calendars_subject_changelist"))


# -- the declared input as a form -----------------------------------------------------------------------------------
def input_field(name: str, spec: Input) -> forms.Field:
    """A form field for one declared Input: the same checks run in the service, this only shapes the page."""
    label = name.replace("_", " ").capitalize()
    required = spec.required
    help_text = spec.help
    if spec.type == "list":
        if spec.choices:
            return forms.MultipleChoiceField(label=label, required=required, choices=[(c, c) for c in spec.choices],
                                             widget=forms.CheckboxSelectMultiple, help_text=help_text)
        return forms.CharField(label=label, required=required,
                               help_text=(help_text + " " if help_text else "") + "Separate them with commas: CA, NY")
    if spec.choices:
        choices = [(c, c) for c in spec.choices]
        return forms.ChoiceField(label=label, required=required, choices=([("", "—")] if not required else []) + choices,
                                 help_text=help_text)
    if spec.type == "int":
        return forms.IntegerField(label=label, required=required, help_text=help_text)
    if spec.type == "number":
        return forms.FloatField(label=label, required=required, help_text=help_text)
    if spec.type == "bool":
        return forms.BooleanField(label=label, required=False, help_text=help_text)
    if spec.type == "date":
        return forms.DateField(label=label, required=required, widget=forms.DateInput(attrs={"type": "date"}),
                               help_text=help_text or "YYYY-MM-DD")
    if spec.type == "month_day":
        return forms.CharField(label=label, required=required, max_length=5, help_text=help_text or "MM-DD, e.g. 12-31")
    return forms.CharField(label=label, required=required, max_length=200, help_text=help_text)


def input_values(svc: Service, cleaned: dict[str, Any]) -> dict[str, Any]:
    """The form's values as the declared input takes them (blank fields left out)."""
    values: dict[str, Any] = {}
    for name, spec in svc.input.items():
        value = cleaned.get(name)
        if value in (None, "", []) and spec.type != "bool":
            continue
        if spec.type == "list" and isinstance(value, str):
            value = [v.strip() for v in value.split(",") if v.strip()]
        elif spec.type == "date" and isinstance(value, date):
            value = value.isoformat()
        values[name] = value
    return values


class ServiceForm(forms.Form):
    """A Service to pick (a plan to subscribe to, or a Service to order), then what it reads."""

    def __init__(self, *args, choices: list[Service], chosen: Service | None, period: bool = False, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["service"] = forms.ChoiceField(
            label="Plan" if not period else "Service", choices=[(s.name, service_label(s)) for s in choices],
            initial=chosen.name if chosen else None)
        self.chosen = chosen
        if period and chosen is not None:
            kind = chosen.subject.period.of if chosen.subject.period else None
            says = PERIOD_NAMES.get(kind, (None, "its name: an order number"))[1]
            self.fields["period"] = forms.CharField(required=False, max_length=32,
                                                    help_text=f"Blank: the one today falls in; else {says}")
        if chosen is not None:
            for name, spec in chosen.input.items():
                self.fields[name] = input_field(name, spec)


def _subject(model_admin, request, object_id: str) -> Subject:
    subject = model_admin.get_queryset(request).filter(pk=unquote(object_id)).select_related("brand", "calendar").first()
    if subject is None:
        raise Http404("no such customer")
    return subject


def _services_for(subject: Subject, *, plans: bool) -> list[Service]:
    return [s for s in sorted(registry.all_services().values(), key=lambda s: s.name)
            if s.subject.kind == subject.kind and is_plan(s) == plans]


def _chosen(request, options: list[Service]) -> Service | None:
    name = request.POST.get("service") or request.GET.get("service")
    found = next((s for s in options if s.name == name), None)
    return found or (options[0] if len(options) == 1 else None)


def _back(subject: Subject) -> str:
    return reverse("admin:calendars_subject_change", args=[quote(subject.pk)])


def customer_subscribe(model_admin, request: HttpRequest, object_id: str) -> HttpResponse:
    subject = _subject(model_admin, request, object_id)
    options = _services_for(subject, plans=True)
    chosen = _chosen(request, options)
    # The first post with a plan picked only shows its fields; the next one subscribes.
    ready = request.method == "POST" and request.POST.get("ready") == "1" and chosen is not None
    form = ServiceForm(request.POST if ready else None, choices=options, chosen=chosen)
    if ready and form.is_valid():
        try:
            with transaction.atomic():
                subscription_start(brand=subject.brand, subject=subject, plan=chosen.name,
                                         input=input_values(chosen, form.cleaned_data))
        except KeepingTimeError as exc:
            _error_to_form(form, exc)
        else:
            price = f"{usd(chosen.price.cents)} a {chosen.price.every}" if chosen.price.every else ""
            messages.success(request, f"{subject.name} is subscribed to the {service_label(chosen)}"
                                      f"{' at ' + price if price else ''}. Their dates are on the dashboard.")
            return HttpResponseRedirect(_back(subject))
    return _page(request, model_admin, title=f"Subscribe {subject.name}", form=form, obj=subject,
                 submit="Subscribe" if chosen else "Next", cancel=_back(subject),
                 intro="A plan renews on its cycle and opens each period's work on its own."
                 if options else f"No plan takes a {subject.kind}.")


def customer_order(model_admin, request: HttpRequest, object_id: str) -> HttpResponse:
    subject = _subject(model_admin, request, object_id)
    options = _services_for(subject, plans=False)
    chosen = _chosen(request, options)
    ready = request.method == "POST" and request.POST.get("ready") == "1" and chosen is not None
    form = ServiceForm(request.POST if ready else None, choices=options, chosen=chosen, period=True)
    if ready and form.is_valid():
        try:
            with transaction.atomic():
                job = job_order(brand=subject.brand, subject=subject, service=chosen.name,
                                input=input_values(chosen, form.cleaned_data),
                                period=form.cleaned_data.get("period") or None)
        except KeepingTimeError as exc:
            _error_to_form(form, exc)
        else:
            cost = "included in their plan" if job.subscription_id and not job.price_cents else usd(job.price_cents)
            messages.success(request, f"Ordered: {service_label(chosen).lower()} {job.period} for {subject.name} "
                                      f"({cost}).")
            return HttpResponseRedirect(reverse("admin:services_job_change", args=[quote(job.pk)]))
    return _page(request, model_admin, title=f"Order a job for {subject.name}", form=form, obj=subject,
                 submit="Order" if chosen else "Next", cancel=_back(subject),
                 intro="A one-off job: within their plan's allowance it is included; beyond it, priced as the "
                       "Service says.")


@admin.register(Subject, site=site)
class CustomerAdmin(CalendarsSubjectAdmin):
    """Customers: added here (or over the API), subscribed and ordered for from their page."""

    fields = ("name", "kind", "key_name", "key", "calendar", "where", "next_steps", "people", "subscriptions_table",
              "jobs_table", "feed", "created_at", "id")
    readonly_fields = fields
    object_history_template = HISTORY_TEMPLATE

    def history_view(self, request, object_id, extra_context=None):
        """History: what happened to the customer and everything of theirs, read from the record, above the
        console's own log of changes."""
        subject = self.get_object(request, unquote(object_id))
        extra = dict(extra_context or {})
        if subject is not None:
            extra.update(history_context(request, subject, subject_history))
        return super().history_view(request, object_id, extra)

    def has_add_permission(self, request, obj=None):
        return request.user.has_perm("calendars.add_subject")

    def add_view(self, request, form_url="", extra_context=None):
        return customer_add(self, request)

    def get_urls(self):
        wrap = self.admin_site.admin_view
        return [
            path("<path:object_id>/subscribe/", wrap(lambda r, object_id: customer_subscribe(self, r, object_id)),
                 name="calendars_subject_subscribe"),
            path("<path:object_id>/order/", wrap(lambda r, object_id: customer_order(self, r, object_id)),
                 name="calendars_subject_order"),
            path("<path:object_id>/contacts/add/",
                 wrap(lambda r, object_id: contact_add(self, r, _subject(self, r, object_id), _page)),
                 name="calendars_subject_contact_add"),
            path("<path:object_id>/contacts/<str:contact_id>/",
                 wrap(lambda r, object_id, contact_id: contact_act(r, _subject(self, r, object_id), contact_id)),
                 name="calendars_subject_contact"),
            *super().get_urls(),
        ]

    @admin.display(description="clock")
    def where(self, obj: Subject) -> str:
        return "the live clock" if is_live(obj.domain) else f"test clock {obj.domain}"

    @admin.display(description="what next")
    def next_steps(self, obj: Subject) -> str:
        pk = quote(obj.pk)
        return format_html('<a class="button" href="{}">Subscribe to a plan</a> '
                           '<a class="button" href="{}">Order a job</a>',
                           reverse("admin:calendars_subject_subscribe", args=[pk]),
                           reverse("admin:calendars_subject_order", args=[pk]))

    @admin.display(description="their people")
    def people(self, obj: Subject) -> str:
        return contacts_table(obj)

    @admin.display(description="subscriptions")
    def subscriptions_table(self, obj: Subject) -> str:
        subs = Subscription.objects.filter(subject=obj).order_by("opened_at", "id")
        rows = ((reverse("admin:services_subscription_change", args=[quote(s.pk)]), s.service, s.status,
                 f"{s.opened_at:%Y-%m-%d}") for s in subs)
        return format_html_join("", '<div><a href="{}">{}</a> · {} since {}</div>', rows) or "none yet"

    @admin.display(description="jobs")
    def jobs_table(self, obj: Subject) -> str:
        jobs = Job.objects.filter(subject=obj).order_by("-opened_at", "id")[:20]
        rows = ((reverse("admin:services_job_change", args=[quote(j.pk)]), j.service, j.period, j.status)
                for j in jobs)
        return format_html_join("", '<div><a href="{}">{} {}</a> · {}</div>', rows) or "none yet"


# -- API keys ----------------------------------------------------------------------------------------------------------
class KeyForm(forms.Form):
    name = forms.CharField(max_length=200, required=False, help_text="What uses it: the billing system")
    mode = forms.ChoiceField(choices=[("test", "Test: test clocks and their objects only"),
                                      ("live", "Live: the live clock's objects")], initial="test",
                             widget=forms.RadioSelect)
    brand = forms.ModelChoiceField(queryset=Brand.objects.none(), empty_label=None)

    def __init__(self, *args, brands: list[Brand], **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["brand"].queryset = Brand.objects.filter(pk__in=[b.pk for b in brands]).order_by("name")
        self.fields["brand"].initial = brands[0].pk if brands else None
        if len(brands) == 1:
            self.fields["brand"].widget = forms.HiddenInput()


@admin.register(ApiKey, site=site)
class KeyAdmin(RuntimeApiKeyAdmin):
    """A brand's secret keys: a new one is shown once (only its sha256 is kept); revoked, it stops at once."""

    list_display = ("prefix_shown", "name", "mode", "created_at", "revoked_at")
    fields = ("prefix_shown", "name", "mode", "brand", "created_at", "revoked_at")
    readonly_fields = fields
    actions = ["revoke"]

    @admin.display(description="key")
    def prefix_shown(self, obj: ApiKey) -> str:
        return f"{obj.prefix}…"

    @admin.display(description="mode")
    def mode(self, obj: ApiKey) -> str:
        return "live" if obj.prefix.startswith("sk_live_") else "test"

    def has_add_permission(self, request, obj=None):
        return request.user.has_perm("timers.add_apikey")

    def has_revoke_permission(self, request) -> bool:
        return request.user.has_perm("timers.change_apikey")

    def add_view(self, request, form_url="", extra_context=None):
        brands = _brands(request)
        form = KeyForm(request.POST or None, brands=brands)
        if request.method == "POST" and form.is_valid():
            row, secret = api_key_create(brand=form.cleaned_data["brand"], name=form.cleaned_data["name"],
                                         live=form.cleaned_data["mode"] == "live")
            self.log_addition(request, row, "Created in the owner console.")
            context = {**self.admin_site.each_context(request), "title": "Your new secret key", "secret": secret,
                       "row": row, "opts": self.model._meta,
                       "back": reverse("admin:timers_apikey_changelist")}
            return TemplateResponse(request, "portals/owner/key_created.html", context)
        return _page(request, self, title="Create a secret key", form=form, submit="Create the key",
                     intro="Your systems call the API with it. It is shown once, when it is made: keep it safe.",
                     cancel=reverse("admin:timers_apikey_changelist"))

    @admin.action(description="Revoke the selected keys", permissions=["revoke"])
    def revoke(self, request, queryset):
        n = queryset.filter(revoked_at__isnull=True).update(revoked_at=wall_now())
        self.message_user(request, f"{n} key{'s' if n != 1 else ''} revoked: calls made with "
                                   f"{'them' if n != 1 else 'it'} are refused from now on.", messages.SUCCESS)

