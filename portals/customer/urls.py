"""The customer portal's routes, under /portal/ (namespace ``customer``)."""

from django.urls import path

from . import portal, views

app_name = "customer"

urlpatterns = [
    path("subjects/<str:subject_id>/calendar", views.subject_calendar_page, name="subject-calendar"),
    path("customer/session", portal.session_open, name="session"),
    path("customer/", portal.home, name="home"),
    path("customer/clocks/<str:clock_id>/<str:item>/history", portal.date_history, name="date-history"),
    path("customer/clocks/<str:clock_id>/<str:item>/<str:act>", portal.clock_act, name="clock-act"),
    path("customer/undo", portal.undo, name="undo"),
    path("customer/statements", portal.statements, name="statements"),
    path("customer/calendar-link", portal.calendar_link, name="calendar-link"),
    path("customer/subscriptions/<str:subscription_id>/<str:act>", portal.subscription_act, name="subscription-act"),
]
