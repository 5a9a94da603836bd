"""Which plan a Service's time needs, live (the seed's Plans): time that stays on the job runs on Free; time a
Service holds for someone past the job runs on Launch; time that needs a market of people, or that is sold
as a guarantee, runs on Team. On a test clock every key runs on every plan.

Pure: reads a declared Service, no database. ``require`` is what subscription_create and event mints call.
"""

from __future__ import annotations

from timers.errors import KeepingTimeError
from timers.models import is_live

from .declare import Service

ORDER = ("free", "launch", "team")


def needs(svc: Service) -> tuple[str, str]:
    """(the lowest tier that runs every key the Service declares, the key that needs it)."""
    for name, spec in svc.clocks.items():
        if spec.guarantee:
            return "team", f"clocks.{name}.guarantee"
    for step in svc.steps:
        if step.pool:
            return "team", f"deliver.{step.name}.pool"
    if svc.schedule:
        return "launch", f"deliver.schedule.{next(iter(svc.schedule))}"
    if svc.price.every:
        return "launch", "price.every"
    if svc.on:
        return "launch", f"on.{next(iter(svc.on))}"
    for name, spec in svc.clocks.items():
        if spec.lives_on == "subject":
            return "launch", f"clocks.{name}.lives_on"
    if svc.subject.keeps:
        return "launch", "subject.keeps"
    return "free", ""


def require(*, tier: str, domain: str, svc: Service) -> None:
    """Refuse, live, a Service whose time the brand's tier does not run: ``403 plan_<tier>_required`` naming
    the key. A test clock runs every key."""
    if not is_live(domain):
        return
    wanted, key = needs(svc)
    if ORDER.index(wanted) > ORDER.index(tier):
        raise KeepingTimeError(f"{svc.name}: {key} runs on the {wanted.title()} plan; this brand is on "
                               f"{tier.title()}", code=f"plan_{wanted}_required", status=403)
