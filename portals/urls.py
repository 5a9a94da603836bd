"""The apps people use, under /portal/ (keeping_time/urls.py): the customer portal and the delivery portal,
each its own URL namespace and template folder. The owner console is the admin, at /admin/."""

from django.urls import include, path

urlpatterns = [
    path("", include("portals.customer.urls")),
    path("delivery/", include("portals.delivery.urls")),
]
