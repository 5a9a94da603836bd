"""The subject calendar's routes: the JSON list (a brand's key) and the webcal feed (the feed token)."""

from django.urls import path

from . import api

urlpatterns = [
    path("subjects/<str:subject_id>/calendar", api.SubjectCalendarView.as_view(), name="subject-calendar"),
    path("subjects/<str:subject_id>/calendar.ics", api.SubjectFeedView.as_view(), name="subject-calendar-feed"),
]
