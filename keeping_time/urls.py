from django.urls import include, path

from portals.owner.site import site as owner_console
from services.portal_api import PortalSessionView
from timers.metrics import metrics_view

urlpatterns = [
    path("admin/", owner_console.urls),  # the owner console: a brand-scoped AdminSite
    path("portal/", include("portals.urls")),
    path("portal_sessions", PortalSessionView.as_view(), name="portal-session-create"),
    path("metrics", metrics_view, name="metrics"),  # Prometheus: Bearer METRICS_TOKEN or a superuser
    path("", include("calendars.urls")),
    path("", include("services.urls")),
    path("", include("timers.api.urls")),
]

# Unknown URLs, refused requests and server errors answer in the API's error shape, never an HTML page.
handler400 = "timers.api.errors.bad_request"
handler404 = "timers.api.errors.page_not_found"
handler500 = "timers.api.errors.server_error"
