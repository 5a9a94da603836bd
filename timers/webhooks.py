"""Webhook endpoints: a brand's own systems hear its record, as Stripe's webhooks do.

An endpoint (``we_…``) names a URL and the event types it wants (``*``, an exact type, or ``prefix.*``). Every
event the record writes that an enabled endpoint of the event's brand and mode wants becomes a delivery in the
same transaction as the event (``fan_out``): an outbox row of transport ``webhook`` whose clock domain is the
endpoint's id. Two writers reach it: the tick's batch writes call it (timers/store.py, both stores), and a
``post_save`` of Event calls it for every ``Event.objects.create`` (the API's, the console's, the commands',
``DirectArmer.record``). docs/webhooks.md says why this, and not a trigger on the event table.

Deliveries leave through the outbox (timers/outbox.py) in record order per endpoint: the endpoint's domain is
*ordered*, so a claim takes its owed rows by key (the event's seq) and stops at the first that is not free to
send, and a failed send puts the rest back. The body is the event as ``GET /events/<id>`` answers it, signed
as a schedule's HTTP call is (``Keeping-Time-Signature: t=…,v1=…``), with the event id as ``Idempotency-Key``.
A failure is retried with exponential backoff (``WEBHOOK_RETRY_BASE_SECONDS`` doubling up to
``WEBHOOK_RETRY_CAP_SECONDS``) until ``WEBHOOK_RETRY_WINDOW_SECONDS`` (3 days) after the event, then failed.
Each try is a ``WebhookAttempt`` row written right after the POST, a 2xx's in one statement with its receipt
(timers/sql/webhooks.py); a delivery in doubt (its sender was killed) is sent again only if no 2xx for it is
logged, so a kill -9 sends at most its one in-flight POST twice, under the same Idempotency-Key.
"""

from __future__ import annotations

import http.client
import json
import re
import secrets
import threading
import time
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.db import transaction
from django.db.models import Count, Max
from django.db.models.signals import post_save

from . import outbox, quotas, targets, transports
from .clock import wall_now
from .errors import KeepingTimeError, NotFound
from .http import send
from .ids import is_live, new_id
from .models import Brand, Event, Outbox, TestClock, WebhookAttempt, WebhookEndpoint
from .record import event_json
from .rows import insert_rows
from .signals import test_clock_deleted
from .signing import SIGNATURE_HEADER, sign
from .sql import outbox as outbox_sql
from .sql import webhooks as webhook_sql
from .timeutil import iso_z

TRANSPORT = "webhook"
ANSWER_KEPT = 1000  # characters of an answer's body the log keeps
USER_AGENT = "KeepingTime-Webhooks/1.0"
OWED = ("pending", "sending")
# An endpoint's deliveries are outbox rows on a domain of their own, its id (we_…): ordered, claimed apart.
DOMAIN_PREFIX = "we_"

# -- what an endpoint may ask for ---------------------------------------------------------------------------
# The record's event families: the first part of every type the runtime and the domain write (clock.due,
# job.late, subject.notice.received …). A pattern naming another family would never match anything, so it is
# refused (unknown_event_type) rather than kept silently deaf. tests/timers/test_webhooks.py reads the source for
# every type recorded and checks its family is here, so the list stays true as types are added.
EVENT_FAMILIES = frozenset({
    "act", "ask", "calendar", "clock", "grant", "job", "money", "notification", "policy", "schedule", "signal",
    "step", "subject", "subscription", "task", "test_clock", "tick", "timer", "window",
})
_SEGMENT = r"[a-z0-9_]+"
_PATTERN = re.compile(rf"^(?P<family>[a-z][a-z0-9_]*)(\.{_SEGMENT})*(?P<star>\.\*)?$")
MAX_PATTERNS = 100
MAX_PATTERN_LENGTH = 100


def _bad(message: str, *, code: str, param: str) -> KeepingTimeError:
    err = KeepingTimeError(message, code=code, status=400)
    err.param = param
    return err


def check_events(patterns: Any, *, param: str = "enabled_events") -> list[str]:
    """The patterns an endpoint asks for, each ``*``, an exact type, or ``prefix.*``; duplicates dropped, in
    the order given. Malformed: invalid_enabled_events; a family the record never writes: unknown_event_type."""
    if not isinstance(patterns, list | tuple) or not patterns or len(patterns) > MAX_PATTERNS:
        raise _bad(f"a list of 1 to {MAX_PATTERNS} event types: \"*\", an exact type (clock.due) or a prefix "
                   "(clock.*)", code="invalid_enabled_events", param=param)
    out: list[str] = []
    for i, p in enumerate(patterns):
        where = f"{param}[{i}]"
        if not isinstance(p, str) or not p or len(p) > MAX_PATTERN_LENGTH:
            raise _bad(f"{where}: an event type of 1 to {MAX_PATTERN_LENGTH} characters",
                       code="invalid_enabled_events", param=param)
        if p != "*":
            m = _PATTERN.fullmatch(p)
            if m is None:
                raise _bad(f"{where}: {p!r} is not an event type: \"*\", an exact type in lower case (clock.due) "
                           "or a prefix ending in .* (clock.*)", code="invalid_enabled_events", param=param)
            if m.group("family") not in EVENT_FAMILIES:
                raise _bad(f"{where}: the record writes no {m.group('family')!r} events; its families are "
                           f"{', '.join(sorted(EVENT_FAMILIES))}", code="unknown_event_type", param=param)
        if p not in out:
            out.append(p)
    return out


def wants(patterns: Iterable[str], event_type: str) -> bool:
    """Whether an endpoint asking for ``patterns`` hears an event of ``event_type``."""
    for p in patterns:
        if p == "*" or p == event_type or (p.endswith(".*") and event_type.startswith(p[:-1])):
            return True
    return False


MAX_URL = 2048
_PORT = r"(6553[0-5]|655[0-2][0-9]|65[0-4][0-9]{2}|6[0-4][0-9]{3}|[1-5][0-9]{4}|[0-9]{1,4})"
# http(s), a host of RFC 3986's name characters (no credentials: no "@" before the path), an optional port,
# then anything but spaces and control characters (C0, DEL, C1). The API's schema says exactly this
# (timers/api/webhooks.py).
URL_PATTERN = (rf"^https?://[A-Za-z0-9._~!$&'()*+,;=%-]+(:{_PORT})?"
               r"([/?#][^\s\u0000-\u001f\u007f-\u009f]*)?$")
_URL = re.compile(URL_PATTERN)


def event_pattern_regex() -> str:
    """The grammar of one enabled_events entry, with the families spelled out (the API's schema)."""
    families = "|".join(sorted(EVENT_FAMILIES))
    return rf"^(\*|({families})(\.{_SEGMENT})*(\.\*)?)$"


def check_url(url: Any, *, param: str = "url") -> str:
    """An http(s) URL with a host (URL_PATTERN): invalid_url otherwise. Credentials in it are refused (the
    signature is how a receiver knows the sender). A host that resolves to an address this server does not call
    (timers/targets.py: loopback, private, link-local …, unless KT_ALLOW_TARGETS names it) is invalid_target;
    where it points is checked again at each send, on the address the POST connects to."""
    if not isinstance(url, str) or not url or len(url) > MAX_URL:
        raise _bad(f"a URL of at most {MAX_URL} characters", code="invalid_url", param=param)
    if not url.startswith(("http://", "https://")):
        raise _bad("the URL is http:// or https://", code="invalid_url", param=param)
    if _URL.fullmatch(url) is None:
        raise _bad(f"{url[:100]!r} is not a URL this server sends to: http(s)://host[:port][/path], with no user "
                   "or password, spaces or control characters", code="invalid_url", param=param)
    why = targets.why_refused(url)
    if why:
        raise _bad(f"{url[:100]!r}: {why}", code="invalid_target", param=param)
    return url


# -- the endpoints: made, read, changed and ended by the API, the CLI and the console ----------------------
MAX_DESCRIPTION = 5000


def check_description(text: str | None) -> str:
    if text and (len(text) > MAX_DESCRIPTION or "\x00" in text):
        raise _bad(f"a description is text of at most {MAX_DESCRIPTION} characters", code="invalid_request",
                   param="description")
    return text or ""


def new_secret() -> str:
    return f"whsec_{secrets.token_urlsafe(24)}"


def endpoint_create(*, brand: Brand, livemode: bool, url: str, enabled_events: Sequence[str],
                    description: str = "", metadata: Mapping[str, str] | None = None) -> WebhookEndpoint:
    """An endpoint that hears, from now on, the events of ``brand``'s mode it wants. The secret is on the row
    returned (and stored: it signs every delivery); the API shows it in the create answer only."""
    url, events, description = check_url(url), check_events(list(enabled_events)), check_description(description)
    with transaction.atomic():
        quotas.count_within(brand_id=brand.pk, livemode=livemode, quota="webhook_endpoints", what="webhook endpoints",
                            count=WebhookEndpoint.objects.filter(brand=brand, livemode=livemode).count)
        return WebhookEndpoint.objects.create(
            brand=brand, livemode=livemode, url=url, enabled_events=events, secret=new_secret(),
            description=description, metadata=dict(metadata or {}), created_at=wall_now())


def endpoint_update(*, endpoint: WebhookEndpoint, url: str | None = None, enabled_events: Sequence[str] | None = None,
                    description: str | None = None, metadata: Mapping[str, str] | None = None,
                    disabled: bool | None = None) -> WebhookEndpoint:
    """Change what is given. ``metadata`` is merged (a key set to "" is removed). Disabled, the endpoint hears
    nothing new; what it is owed waits, in order, and goes when it is enabled again (each still within its
    three days). A new URL or new events apply to what is owed too: a delivery is built when it is sent."""
    fields: list[str] = []
    if url is not None:
        endpoint.url = check_url(url)
        fields.append("url")
    if enabled_events is not None:
        endpoint.enabled_events = check_events(list(enabled_events))
        fields.append("enabled_events")
    if description is not None:
        endpoint.description = check_description(description)
        fields.append("description")
    if metadata is not None:
        merged = dict(endpoint.metadata or {})
        for k, v in metadata.items():
            if v == "":
                merged.pop(k, None)
            else:
                merged[k] = v
        if len(merged) > 50:
            raise _bad("metadata holds at most 50 keys", code="invalid_request", param="metadata")
        endpoint.metadata = merged
        fields.append("metadata")
    if disabled is not None:
        endpoint.status = WebhookEndpoint.Status.DISABLED if disabled else WebhookEndpoint.Status.ENABLED
        fields.append("status")
    if fields:
        endpoint.save(update_fields=fields)
    return endpoint


@transaction.atomic
def endpoint_delete(*, endpoint: WebhookEndpoint) -> int:
    """End the endpoint: what it is still owed is voided (never sent), and its log goes with it. Returns the
    deliveries voided. A POST already on its way finishes; nothing is tried after it."""
    voided = Outbox.objects.filter(domain=endpoint.id, status__in=OWED).update(
        status="voided", error="webhook_endpoint.deleted", lease_until=None, next_try_at=None)
    endpoint.delete()
    return voided


def get_endpoint(*, brand: Brand, livemode: bool, endpoint_id: str) -> WebhookEndpoint:
    """One of the brand's endpoints of this mode; another brand's or mode's is the same 404."""
    found = WebhookEndpoint.objects.filter(pk=endpoint_id, brand=brand, livemode=livemode).first()
    if found is None:
        raise NotFound(f"no webhook endpoint {endpoint_id!r}")
    return found


def endpoint_json(e: WebhookEndpoint, *, secret: bool = False) -> dict[str, Any]:
    out = {
        "id": e.id,
        "object": "webhook_endpoint",
        "url": e.url,
        "enabled_events": list(e.enabled_events),
        "status": e.status,
        "description": e.description or None,
        "metadata": e.metadata or {},
        "livemode": e.livemode,
        "created": iso_z(e.created_at),
    }
    if secret:
        out["secret"] = e.secret  # shown once, in the create answer
    return out


def delivery_key(seq: int, event_id: str) -> str:
    """A delivery's outbox key: the event's place in the record first (zero-padded, so byte order is record
    order; outbox keys sort byte by byte), then its id for whoever reads the row."""
    return f"{seq:019d}.{event_id}"


@transaction.atomic
def delivery_resend(*, endpoint: WebhookEndpoint, event_id: str) -> str:
    """The console's Resend: one more try at an event the endpoint was sent (or is owed), through the outbox,
    under the same Idempotency-Key (the event id). Still owed and waiting out a backoff: tried again now, in its
    turn. Settled (sent or failed): a new delivery that is tried once. Answers in words, for a message."""
    event = Event.objects.filter(id=event_id).values("seq", "domain", "type").first()
    if event is None:
        raise NotFound("that event is no longer on the record")
    key = delivery_key(event["seq"], event_id)
    rows = Outbox.objects.select_for_update().filter(domain=endpoint.id, key=key)
    owed = rows.filter(status__in=OWED).order_by("attempt").first()
    if owed is not None:
        if owed.status == "sending" and owed.lease_until is not None and owed.lease_until > wall_now():
            return "It is being sent right now."
        rows.filter(pk=owed.pk).update(next_try_at=None)
        return "It is still owed: it is tried again now, after any earlier event still owed to this endpoint."
    last = rows.aggregate(n=Max("attempt"))["n"]
    if last is None:
        raise NotFound("this endpoint was never sent that event")
    attempt = last + 1
    insert_rows([Outbox(
        id=new_id("whd", seed=f"{endpoint.id}|{event_id}|{attempt}", length=24), domain=endpoint.id,
        brand_id=endpoint.brand_id, key=key, attempt=attempt, seq=0, transport=TRANSPORT,
        payload={"endpoint": endpoint.id, "event": event_id, "domain": event["domain"], "type": event["type"],
                 "resend": True},
        status="pending", error="", claimed_by="", tries=0, created_at=wall_now())])
    return "It is sent again, once, with the same Idempotency-Key."


# -- the fan-out: an event written is a delivery for each endpoint that wants it, in its transaction --------
def fan_out(events: Sequence[Sequence[Any]], *,
            endpoints: Iterable[tuple[str, str, bool, list[str]]] | None = None) -> int:
    """Deliveries for ``events`` (each ``(id, domain, brand id, type, …)``, just written in this transaction):
    one outbox row per event and enabled endpoint of its brand and mode that wants its type. One indexed
    read of the brands' enabled endpoints; a brand with none costs nothing more. ``endpoints`` is that read
    made already, in this transaction after the events were written (id, brand id, livemode, enabled_events;
    the tick's small batches read it in their writes' round trip). Returns the rows written."""
    brands = {e[2] for e in events if e[2]}
    if not brands:
        return 0
    hearing: dict[tuple[str, bool], list[tuple[str, list[str]]]] = {}
    if endpoints is None:
        endpoints = (WebhookEndpoint.objects.filter(brand_id__in=brands, status="enabled")
                     .values_list("id", "brand_id", "livemode", "enabled_events"))
    for ep_id, brand_id, live, patterns in endpoints:
        hearing.setdefault((brand_id, live), []).append((ep_id, patterns))
    if not hearing:
        return 0
    pairs = [(e, ep_id) for e in events if e[2]
             for ep_id, patterns in hearing.get((e[2], is_live(e[1])), ()) if wants(patterns, e[3])]
    if not pairs:
        return 0
    ids = list({e[0] for e, _ in pairs})
    seqs: dict[str, int] = {}
    for at in range(0, len(ids), 500):  # SQLite caps a statement's variables
        seqs.update(Event.objects.filter(id__in=ids[at:at + 500]).values_list("id", "seq"))
    now = wall_now()
    brand_of = {ep_id: e[2] for e, ep_id in pairs}
    insert_rows([Outbox(
        id=new_id("whd", seed=f"{ep_id}|{e[0]}|1", length=24), domain=ep_id, brand_id=brand_of[ep_id],
        key=delivery_key(seqs[e[0]], e[0]), attempt=1, seq=0, transport=TRANSPORT,
        payload={"endpoint": ep_id, "event": e[0], "domain": e[1], "type": e[3]},
        status="pending", error="", claimed_by="", tries=0, created_at=now) for e, ep_id in pairs])
    return len(pairs)


def _event_saved(sender: type[Event], instance: Event, created: bool, raw: bool = False, **kwargs: Any) -> None:
    # Every Event.objects.create (and save of a new event) outside the tick's batch writes, in its transaction.
    if created and not raw:
        fan_out([(instance.id, instance.domain, instance.brand_id, instance.type)])


def _test_clock_deleted(sender: object, clock: TestClock, **kwargs: Any) -> None:
    """A deleted test clock's deliveries not yet made are voided, as its other sends are; its
    test_clock.deleted itself, written just before, is still delivered (as Stripe sends it)."""
    (Outbox.objects.filter(transport=TRANSPORT, status__in=OWED, payload__domain=clock.id)
     .exclude(payload__type="test_clock.deleted")
     .update(status="voided", error="test_clock.deleted", lease_until=None, next_try_at=None))


# -- sending ----------------------------------------------------------------------------------------------
class DeliveryFailed(Exception):
    """The endpoint did not answer 2xx: logged, retried after a backoff within the window."""


def _cfg(name: str, default: float) -> float:
    return float(settings.KEEPING_TIME.get(name, default))


def _logged(submission_id: str) -> dict[str, Any] | None:
    """The 2xx a submission got, if one is logged: then it arrived, and is never sent again."""
    row = (WebhookAttempt.objects.filter(submission=submission_id, status__gte=200, status__lt=300)
           .values("status", "attempt").first())
    return None if row is None else {"status": row["status"], "attempt": row["attempt"], "logged": True}


def body_of(event: Event) -> bytes:
    """What a delivery POSTs: the event exactly as GET /events/<id> answers it."""
    return json.dumps(event_json(event), separators=(",", ":"), ensure_ascii=False, default=str).encode()


class _Prepared(threading.local):
    """What a claimed set's sends read, loaded for the whole set (outbox.deliver calls ``prepare``): the 2xx
    already logged, the endpoints, the events and each (endpoint, event)'s tries so far. Per thread: a sender
    is one thread, and another thread's set is its own."""

    def __init__(self) -> None:
        self.clear()

    def clear(self) -> None:
        self.sids: set[str] = set()
        self.logged: dict[str, dict[str, Any]] = {}
        self.endpoints: dict[str, WebhookEndpoint] = {}
        self.events: dict[str, Event] = {}
        self.tries: dict[tuple[str, str], int] = {}
        # The set's 2xx tries not yet logged: each is written with its receipt (``record_receipt``), by this
        # thread, the one that sent it.
        self.unlogged: dict[str, webhook_sql.Attempt] = {}


class WebhookTransport:
    """POST an event to its endpoint: signed (``Keeping-Time-Signature``, timers.signing.sign), with the event
    id as ``Idempotency-Key``. A failed try is logged right after it; one that got its 2xx is logged with its
    receipt, in the outbox's one statement (``record_receipt``), so a kill -9 between POST and that write leaves
    neither, and the delivery is in doubt with no 2xx logged: sent again once.

    A claimed set is read in four queries before its first send (``prepare``), not four a send: what a set
    sends is this sender's alone while it holds the claim, so nothing read ahead changes under it but the
    log it writes itself (kept up to date here)."""

    # At least once, with the event id as Idempotency-Key: a receipt lost with the database server's crash
    # means one send again, which the contract allows (timers/sql/outbox.py, record).
    relaxed_receipts = True

    def __init__(self) -> None:
        self._set = _Prepared()

    def prepare(self, sends: Sequence[tuple[str, dict[str, Any]]]) -> None:
        p = self._set
        p.clear()
        p.sids = {sid for sid, _ in sends}
        endpoint_ids = {payload["endpoint"] for _, payload in sends}
        event_ids = {payload["event"] for _, payload in sends}
        for sid, status, attempt in (WebhookAttempt.objects.filter(submission__in=p.sids, status__gte=200,
                                                                   status__lt=300)
                                     .values_list("submission", "status", "attempt")):
            p.logged[sid] = {"status": status, "attempt": attempt, "logged": True}
        p.endpoints = WebhookEndpoint.objects.in_bulk(endpoint_ids)
        p.events = {e.id: e for e in Event.objects.filter(id__in=event_ids)}
        for ep_id, ev_id, n in (WebhookAttempt.objects.filter(endpoint_id__in=endpoint_ids, event_id__in=event_ids)
                                .values("endpoint_id", "event_id").annotate(n=Count("id"))
                                .values_list("endpoint_id", "event_id", "n")):
            p.tries[(ep_id, ev_id)] = n

    def _read(self, submission_id: str, payload: dict[str, Any]) -> tuple[dict[str, Any] | None, WebhookEndpoint | None,
                                                                Event | None, int]:
        p = self._set
        if submission_id in p.sids:
            key = (payload["endpoint"], payload["event"])
            return (p.logged.get(submission_id), p.endpoints.get(payload["endpoint"]),
                    p.events.get(payload["event"]), p.tries.get(key, 0))
        # A send outside a prepared set (a caller of its own): read it here.
        endpoint = WebhookEndpoint.objects.filter(pk=payload["endpoint"]).first()
        event = Event.objects.filter(id=payload["event"]).first()
        tries = (WebhookAttempt.objects.filter(endpoint=endpoint, event_id=event.id).count()
                 if endpoint is not None and event is not None else 0)
        return _logged(submission_id), endpoint, event, tries

    def send(self, submission_id: str, payload: dict[str, Any]) -> dict[str, Any]:
        logged, endpoint, event, tries = self._read(submission_id, payload)
        if logged is not None:  # it arrived before this sender's predecessor could record so
            return logged
        if endpoint is None:
            raise transports.PermanentFailure("the endpoint was deleted")
        if event is None:
            raise transports.PermanentFailure("the event is no longer on the record")
        body = body_of(event)
        attempt = tries + 1
        if submission_id in self._set.sids:
            self._set.tries[(endpoint.id, event.id)] = attempt  # this try, logged below
        at, started = wall_now(), time.monotonic()
        status, answer, error = None, "", ""
        headers = {"Content-Type": "application/json", "User-Agent": USER_AGENT, "Idempotency-Key": event.id,
                   SIGNATURE_HEADER: sign(endpoint.secret, body, at=int(wall_now().timestamp()))}
        try:
            # A 3xx is a failed delivery, as Stripe counts it: the event is not followed to another URL.
            got = send("POST", endpoint.url, body=body, headers=headers, redirects=False, keep=ANSWER_KEPT * 4,
                       timeout=_cfg("WEBHOOK_TIMEOUT_SECONDS", 10))
            status, answer = got.status, _text(got.body)
        except targets.TargetRefused as exc:  # nothing was connected
            error = f"refused: {exc.reason}"
        except (OSError, ValueError, http.client.HTTPException) as exc:
            error = f"{type(exc).__name__}: {getattr(exc, 'reason', exc)}"
        logged_try: webhook_sql.Attempt = (
            endpoint.id, event.id, event.type, submission_id, attempt, at, status, answer.replace("\x00", ""),
            error[:500], max(0, round((time.monotonic() - started) * 1000)))
        if status is not None and 200 <= status < 300:
            if submission_id in self._set.sids:
                self._set.unlogged[submission_id] = logged_try  # written with the receipt (record_receipt)
            else:
                webhook_sql.log_attempt(logged_try)
            return {"status": status, "attempt": attempt}
        webhook_sql.log_attempt(logged_try)
        raise DeliveryFailed(f"HTTP {status}: {answer[:200]}" if status is not None else error)

    def record_receipt(self, submission_id: str, receipt: dict[str, Any], *, relaxed: bool) -> None:
        """The outbox's write of a receipt (timers/outbox.py): with the try's log row, in one statement; a
        delivery confirmed from the log (in doubt) has its receipt alone."""
        logged_try = self._set.unlogged.pop(submission_id, None)
        if logged_try is None:
            outbox_sql.record([(submission_id, receipt)], relaxed=relaxed)
        else:
            webhook_sql.logged_receipt(logged_try, receipt, relaxed=relaxed)

    def lookup(self, submission_id: str) -> dict[str, Any] | None:
        # An endpoint cannot be asked; the log can: a 2xx logged means it arrived.
        return _logged(submission_id)

    def retry_after(self, payload: dict[str, Any], tries: int, created_at: datetime) -> timedelta | None:
        """The backoff before try ``tries + 1``, or None: failed for good. A resend is tried once; an event
        is retried until WEBHOOK_RETRY_WINDOW_SECONDS after it was written, its last try at that end."""
        if payload.get("resend"):
            return None
        now = wall_now()
        end = created_at + timedelta(seconds=_cfg("WEBHOOK_RETRY_WINDOW_SECONDS", 3 * 86400))
        if now >= end:
            return None
        base, cap = _cfg("WEBHOOK_RETRY_BASE_SECONDS", 60), _cfg("WEBHOOK_RETRY_CAP_SECONDS", 6 * 3600)
        return min(timedelta(seconds=min(cap, base * 2 ** min(tries - 1, 40))), end - now)


def _text(raw: bytes) -> str:
    return raw.decode("utf-8", "replace")[:ANSWER_KEPT]


def held(domain: str) -> bool:
    """An endpoint's deliveries wait while it is disabled (the outbox claims none of them)."""
    return WebhookEndpoint.objects.filter(pk=domain, status=WebhookEndpoint.Status.DISABLED).exists()


def owed_summary(endpoint: WebhookEndpoint) -> dict[str, Any]:
    """What the endpoint is still owed: how many deliveries, and when the next try is (None: as soon as a
    sender gets to it)."""
    qs = Outbox.objects.filter(domain=endpoint.id, transport=TRANSPORT, status__in=OWED)
    head = qs.order_by("key", "attempt", "seq").values("next_try_at", "error", "tries").first()
    return {"owed": qs.count(), "next_try_at": head["next_try_at"] if head else None,
            "last_error": head["error"] if head else "", "tries": head["tries"] if head else 0}


def register() -> None:
    """Called once per process (timers.apps): the transport, its ordered domains, and the fan-out's hooks."""
    transports.register(TRANSPORT, WebhookTransport())
    outbox.order_domains(DOMAIN_PREFIX, transport=TRANSPORT, held=held)
    post_save.connect(_event_saved, sender=Event, dispatch_uid="timers.webhooks.fan_out")
    test_clock_deleted.connect(_test_clock_deleted, dispatch_uid="timers.webhooks.void")


__all__ = ["EVENT_FAMILIES", "TRANSPORT", "WebhookTransport", "check_events", "check_url", "delivery_resend",
           "endpoint_create", "endpoint_delete", "endpoint_json", "endpoint_update", "fan_out", "get_endpoint",
           "wants"]
