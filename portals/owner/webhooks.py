"""The console's webhook endpoints: each with what it is owed and its delivery log (newest first: the event, when,
in the brand's zone and in words, the answer), and Resend on a delivery: one more try through the outbox, under
the same Idempotency-Key (timers.webhooks.delivery_resend). Enable and disable too. Loaded by
PortalsConfig.ready; registered on the console's site, so an owner sees their brands' endpoints only.

Rows are never edited by hand: the actions call the same service functions the API calls, one transaction each,
and answer with a message in words (the endpoint's URL, the event's type and time; no ids).
"""

from __future__ import annotations

from http import HTTPStatus

from django.contrib import admin, messages
from django.contrib.admin.utils import quote, unquote
from django.http import HttpResponseRedirect
from django.shortcuts import get_object_or_404
from django.urls import path, reverse
from django.utils import timezone
from django.utils.html import format_html, format_html_join
from django.utils.timesince import timesince, timeuntil

from timers import webhooks
from timers.admin import ReadOnlyAdmin
from timers.clock import wall_now
from timers.errors import KeepingTimeError
from timers.models import WebhookAttempt, WebhookEndpoint

from .scope import is_owner
from .site import site

LOG_SHOWN = 50  # attempts an endpoint's page lists


def when(dt) -> str:
    """An instant as the viewer reads it: in the console's zone (the brand's), and how long ago or ahead."""
    if dt is None:
        return "—"
    now = wall_now()
    local = timezone.localtime(dt)
    words = f"{timesince(dt, now)} ago" if dt <= now else f"in {timeuntil(dt, now)}"
    return f"{local:%a %-d %b %Y, %H:%M:%S} ({words})"


def outcome(a: WebhookAttempt) -> str:
    if a.status is None:
        return f"no answer: {a.error}" if a.error else "no answer"
    try:
        phrase = HTTPStatus(a.status).phrase
    except ValueError:
        phrase = ""
    return f"{a.status} {phrase}".strip()


def _mode(e: WebhookEndpoint) -> str:
    return "live clock" if e.livemode else "test clocks"


def _may_act(request) -> bool:
    # The brand's owners act on their own endpoints (the site scopes which); a superuser on any.
    return bool(request.user.is_active and (request.user.is_superuser or is_owner(request.user)))


def _resend(model_admin, request, attempt: WebhookAttempt) -> None:
    e = attempt.endpoint
    what = f"{attempt.event_type} to {e.url}"
    try:
        said = webhooks.delivery_resend(endpoint=e, event_id=attempt.event_id)
    except KeepingTimeError as exc:
        model_admin.message_user(request, f"Could not resend {what}: {exc.message}.", messages.ERROR)
        return
    model_admin.message_user(request, f"Resend {what}: {said}", messages.SUCCESS)


def _set_disabled(model_admin, request, queryset, *, disabled: bool) -> None:
    for e in queryset.order_by("created_at", "id"):
        webhooks.endpoint_update(endpoint=e, disabled=disabled)
        model_admin.message_user(request, (
            f"{e.url} is disabled: it hears nothing new, and what it is owed waits until it is enabled."
            if disabled else f"{e.url} is enabled: what it is owed goes out in order."), messages.SUCCESS)


@admin.register(WebhookEndpoint, site=site)
class WebhookEndpointAdmin(ReadOnlyAdmin):
    list_display = ("url", "hears", "status", "events", "owed", "last_delivery", "created")
    list_filter = ("status", "livemode")
    search_fields = ("url", "description")
    ordering = ("created_at", "id")
    fields = ("url", "description", "hears", "status", "events", "owed", "log", "created")
    readonly_fields = fields
    actions = ["disable", "enable"]

    @admin.display(description="hears")
    def hears(self, obj: WebhookEndpoint) -> str:
        return _mode(obj)

    @admin.display(description="events")
    def events(self, obj: WebhookEndpoint) -> str:
        return ", ".join("every event" if p == "*" else p for p in obj.enabled_events)

    @admin.display(description="created", ordering="created_at")
    def created(self, obj: WebhookEndpoint) -> str:
        return when(obj.created_at)

    @admin.display(description="still owed")
    def owed(self, obj: WebhookEndpoint) -> str:
        s = webhooks.owed_summary(obj)
        if not s["owed"]:
            return "nothing"
        text = f"{s['owed']} deliveries"
        if obj.status == WebhookEndpoint.Status.DISABLED:
            return f"{text}, waiting until it is enabled"
        if s["next_try_at"] is not None:
            text += f"; the next is tried again {when(s['next_try_at'])} after {s['tries']} failed tries"
        return text

    @admin.display(description="last delivery")
    def last_delivery(self, obj: WebhookEndpoint) -> str:
        a = obj.attempts.order_by("-id").first()
        return "none yet" if a is None else f"{a.event_type} · {outcome(a)} · {when(a.at)}"

    @admin.display(description=f"delivery log (newest first, the last {LOG_SHOWN})")
    def log(self, obj: WebhookEndpoint) -> str:
        rows = list(obj.attempts.order_by("-id")[:LOG_SHOWN])
        if not rows:
            return "no deliveries yet"
        url = reverse("admin:timers_webhookendpoint_resend", args=[quote(obj.pk), 0]).rsplit("/0/", 1)[0]
        body = format_html_join("", "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td><code>{}</code></td>"
                                    "<td><button type=\"submit\" class=\"button\" formaction=\"{}/{}/\" "
                                    "formmethod=\"post\">Resend</button></td></tr>", (
            (a.event_type, when(a.at), a.attempt, outcome(a), (a.answer or "")[:200], url, a.pk) for a in rows))
        return format_html('<table><thead><tr><th scope="col">event</th><th scope="col">when</th>'
                           '<th scope="col">try</th><th scope="col">answer</th><th scope="col">body</th>'
                           '<th scope="col"></th></tr></thead><tbody>{}</tbody></table>', body)

    def has_resend_permission(self, request) -> bool:
        return _may_act(request)

    @admin.action(description="Disable the selected endpoints (what they are owed waits)", permissions=["resend"])
    def disable(self, request, queryset):
        _set_disabled(self, request, queryset, disabled=True)

    @admin.action(description="Enable the selected endpoints", permissions=["resend"])
    def enable(self, request, queryset):
        _set_disabled(self, request, queryset, disabled=False)

    def get_urls(self):
        return [path("<path:object_id>/resend/<int:attempt_id>/", self.admin_site.admin_view(self.resend_view),
                     name="timers_webhookendpoint_resend"), *super().get_urls()]

    def resend_view(self, request, object_id: str, attempt_id: int):
        """The Resend button on an endpoint's log: POST only (the page's own form, with its CSRF token)."""
        endpoint = get_object_or_404(self.get_queryset(request), pk=unquote(object_id))
        back = reverse("admin:timers_webhookendpoint_change", args=[quote(endpoint.pk)])
        if request.method != "POST" or not _may_act(request):
            return HttpResponseRedirect(back)
        attempt = get_object_or_404(WebhookAttempt, pk=attempt_id, endpoint=endpoint)
        _resend(self, request, attempt)
        return HttpResponseRedirect(back)


@admin.register(WebhookAttempt, site=site)
class WebhookAttemptAdmin(ReadOnlyAdmin):
    """Every endpoint's deliveries, newest first; Resend the selected."""

    list_display = ("event_type", "endpoint_url", "sent", "attempt", "answer_status", "answer_start")
    list_filter = ("endpoint",)
    search_fields = ("event_type", "endpoint__url")
    list_select_related = ("endpoint",)
    ordering = ("-id",)
    actions = ["resend"]
    show_full_result_count = False

    @admin.display(description="endpoint", ordering="endpoint__url")
    def endpoint_url(self, obj: WebhookAttempt) -> str:
        return obj.endpoint.url

    @admin.display(description="when", ordering="at")
    def sent(self, obj: WebhookAttempt) -> str:
        return when(obj.at)

    @admin.display(description="answer", ordering="status")
    def answer_status(self, obj: WebhookAttempt) -> str:
        return outcome(obj)

    @admin.display(description="body")
    def answer_start(self, obj: WebhookAttempt) -> str:
        return (obj.answer or "")[:120]

    def has_resend_permission(self, request) -> bool:
        return _may_act(request)

    @admin.action(description="Resend the selected deliveries (same Idempotency-Key)", permissions=["resend"])
    def resend(self, request, queryset):
        for a in queryset.select_related("endpoint").order_by("id"):
            _resend(self, request, a)
