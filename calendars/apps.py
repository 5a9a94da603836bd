from django.apps import AppConfig


class CalendarsConfig(AppConfig):
    name = "calendars"
    default_auto_field = "django.db.models.BigAutoField"
