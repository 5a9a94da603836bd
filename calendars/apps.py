from django.apps import AppConfig


class CalendarsConfig(AppConfig):
    name = "calendars"
    verbose_name = "Calendars"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from timers import batch, schedule_bounds  # noqa: PLC0415 - models load after this module

        from . import closed_days, handlers, receipts, specs  # noqa: PLC0415 - models load after this module

        handlers.register()
        schedule_bounds.register_calendars(closed_days.schedule_calendar)  # a schedule's business days
        batch.on_carry_check(closed_days.calendars_token)
        # A submit step's receipts are heard whichever process delivers them.
        specs.on_register(receipts.hear_submissions)
