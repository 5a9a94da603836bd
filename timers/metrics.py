"""/metrics: the runtime's state in the Prometheus text format, read from the database when scraped.

Workers are separate processes (and a web process may run an advance too), so a counter kept in this
process would count only what this process did. Every family is therefore built from the tables at scrape
time by one collector, one set query per family, each answered from an index where the table has one; the
history families (fires, late_by) sum FireTally, the counts each batch adds to as it commits. A family whose query fails is left
out and named in ``kt_metrics_scrape_error``: a scrape answers 200, never 500.

Labels: counters and the histogram carry ``clock`` (``live`` or ``test``: one series per test clock would
grow without end); gauges carry the clock ``domain`` (``live`` or a test clock's id), and only domains with
something to report appear. Access: ``Authorization: Bearer <METRICS_TOKEN>``, or a superuser's session
(the families name every brand's test clocks). docs/operations.md lists the families.
"""

from __future__ import annotations

import hmac
import logging
import time
from collections.abc import Callable, Iterable

from django.conf import settings
from django.db import transaction
from django.db.models import Count, OuterRef, Subquery
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.views.decorators.csrf import csrf_exempt
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, HistogramMetricFamily, Metric
from prometheus_client.registry import Collector

from .clock import wall_now
from .keys import KINDS
from .models import LATE_BUCKETS, LIVE, LiveClock, TestClock, Timer
from .sql import leases, sessions, tallies
from .sql import outbox as outbox_sql

log = logging.getLogger(__name__)

CLOCKS = ("live", "test")
OUTCOMES = ("committed", "refused", "failed")  # failed: pushed out by an error, held for the owner console
HELD_REASONS = {"error": "error", "tick.runaway": "runaway"}  # anything else was held by a hold (or a person)


def _family_fires() -> list[Metric]:
    """kt_timer_fires and kt_timer_late_by_seconds, from one statement over FireTally, which each batch adds
    its fires to as it commits them: a scrape reads a few rows per clock domain, never the fired timers."""
    fired = {(c, k, o): 0 for c in CLOCKS for k in KINDS for o in OUTCOMES}  # every series from the start, at 0
    buckets = {c: [0] * (len(LATE_BUCKETS) + 1) for c in CLOCKS}
    late_sum = dict.fromkeys(CLOCKS, 0.0)
    for live, kind_, outcome, b, n, total in tallies.fires_by_clock(LIVE):  # every brand's live clock (live_…)
        clock_ = "live" if live else "test"
        fired[(clock_, kind_, outcome)] = fired.get((clock_, kind_, outcome), 0) + int(n)
        if outcome == "failed":
            continue  # it never fired: the lateness histogram is of fires
        buckets[clock_][b] += int(n)
        late_sum[clock_] += float(total or 0.0)
    fires = CounterMetricFamily("kt_timer_fires", "Timers fired through the gate, by kind and the gate's outcome "
                                "(failed: an error pushed it out, held for the owner console).",
                                labels=["clock", "kind", "outcome"])
    for (clock_, kind_, outcome), n in sorted(fired.items()):
        fires.add_metric([clock_, kind_, outcome], n)
    late = HistogramMetricFamily("kt_timer_late_by_seconds", "How late each fired timer fired after it was owed "
                                 "(0 on a test clock, which visits each instant).", labels=["clock"])
    for clock_ in CLOCKS:
        cum, running = [], 0
        for bound, n in zip((*map(_le, LATE_BUCKETS), "+Inf"), buckets[clock_], strict=True):
            running += n
            cum.append((bound, running))
        late.add_metric([clock_], cum, sum_value=late_sum[clock_])
    return [fires, late]


def _le(bound: float) -> str:
    return str(int(bound)) if bound == int(bound) else str(bound)


def _family_timers() -> list[Metric]:
    # Two partial indexes answer these: timer_tick_order (armed) and timer_held (held).
    armed = GaugeMetricFamily("kt_timers_armed", "Armed timers, per clock domain.", labels=["domain"])
    for domain, n in (Timer.objects.filter(status="armed").order_by().values_list("domain")
                      .annotate(n=Count("*")).values_list("domain", "n")):
        armed.add_metric([domain], n)
    held = GaugeMetricFamily("kt_timers_held", "Held timers, per clock domain and why: error (a handler raised, "
                             "for the owner console), runaway (a chain deeper than MAX_PASSES), hold.",
                             labels=["domain", "reason"])
    counts: dict[tuple[str, str], int] = {}
    for domain, held_by, n in (Timer.objects.filter(status="held").order_by().values_list("domain", "held_by")
                               .annotate(n=Count("*")).values_list("domain", "held_by", "n")):
        k = (domain, HELD_REASONS.get(held_by, "hold"))
        counts[k] = counts.get(k, 0) + n
    for labels, n in sorted(counts.items()):
        held.add_metric(list(labels), n)
    return [armed, held]


def _family_outbox() -> list[Metric]:
    """Pending, sending (a live sender's lease) and in doubt (its sender's lease ran out or, on PostgreSQL,
    its session is gone: the next sender asks the outside system first), as timers/outbox.py has them."""
    pending = GaugeMetricFamily("kt_outbox_pending", "Outbox sends not yet claimed by a sender.", labels=["domain"])
    sending = GaugeMetricFamily("kt_outbox_sending", "Outbox sends a live sender holds under its lease.",
                                labels=["domain"])
    doubt = GaugeMetricFamily("kt_outbox_in_doubt", "Outbox sends in doubt: claimed by a sender whose lease ran "
                              "out or whose session is gone (or a send raised); asked before sent again.",
                              labels=["domain"])
    for domain, p, s, d in outbox_sql.owed_by_domain():
        pending.add_metric([domain], p)
        sending.add_metric([domain], s)
        doubt.add_metric([domain], d)
    return [pending, sending, doubt]


def _family_lag() -> list[Metric]:
    fam = GaugeMetricFamily("kt_tick_lag_seconds", "How far the tick is behind: on a brand's live clock, now minus the "
                            "oldest armed timer owed by now (0 when none is); on a test clock advancing on "
                            "request, advance_to minus frozen_time.", labels=["domain"])
    now = wall_now()
    # Each brand's live clock (live_<brand>) that has a timer armed: its oldest, one probe of timer_tick_order per
    # live clock (as the worker loop's owed_domains reads them), never a read of every armed timer.
    oldest_of = Timer.objects.filter(domain=OuterRef("pk"), status="armed").order_by("owed_at").values("owed_at")[:1]
    for domain, oldest in (LiveClock.objects.annotate(oldest=Subquery(oldest_of)).filter(oldest__isnull=False)
                           .order_by("id").values_list("id", "oldest")):
        fam.add_metric([domain], max(0.0, (now - oldest).total_seconds()))
    for clock_id, frozen, to in (TestClock.objects.filter(status=TestClock.Status.ADVANCING)
                                 .values_list("id", "frozen_time", "advance_to")):
        fam.add_metric([clock_id], max(0.0, (to - frozen).total_seconds()))  # type: ignore[operator]  # advancing: to set
    return [fam]


def lease_holders() -> list[tuple[str, str, int]]:
    """(domain, holder, epoch) for each clock domain's lease held now (timers/lease.py: a Lease row whose
    ``expires`` is still to come; on PostgreSQL, whose holder's database session is also alive)."""
    return leases.held_now(wall_now())


def _family_leases() -> list[Metric]:
    fam = GaugeMetricFamily("kt_lease_holder", "The epoch of each clock domain's lease held now, by its holder "
                            "(host:pid:nonce:thread; one worker holds a domain at a time).", labels=["domain", "holder"])
    for domain, holder, epoch in lease_holders():
        fam.add_metric([domain, holder], epoch)
    return [fam]


def _family_workers() -> list[Metric]:
    """kt_worker_sessions: the database sessions of `tick --forever` workers connected now (pg_stat_activity, by
    their application_name: timers.sql.sessions.WORKER_NAME). 0 when no worker is up, or none could connect.
    Left out where the database cannot say (SQLite)."""
    n = sessions.worker_sessions()
    if n is None:
        return []
    fam = GaugeMetricFamily("kt_worker_sessions", "Database sessions of tick --forever workers connected now (a "
                            "worker has one, and one more for its sender); 0: no worker is running.")
    fam.add_metric([], n)
    return [fam]


FAMILIES: tuple[tuple[str, Callable[[], list[Metric]]], ...] = (
    ("fires", _family_fires),  # and late_by: FireTally's rows
    ("timers", _family_timers),
    ("outbox", _family_outbox),
    ("tick_lag", _family_lag),
    ("leases", _family_leases),
    ("workers", _family_workers),
)


class RuntimeCollector(Collector):
    """Builds every family from the database at each scrape."""

    def collect(self) -> Iterable[Metric]:
        started = time.perf_counter()
        errors = GaugeMetricFamily("kt_metrics_scrape_error", "1 where a family's query failed this scrape (the "
                                   "family is left out), else 0.", labels=["family"])
        for name, build in FAMILIES:
            try:
                # Each family in its own transaction (a savepoint inside one): a failed query aborts only it.
                with transaction.atomic():
                    got = build()
            except Exception:
                log.exception("metrics: the %s family failed", name)
                errors.add_metric([name], 1)
                continue
            errors.add_metric([name], 0)
            yield from got
        yield errors
        took = GaugeMetricFamily("kt_metrics_scrape_duration_seconds", "How long this scrape's queries took.")
        took.add_metric([], time.perf_counter() - started)
        yield took


registry = CollectorRegistry(auto_describe=False)
registry.register(RuntimeCollector())


def _allowed(request: HttpRequest) -> bool:
    token = getattr(settings, "METRICS_TOKEN", "")
    scheme, _, given = request.headers.get("Authorization", "").partition(" ")
    if token and scheme.lower() == "bearer" and hmac.compare_digest(given.strip().encode(), token.encode()):
        return True
    user = getattr(request, "user", None)
    return bool(user is not None and user.is_authenticated and user.is_active and user.is_superuser)


def _error(status: int, code: str, message: str, **headers: str) -> JsonResponse:
    from .api.errors import error_body  # noqa: PLC0415 - the API's one error shape; the API is a floor above

    response = JsonResponse(error_body(code, message, status=status), status=status)
    for name, value in headers.items():
        response[name] = value
    return response


@csrf_exempt
def metrics_view(request: HttpRequest) -> HttpResponse:
    if request.method not in ("GET", "HEAD"):
        return _error(405, "method_not_allowed", f"{request.method} is not allowed on /metrics; use GET",
                      Allow="GET, HEAD")
    try:
        if not _allowed(request):
            return _error(401, "metrics_unauthorized", "Send 'Authorization: Bearer <METRICS_TOKEN>', or sign in "
                          "as a superuser.", **{"WWW-Authenticate": 'Bearer realm="metrics"'})
        body = generate_latest(registry)
    except Exception:  # the database is gone, say: the scraper sees the target down, never a 500
        log.exception("metrics: the scrape failed")
        return _error(503, "metrics_unavailable", "the metrics could not be read now; try again")
    return HttpResponse(body, content_type=CONTENT_TYPE_LATEST)
