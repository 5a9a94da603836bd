"""A brand's calendars, and the subject calendar's routes: the JSON list (a brand's key) and the webcal feed (the feed
token)."""

from django.urls import path

from . import api, calendars_api

urlpatterns = [
    path("calendars", calendars_api.CalendarListView.as_view(), name="calendar-list"),
    path("calendars/<str:calendar_id>", calendars_api.CalendarDetailView.as_view(), name="calendar-detail"),
    path("subjects/<str:subject_id>/calendar", api.SubjectCalendarView.as_view(), name="subject-calendar"),
    path("subjects/<str:subject_id>/calendar.ics", api.SubjectFeedView.as_view(), name="subject-calendar-feed"),
]
