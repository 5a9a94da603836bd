"""The brand's policy values (``policy.set``: a Service's ``stall_days`` and the like) and the silent span
of a job's signal that reads one.

Timers never follow what people do, except through the closed re-arm list: ``policy.set`` is on it, so it
supersedes each open job's silent timer that reads the value and arms it again from the job's last activity.
"""

from __future__ import annotations

from dateutil.relativedelta import relativedelta
from django.db import transaction

from timers.armer import Armer
from timers.errors import KeepingTimeError
from timers.rearm import Rearm

from . import registry
from .deadlines import signal_key
from .declare import Service
from .kinds import SIGNAL
from .models import Job, PolicyValue


def policy_value(*, brand_id: str, domain: str, svc: Service, name: str) -> int:
    row = PolicyValue.objects.filter(brand_id=brand_id, domain=domain, service=svc.name, name=name).values_list(
        "value", flat=True).first()
    return row if row is not None else svc.policy[name]


def signal_span(job: Job, svc: Service, name: str) -> relativedelta:
    """A signal's silent span: declared, or the brand's policy value in days."""
    silent = svc.signals[name].silent
    if silent in svc.policy:
        return relativedelta(days=policy_value(brand_id=job.brand_id, domain=job.domain, svc=svc, name=silent))
    return svc.silent[name]


@transaction.atomic
def policy_set(*, armer: Armer, service: str, name: str, value: int) -> list[str]:
    """Set the brand's ``service.name`` (stall_days): each open job's silent timer that reads it is
    superseded (policy.set) and re-armed from the job's last activity with the new span. Returns the keys
    armed."""
    svc = registry.get(service)
    if name not in svc.policy:
        raise KeepingTimeError(f"{service} has no policy {name!r}; its policy: {', '.join(svc.policy) or 'none'}",
                               code="unknown_policy", status=404)
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= 3650:
        raise KeepingTimeError(f"{name} is a whole number of days from 1 to 3650, not {value!r}",
                               code="invalid_policy_value")
    domain, brand_id = armer.domain, armer.brand_id
    old = PolicyValue.objects.filter(brand_id=brand_id, domain=domain, service=service, name=name).first()
    PolicyValue.objects.update_or_create(brand_id=brand_id, domain=domain, service=service, name=name,
                                         defaults={"value": value, "set_at": armer.now})
    armer.record("policy.set", subject=service, data={"name": name, "from": old.value if old else svc.policy[name],
                                                      "to": value})
    armed = []
    for job in Job.objects.filter(brand_id=brand_id, domain=domain, service=service,
                                  status=Job.Status.OPEN).order_by("opened_at", "id"):
        jsvc = registry.get(job.service, job.version)
        for sig, decl in jsvc.signals.items():
            if decl.silent != name:
                continue
            base = signal_key(job, sig)
            move, key = _last(armer, base)
            if key is None or armer.state(key)[0] != "armed":
                continue
            since = job.last_activity_at or job.opened_at
            nxt = f"{base}@{move + 1}"
            armer.arm(nxt, owed_at=max(since + relativedelta(days=value), armer.now), handler=SIGNAL,
                      data={"job": job.id, "signal": sig, "since": since.isoformat()}, opened_at=job.opened_at,
                      version=job.version)
            armer.supersede(key, by=Rearm.POLICY_SET, successor=nxt)
            armed.append(nxt)
    return armed


def _last(armer: Armer, base: str) -> tuple[int, str | None]:
    """The last key of ``base``'s chain (base, base@1, base@2 …) and its move."""
    if armer.state(base) is None:
        return 0, None
    move = 0
    while armer.state(f"{base}@{move + 1}") is not None:
        move += 1
    return move, base if move == 0 else f"{base}@{move}"
