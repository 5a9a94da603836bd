from __future__ import annotations

from typing import Any

from calendars.models import Clock
from timers.errors import KeepingTimeError
from timers.models import Deploy, TestClock, Timer, Version

from .models import Ask, Job, MoneyLine, Subscription, Task, Window


def void_on_test_clock_delete(sender: object, clock: TestClock, **kwargs: Any) -> None:
    """DELETE /test_clocks/:id voids every job (and subscription) on it."""
    Job.objects.filter(domain=clock.id).exclude(status=Job.Status.VOIDED).update(status=Job.Status.VOIDED)
    Subscription.objects.filter(domain=clock.id).update(status=Subscription.Status.VOIDED)
    MoneyLine.objects.filter(domain=clock.id, status=MoneyLine.Status.OWED).update(status=MoneyLine.Status.VOID)
    # People's time on it ends with it: no Task to take, no link to answer, no standby to keep.
    Task.objects.filter(domain=clock.id, status__in=[Task.Status.OPEN, Task.Status.TAKEN]).update(
        status=Task.Status.CANCELED, hold_until=None)
    Ask.objects.filter(domain=clock.id, status=Ask.Status.OPEN).update(status=Ask.Status.CANCELED)
    Window.objects.filter(domain=clock.id, status=Window.Status.OPEN).update(status=Window.Status.CLOSED)


def keep_pinned_versions(sender: type[Version], instance: Version, **kwargs: Any) -> None:
    """A version is never deleted while a timer, job, clock or subscription pins it."""
    pinned = {
        "timers": Timer.objects.filter(version=instance.digest).count(),
        "jobs": Job.objects.filter(version=instance.digest).count(),
        "clocks": Clock.objects.filter(version=instance.digest).count(),
        "subscriptions": Subscription.objects.filter(version=instance.digest).count(),
        "deploys": Deploy.objects.filter(version=instance.digest).count(),
    }
    held = {k: n for k, n in pinned.items() if n}
    if held:
        raise KeepingTimeError(
            f"version {instance.label} is pinned ({', '.join(f'{n} {k}' for k, n in held.items())}); "
            "a version is never deleted while anything pins it", code="version_pinned", status=409)


def keep_versions_unedited(sender: type[Version], instance: Version, **kwargs: Any) -> None:
    """A version is content-addressed: its files never change; only a missing name may be given once."""
    old = type(instance).objects.filter(pk=instance.pk).values("module", "sources", "services", "name").first()
    if old is None:
        return
    if (old["module"], old["sources"], old["services"]) != (instance.module, instance.sources, instance.services) or (
            old["name"] and old["name"] != instance.name):
        raise KeepingTimeError(f"version {instance.label} is never edited", code="version_immutable", status=409)
