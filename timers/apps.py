from typing import Any

from django.apps import AppConfig
from django.db.models.signals import post_migrate


class TimersConfig(AppConfig):
    name = "timers"
    verbose_name = "Timers"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from . import checks, handlers, schedule_fires, schedule_http, webhooks  # noqa: PLC0415, F401 - they import the models: only once the apps are ready; checks registers itself

        handlers.register_builtin()
        schedule_fires.register()
        schedule_http.register()
        webhooks.register()
        post_migrate.connect(_cache_tables, sender=self, dispatch_uid="timers.cache_tables")


def _cache_tables(sender: AppConfig, using: str, **kwargs: Any) -> None:
    """The database caches' tables (the sign-in tries', KT_SIGN_IN_CACHE) are made by `migrate`, as
    `createcachetable` makes them: one there already is left as it is."""
    from django.core.management import call_command  # noqa: PLC0415 - commands load the apps: only once they are ready

    call_command("createcachetable", database=using, verbosity=0)
