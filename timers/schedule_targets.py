"""A schedule's names and its targets: the handlers' and the transport's names, a fire's key and the seeded ids
of its rows; the registry of target kinds (what a fire starts: ``TargetKind``, ``Started``), and the ``http``
kind itself, a signed POST through the outbox whose submission id is the Idempotency-Key (its transport and
settle in timers/schedule_http.py). The ``service`` kind is the domain's (services/schedules.py): the runtime
knows no Service.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from django.db.models import QuerySet

from . import targets
from .domains import domain_seed
from .errors import KeepingTimeError
from .ids import is_live, new_id
from .models import Brand, Outbox, Schedule, ScheduleRun
from .timeutil import iso_z

if TYPE_CHECKING:
    from .engine import Firing

FIRE = "timers.schedule.fire"  # the fire timer's handler: starts the instant's Run, arms the next fire
START = "timers.schedule.start"  # the start timer's: a buffered fire whose turn came, or a trigger
HTTP = "schedule.http"  # the outbox transport of HTTP targets
MAX_RETRIES = 10
MAX_TIMEOUT = 30.0


class ScheduleError(KeepingTimeError):
    """A schedule, its name or its target as asked for cannot be (400)."""

    code = "invalid_schedule"


# -- names -------------------------------------------------------------------------------------------
def compact(t: datetime) -> str:
    """An instant as a key's occurrence (no ':'): 20271107T0730Z, with seconds when it has them."""
    t = t.astimezone(UTC)
    return t.strftime("%Y%m%dT%H%M%SZ" if t.second or t.microsecond else "%Y%m%dT%H%MZ")


def fire_key(schedule_id: str, at: datetime, revision: int = 1) -> str:
    """A fire's key: ``<sch>:schedule:fire:<instant>``, and ``@<revision>`` once the schedule was updated, so a
    re-armed fire never meets the key of one an update superseded (an instant can be next again)."""
    key = f"{schedule_id}:schedule:fire:{compact(at)}"
    return key if revision <= 1 else f"{key}@{revision}"


def seeded(prefix: str, domain: str, *parts: str) -> str:
    """An id seeded by the domain and ``parts``: a replay of the same fire names the same rows."""
    return new_id(prefix, seed="|".join((domain_seed(domain), *parts)))


def instant(text: str) -> datetime:
    """An instant as a fire timer's data has it (``at``, ISO with Z)."""
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


# -- targets -----------------------------------------------------------------------------------------
@dataclass
class Started:
    """What a target's start says: the Run's ref, and the tick's state now (``open`` until it settles)."""

    ref: str = ""
    tick: str = "open"  # open | succeeded | dead_lettered
    error: str = ""
    status: int | None = None
    payload: dict[str, Any] | None = None


@dataclass(frozen=True)
class TargetKind:
    clean: Callable[[dict[str, Any], Brand, str], dict[str, Any]]  # the target as stored, or KeepingTimeError
    start: Callable[[Firing, Schedule, ScheduleRun], Started]
    cancel: Callable[[Firing, ScheduleRun], bool] | None = None  # True if the Run was asked to stop
    # Narrows the Runs in state open to those still running (an HTTP call the outbox still owes): one query.
    still_open: Callable[[QuerySet[ScheduleRun], Schedule], QuerySet[ScheduleRun]] | None = None
    atomic: bool = True  # its start writes rows: a savepoint, so a refusal rolls them back
    schema: Callable[[], dict[str, Any]] | None = None  # the target's JSON schema: exactly what ``clean`` takes


_targets: dict[str, TargetKind] = {}


def register_target(kind: str, target: TargetKind) -> None:
    _targets[kind] = target


def known_target(kind: str) -> TargetKind | None:
    """The target registered as ``kind``, if any."""
    return _targets.get(kind)


def target_kind(kind: str) -> TargetKind:
    """The target registered as ``kind``, or ScheduleError invalid_target."""
    try:
        return _targets[kind]
    except KeyError:
        raise ScheduleError(f"no target kind {kind!r} is registered; known: {', '.join(sorted(_targets))}",
                            code="invalid_target") from None


# -- the HTTP target ---------------------------------------------------------------------------------
URL_PATTERN = r"^https?://[!-~]+$"  # printable ASCII, no spaces
_URL = re.compile(URL_PATTERN[1:-1])


def http_schema() -> dict[str, Any]:
    return {"type": "object", "additionalProperties": False, "required": ["url"], "properties": {
        "url": {"type": "string", "pattern": URL_PATTERN, "maxLength": 2000},
        "timeout": {"type": "number", "minimum": 0, "exclusiveMinimum": True, "maximum": MAX_TIMEOUT},
        "retries": {"type": "integer", "minimum": 0, "maximum": MAX_RETRIES}}}


def targets_schema() -> dict[str, Any]:
    return {"oneOf": [t.schema() for t in _targets.values() if t.schema is not None]}


def clean_http(target: dict[str, Any], brand: Brand, domain: str) -> dict[str, Any]:
    url = target.get("url")
    if not isinstance(url, str) or len(url) > 2000 or not _URL.fullmatch(url):
        raise ScheduleError("target.url is an http:// or https:// URL (printable ASCII, at most 2000 characters) "
                            "the fire is POSTed to", code="invalid_target")
    extra = set(target) - {"url", "timeout", "retries"}
    if extra:
        raise ScheduleError(f"an HTTP target has url, timeout and retries; not {sorted(extra)}", code="invalid_target")
    timeout = target.get("timeout", 10)
    retries = target.get("retries", 3)
    if isinstance(timeout, bool) or not isinstance(timeout, int | float) or not 0 < timeout <= MAX_TIMEOUT:
        raise ScheduleError(f"target.timeout is seconds, more than 0 and at most {MAX_TIMEOUT:g}",
                            code="invalid_target")
    if isinstance(retries, bool) or not isinstance(retries, int) or not 0 <= retries <= MAX_RETRIES:
        raise ScheduleError(f"target.retries is a whole number from 0 to {MAX_RETRIES}", code="invalid_target")
    why = targets.why_refused(url)  # checked again at every send, on the address the POST connects to
    if why:
        err = ScheduleError(f"target.url {url[:100]!r}: {why}", code="invalid_target")
        err.param = "target.url"
        raise err
    return {"url": url, "timeout": timeout, "retries": retries}


def start_http(f: Firing, sch: Schedule, run: ScheduleRun) -> Started:
    # The submission id is the Idempotency-Key: a resend after a doubt (or a replay) names the same one.
    payload = {"schedule": sch.id, "run": run.id, "scheduled_at": iso_z(run.intended_at),
               "fired_at": iso_z(run.started_at), "url": sch.target["url"], "timeout": sch.target.get("timeout", 10),
               "retries": sch.target.get("retries", 3)}
    return Started(ref=f.send(HTTP, payload))


def http_open(runs: QuerySet[ScheduleRun], sch: Schedule) -> QuerySet[ScheduleRun]:
    # On a test clock a call settles at the instant it fires: the outbox sends (and retries) in wall time,
    # outside the clock's time, so whether a later fire finds it open would depend on how the advance was cut
    # (one call, or day by day) and on how fast the far end answered. Live, open is a call the outbox still
    # owes: pending, being sent, retrying; one queued by this very batch has not left yet and settles as soon
    # as the batch is written. The domain's owed HTTP calls are few (the outbox_pending index): read them
    # first, then their Runs.
    if not is_live(sch.domain):
        return runs.none()
    owed = list(Outbox.objects.filter(domain=sch.domain, transport=HTTP, status__in=["pending", "sending"])
                .values_list("id", flat=True)[:1000])
    return runs_by_ref(runs, owed) if owed else runs.none()


def runs_by_ref(runs: QuerySet[ScheduleRun], refs: list[str]) -> QuerySet[ScheduleRun]:
    """The Runs whose call is one of ``refs``, by schedule_run_ref. ``ref <> ''`` says what that partial index's
    predicate says: PostgreSQL proves a predicate from an IN list of at most 100 values, and a claim settles 200,
    so without it each settle read every Run of every schedule (tests/timers/test_query_plans.py)."""
    return runs.filter(ref__in=refs).exclude(ref="")


def register_http() -> None:
    """The ``http`` target kind (its transport and settle: timers/schedule_http.py)."""
    register_target("http", TargetKind(clean=clean_http, start=start_http, still_open=http_open, atomic=False,
                                       schema=http_schema))
