from django.apps import AppConfig


class ServicesConfig(AppConfig):
    name = "services"
    verbose_name = "Services"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from django.db.models.signals import pre_delete, pre_save

        from calendars import entries
        from timers import owners
        from timers.models import Version
        from timers.signals import test_clock_deleted, worker_starting

        from . import calendar, handlers, people, registry
        from . import owners as timer_owners
        from .signals import keep_pinned_versions, keep_versions_unedited, void_on_test_clock_delete

        registry.load()  # a malformed Service is an error now, at start, naming its file and field
        handlers.register()
        people.register()
        from . import schedules

        schedules.register()  # calendar-period specs and Service targets of timers' Schedules
        from calendars.clocks import on_clock_lapsed, on_clock_moved

        from .notifications import clock_lapsed
        from .services import deadline_follows_clock

        on_clock_moved(deadline_follows_clock)
        on_clock_lapsed(clock_lapsed)  # who hears a lapse: Notification rows and their emails
        entries.register(calendar.schedule_and_cycle_dates, inputs=calendar.schedule_and_cycle_inputs)
        entries.register(calendar.people_dates, inputs=calendar.people_inputs)  # links, grants, tasks, deadlines
        owners.register(related=timer_owners.related, describe=timer_owners.describe)
        test_clock_deleted.connect(void_on_test_clock_delete, dispatch_uid="services.void")
        worker_starting.connect(_record_working_tree, dispatch_uid="services.versions.startup")
        pre_delete.connect(keep_pinned_versions, sender=Version, dispatch_uid="services.versions.pinned")
        pre_save.connect(keep_versions_unedited, sender=Version, dispatch_uid="services.versions.unedited")


def _record_working_tree(sender, now, **kwargs) -> None:
    from . import registry

    registry.record_working_tree(now=now)
