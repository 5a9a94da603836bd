from django.apps import AppConfig


class PortalsConfig(AppConfig):
    name = "portals"
    default_auto_field = "django.db.models.BigAutoField"
