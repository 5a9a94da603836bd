from __future__ import annotations

from .models import Job, MoneyLine, Subscription


def void_on_test_clock_delete(sender, clock, **kwargs) -> None:
    """DELETE /test_clocks/:id voids every job (and subscription) on it."""
    Job.objects.filter(domain=clock.id).exclude(status=Job.Status.VOIDED).update(status=Job.Status.VOIDED)
    Subscription.objects.filter(domain=clock.id).update(status=Subscription.Status.VOIDED)
    MoneyLine.objects.filter(domain=clock.id, status=MoneyLine.Status.OWED).update(status=MoneyLine.Status.VOID)
