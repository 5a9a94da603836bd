from django.contrib import admin
from django.urls import include, path

urlpatterns = [
    path("admin/", admin.site.urls),
    path("portal/", include("portals.urls")),
    path("", include("calendars.urls")),
    path("", include("services.urls")),
    path("", include("timers.api.urls")),
]

# Unknown URLs, refused requests and server errors answer in the API's error shape, never an HTML page.
handler400 = "timers.api.errors.bad_request"
handler404 = "timers.api.errors.page_not_found"
handler500 = "timers.api.errors.server_error"
