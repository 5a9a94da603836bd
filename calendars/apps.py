from django.apps import AppConfig


class CalendarsConfig(AppConfig):
    name = "calendars"
    verbose_name = "Calendars"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from . import handlers, services, specs

        handlers.register()
        # A submit step's receipts are heard whichever process delivers them.
        specs.on_register(services.hear_submissions)
