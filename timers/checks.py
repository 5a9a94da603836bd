"""The project's own deploy checks (``manage.py check --deploy``), beside Django's security.* ones."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.core.checks import CheckMessage, Tags, Warning, register

CONSOLE = "django.core.mail.backends.console.EmailBackend"


@register(Tags.security, deploy=True)
def console_email(app_configs: Any, **kwargs: Any) -> list[CheckMessage]:
    """The console backend prints every email whole: a member's one-time set-password link, which signs
    whoever reads it in, would sit in the server's output and every log that keeps it."""
    if settings.DEBUG or settings.EMAIL_BACKEND != CONSOLE:
        return []
    return [Warning("EMAIL_URL chooses the console email backend: every email, a member's one-time set-password "
                    "link included, is printed whole in the server's output and logs",
                    hint="set EMAIL_URL=smtp+tls://user:pass@host:587 (or another backend) in production",
                    id="timers.W001")]
