"""The customer portal's routes, under /portal/ (keeping_time/urls.py)."""

from django.urls import path

from .customer import views

app_name = "customer"

urlpatterns = [
    path("subjects/<str:subject_id>/calendar", views.subject_calendar_page, name="subject-calendar"),
]
