from django.apps import AppConfig


class TimersConfig(AppConfig):
    name = "timers"
    verbose_name = "Timers"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from . import handlers, schedule_fires, schedule_http, webhooks  # noqa: PLC0415 - they import the models: only once the apps are ready

        handlers.register_builtin()
        schedule_fires.register()
        schedule_http.register()
        webhooks.register()
