from django.apps import AppConfig


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
