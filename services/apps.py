from django.apps import AppConfig


class ServicesConfig(AppConfig):
    name = "services"
    verbose_name = "Services"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from calendars import entries
        from timers import owners
        from timers.services import test_clock_deleted

        from . import calendar, handlers, registry
        from . import owners as timer_owners
        from .signals import void_on_test_clock_delete

        registry.load()  # a malformed Service is an error now, at start, naming its file and field
        handlers.register()
        entries.register(calendar.schedule_and_cycle_dates)
        owners.register(related=timer_owners.related, describe=timer_owners.describe)
        test_clock_deleted.connect(void_on_test_clock_delete, dispatch_uid="services.void")
