"""The REST API's routes, at the root and without trailing slashes (Stripe's paths)."""

from django.urls import path
from drf_spectacular.renderers import OpenApiJsonRenderer
from drf_spectacular.views import SpectacularAPIView, SpectacularRedocView
from rest_framework.permissions import AllowAny

from . import schedules, views, webhooks

urlpatterns = [
    path("timers", views.TimerListView.as_view(), name="timer-list"),
    path("timers/<str:timer_id>", views.TimerDetailView.as_view(), name="timer-detail"),
    path("timers/<str:timer_id>/wake", views.TimerWakeView.as_view(), name="timer-wake"),
    path("test_clocks", views.TestClockListView.as_view(), name="test-clock-list"),
    path("test_clocks/<str:clock_id>", views.TestClockDetailView.as_view(), name="test-clock-detail"),
    path("test_clocks/<str:clock_id>/advance", views.TestClockAdvanceView.as_view(), name="test-clock-advance"),
    path("schedules", schedules.ScheduleListView.as_view(), name="schedule-list"),
    path("schedules/<str:schedule_id>", schedules.ScheduleDetailView.as_view(), name="schedule-detail"),
    path("schedules/<str:schedule_id>/pause", schedules.SchedulePauseView.as_view(), name="schedule-pause"),
    path("schedules/<str:schedule_id>/resume", schedules.ScheduleResumeView.as_view(), name="schedule-resume"),
    path("schedules/<str:schedule_id>/trigger", schedules.ScheduleTriggerView.as_view(), name="schedule-trigger"),
    path("schedules/<str:schedule_id>/backfill", schedules.ScheduleBackfillView.as_view(), name="schedule-backfill"),
    path("webhook_endpoints", webhooks.WebhookEndpointListView.as_view(), name="webhook-endpoint-list"),
    path("webhook_endpoints/<str:endpoint_id>", webhooks.WebhookEndpointDetailView.as_view(),
         name="webhook-endpoint-detail"),
    path("events", views.EventListView.as_view(), name="event-list"),
    path("events/<str:event_id>", views.EventDetailView.as_view(), name="event-detail"),
    # The schema needs no key: anyone may read how to call the API.
    path(
        "openapi.json",
        SpectacularAPIView.as_view(authentication_classes=[], permission_classes=[AllowAny],
                                   renderer_classes=[OpenApiJsonRenderer]),
        name="openapi",
    ),
    # The reference, rendered from /openapi.json by Redoc from this server's own static files (no CDN).
    path("docs", SpectacularRedocView.as_view(url_name="openapi", authentication_classes=[],
                                              permission_classes=[AllowAny]), name="docs"),
]
