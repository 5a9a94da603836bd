from django.apps import AppConfig


class PortalsConfig(AppConfig):
    name = "portals"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self):
        # The owner console's admins register on its site here, once the models are loaded, as Django's
        # autodiscover registers each app's admin.py: the site itself imports no admin module.
        from .owner import admin, customers, members, schedules, webhooks  # noqa: F401, PLC0415 - registering is the import
