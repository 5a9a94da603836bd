"""A schedule's HTTP target once its fire has queued the call: the outbox's ``schedule.http`` transport, which
POSTs the fire signed with the schedule's secret, and the settle hook that closes each call's Run when the
outbox settles it (a 2xx succeeds the tick; a refusal dead-letters it).

Apart from timers/schedule_fires.py (which queues the call inside the tick) and timers/schedule_runs.py (which reads open Runs) because this half
runs in the outbox's sender, after the commit: it imports the schedules' Runs and reads, never the other way.
"""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

from django.db import transaction

from . import outbox, targets, transports
from .clock import wall_now
from .domains import domain_now
from .http import send
from .models import Outbox, Schedule, ScheduleRun, ScheduleTick
from .schedule_runs import dead_letter, direct_arm, release_buffered
from .schedule_targets import HTTP, runs_by_ref
from .signing import SIGNATURE_HEADER, sign
from .sql.schedules import settle_rows

SECRETS_KEPT = 100_000  # schedules' secrets a sender keeps (a schedule's secret never changes)
BUFFERING = (Schedule.Overlap.BUFFER_ONE, Schedule.Overlap.BUFFER_ALL)  # what a closed Run may start


class HttpTargetTransport:
    """POST the fire to the schedule's URL: JSON, signed with the schedule's secret (``Keeping-Time-Signature:
    t=<unix>,v1=<hex HMAC-SHA256 of "<t>.<body>">``, Stripe's scheme), with the submission id as
    ``Idempotency-Key``. 2xx: sent; 4xx: refused for good; 5xx, a timeout, no answer: retried after a
    backoff, ``retries`` times, then refused. Nobody can be asked whether a call arrived, so a call in doubt
    is sent again with the same Idempotency-Key. The connection goes to the address the URL's host resolved to
    and was checked at (timers/targets.py); a refused address is refused for good, nothing sent.

    Connections are kept between sends (timers/http.py: filed by the address checked, each send judged again),
    and the outbox sends a claim's calls ``concurrent_sends`` at a time: ``send`` reads nothing from the
    database once ``prepare`` has read the claim's secrets, so it may run in a sender thread."""

    concurrent_sends = 8
    # At least once, under the Idempotency-Key (a call in doubt is sent again): a receipt lost with the database
    # server's crash means one call again, which the contract allows (timers/sql/outbox.py, record).
    relaxed_receipts = True

    def __init__(self) -> None:
        self._secrets: dict[str, str] = {}  # a schedule's secret never changes

    def prepare(self, rows: list[tuple[str, dict[str, Any]]]) -> None:
        """The secrets of a claim's schedules not known yet, in one query (the outbox calls this per claim):
        a brand with 10,000 schedules paid a query a send on their first round."""
        wanted = {p["schedule"] for _, p in rows if isinstance(p, dict) and "schedule" in p} - self._secrets.keys()
        if not wanted:
            return
        if len(self._secrets) + len(wanted) > SECRETS_KEPT:
            self._secrets.clear()
        found = dict(Schedule.objects.filter(pk__in=wanted).values_list("id", "secret"))
        for sid in wanted:
            self._secrets[sid] = found.get(sid) or ""

    def _secret(self, schedule_id: str) -> str:
        if schedule_id not in self._secrets:
            if len(self._secrets) > SECRETS_KEPT:
                self._secrets.clear()
            self._secrets[schedule_id] = (Schedule.objects.filter(pk=schedule_id).values_list("secret", flat=True)
                                          .first() or "")
        return self._secrets[schedule_id]

    def send(self, submission_id: str, payload: dict[str, Any]) -> dict[str, Any]:
        secret = self._secret(payload["schedule"])
        body = json.dumps({"id": submission_id, "object": "schedule.fire", "schedule": payload["schedule"],
                           "run": payload["run"], "scheduled_at": payload["scheduled_at"],
                           "fired_at": payload["fired_at"]}, separators=(",", ":")).encode()
        headers = {"Content-Type": "application/json", "Idempotency-Key": submission_id,
                   SIGNATURE_HEADER: sign(secret, body, at=int(wall_now().timestamp()))}
        try:
            answer = send("POST", payload["url"], body=body, headers=headers,
                          timeout=float(payload.get("timeout", 10)))
        except targets.TargetRefused as exc:  # nothing was connected: the Run is dead-lettered with the reason
            raise transports.PermanentFailure(f"refused target: {exc.reason}") from None
        text = answer.body.decode("utf-8", "replace")
        if 200 <= answer.status < 300:
            return {"status": answer.status, "body": text}
        message = f"HTTP {answer.status}: {text[:500]}"
        if 400 <= answer.status < 500 and answer.status not in (408, 409, 429):
            raise transports.PermanentFailure(message)
        raise RuntimeError(message)

    def lookup(self, submission_id: str) -> dict[str, Any] | None:
        return None  # an endpoint cannot be asked: send again, under the same Idempotency-Key

    def max_tries(self, payload: dict[str, Any]) -> int:
        return 1 + int(payload.get("retries", 3))


def http_settled(results: list[tuple[str, bool, Any]]) -> None:
    """The outbox settled HTTP calls: each tick succeeds (2xx) or is dead-lettered, and its Run closes; in sets.

    Rows only, no event: a settle lands when the outbox sends, which is not tick order (one advance sends
    after its batch, daily advances after each day), so the record, whose hash the four ways compare, holds
    only what the tick did."""
    by_ref = {sid: (ok, detail) for sid, ok, detail in results}
    with transaction.atomic():
        # Values, not models: a claim settles 200 calls, and two model instances a call (the Run, its
        # schedule by select_related) were most of its time. A schedule's row is read only where it is
        # needed: a refused call's dead letter, a buffered fire to start.
        # FOR UPDATE of the Runs and their schedules' rows, as before (a fire reading the open Runs waits).
        runs = list(runs_by_ref(ScheduleRun.objects.select_for_update().filter(state=ScheduleRun.State.OPEN), list(by_ref))
                    .values_list("pk", "ref", "schedule_id", "schedule__domain", "schedule__overlap"))
        wanted = {r[2] for r in runs if not by_ref[r[1]][0] or r[4] in BUFFERING}
        schedules = Schedule.objects.in_bulk(wanted) if wanted else {}
        nows: dict[str, datetime] = {}
        closed: dict[tuple[datetime, str], list[str]] = {}
        succeeded: dict[datetime, list[str]] = {}
        for pk, ref, schedule_id, domain, _ in runs:
            now = nows.get(domain) or nows.setdefault(domain, domain_now(domain=domain))
            ok, detail = by_ref[ref]
            if ok:
                status = detail.get("status") if isinstance(detail, dict) else None
                closed.setdefault((now, f"http {status or 200}"), []).append(pk)
                succeeded.setdefault(now, []).append(pk)
                continue
            text = str(detail)
            closed.setdefault((now, f"refused · {text[:180]}"), []).append(pk)
            tick = ScheduleTick.objects.filter(run_id=pk).first()
            if tick is not None:
                dead_letter(schedules[schedule_id], tick, now, error=text, status=_http_status(text),
                            payload=Outbox.objects.filter(pk=ref).values_list("payload", flat=True).first())
        settle_rows(succeeded, closed)
        for sch in schedules.values():
            release_buffered(sch, nows[sch.domain], direct_arm(sch, runtime=True))


def _http_status(text: str) -> int | None:
    for word in text.replace(":", " ").split():
        if word.isdigit() and len(word) == 3:
            return int(word)
    return None


def register() -> None:
    """Called once per process (timers.apps), after timers.schedule_fires.register: the transport and its settle."""
    transports.register(HTTP, HttpTargetTransport())
    outbox.on_settled(HTTP, http_settled)


__all__ = ["SECRETS_KEPT", "HttpTargetTransport", "http_settled", "register"]
