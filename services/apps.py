from django.apps import AppConfig


class ServicesConfig(AppConfig):
    name = "services"
    verbose_name = "Services"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from django.db.models.signals import pre_delete, pre_save  # noqa: PLC0415 - models load after this module

        from calendars import entries  # noqa: PLC0415 - models load after this module
        from calendars.clocks import on_clock_moved, on_clock_told  # noqa: PLC0415 - models load after this module
        from timers import owners  # noqa: PLC0415 - models load after this module
        from timers.models import Version  # noqa: PLC0415 - models load after this module
        from timers.signals import test_clock_deleted, worker_starting  # noqa: PLC0415 - models load after this module

        from . import calendar, handlers, people_handlers, registry, schedules  # noqa: PLC0415 - models load after this module
        from . import owners as timer_owners  # noqa: PLC0415 - models load after this module
        from .deadlines import deadline_follows_clock  # noqa: PLC0415 - models load after this module
        from .notifications import clock_told  # noqa: PLC0415 - models load after this module
        from .signals import (  # noqa: PLC0415 - models load after this module
            keep_pinned_versions,
            keep_versions_unedited,
            void_on_test_clock_delete,
        )

        registry.load()  # a malformed Service is an error now, at start, naming its file and field
        handlers.register()
        people_handlers.register()
        schedules.register()  # calendar-period specs and Service targets of timers' Schedules
        on_clock_moved(deadline_follows_clock)
        on_clock_told(clock_told)  # who hears a notice or a lapse: Notification rows and their emails
        entries.register(calendar.schedule_and_cycle_dates, inputs=calendar.schedule_and_cycle_inputs)
        entries.register(calendar.people_dates, inputs=calendar.people_inputs)  # links, grants, tasks, deadlines
        owners.register(related=timer_owners.related, describe=timer_owners.describe)
        test_clock_deleted.connect(void_on_test_clock_delete, dispatch_uid="services.void")
        worker_starting.connect(_record_working_tree, dispatch_uid="services.versions.startup")
        pre_delete.connect(keep_pinned_versions, sender=Version, dispatch_uid="services.versions.pinned")
        pre_save.connect(keep_versions_unedited, sender=Version, dispatch_uid="services.versions.unedited")


def _record_working_tree(sender, now, **kwargs) -> None:
    from . import registry  # noqa: PLC0415 - models load after this module

    registry.record_working_tree(now=now)
