from django.apps import AppConfig


class CalendarsConfig(AppConfig):
    name = "calendars"
    verbose_name = "Calendars"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from timers import batch

        from . import handlers, services, specs

        handlers.register()
        batch.on_carry_check(services.calendars_token)
        # A submit step's receipts are heard whichever process delivers them.
        specs.on_register(services.hear_submissions)
