"""Idempotency-Key on every POST, with Stripe's rules.

The first answer under a key is kept for 24 hours and replayed for the same request, with
``Idempotent-Replayed: true``; the same key with another request (another API key, method, path or parameters)
is ``400 idempotency_key_in_use``; the key sent again while its first request is still running is
``409 idempotency_key_in_progress``. Keys are the brand's and its key's mode's: a live key and a test key
never see each other's answers, and an answer is replayed only to the API key that made it (another key of
the brand gets 400 idempotency_key_in_use, never the first key's answer). Parameters are compared as
parameters: the same JSON with other whitespace or its keys in another order, or the same form fields in
another order, is the same request.

What is kept and when: a request runs inside one transaction that also writes its answer, so an answer is
kept exactly when its effects are (a request killed mid-way leaves neither, and its key is free again). Only
what executed is kept: a request refused before it did anything (its body did not parse or validate, an
unknown parameter: a 400; a 401, a 413, a 415, a 429) or refused for a moment's conflict (409
test_clock_advancing, idempotency_key_in_progress) keeps nothing, so the caller can send it again under the
same key, fixed or later, as Stripe allows; any other answer below 500 is kept, so a retry of a refused create
(409, 403, 404) hears the same refusal. A 5xx keeps nothing. A replay counts against the key's rate limit as
any request does. A secret an answer shows once (a webhook endpoint's signing secret, a portal link) is
never kept: its replay answers the object without it and names it in ``shown_once``. Concurrency:
PostgreSQL's transaction-scoped advisory lock on the key; the second request does not wait for the first, it
is told to retry.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable, Iterable
from datetime import timedelta
from typing import TYPE_CHECKING, Any, TypeVar
from urllib.parse import parse_qsl

from django.db import IntegrityError, transaction
from django.http import HttpRequest, HttpResponse, JsonResponse

from ..clock import wall_now
from ..models import Brand, IdempotencyKey
from ..sql import requests
from .errors import error_body

if TYPE_CHECKING:
    from drf_spectacular.generators import SchemaGenerator
    from rest_framework.request import Request


_R = TypeVar("_R", bound=HttpResponse)
HEADER = "HTTP_IDEMPOTENCY_KEY"
KEPT = timedelta(hours=24)
# Printable ASCII, as Stripe's keys are (a V4 UUID, say); at most 255 characters.
_KEY = re.compile(r"^[\x21-\x7e]{1,255}$")
# Refused before anything ran: nothing is kept, and the same key may be sent again with the body fixed.
_NOT_KEPT = (400, 401, 413, 415, 429)
# Refused for a moment's conflict (the clock is advancing; it will be ready): the retry should run.
_NOT_KEPT_CODES = frozenset({"test_clock_advancing", "idempotency_key_in_progress"})
_PRUNE = 100  # expired answers removed per request that sends a key: the table stays a day deep


def _refuse(code: str, message: str, status: int) -> JsonResponse:
    response = JsonResponse(error_body(code, message, param="Idempotency-Key", status=status), status=status)
    response["Cache-Control"] = "no-store"
    return response


def _replay(kept: IdempotencyKey, key: str) -> HttpResponse:
    response = HttpResponse(bytes(kept.body), status=kept.status, content_type=kept.content_type)
    response["Idempotent-Replayed"] = "true"
    response["Idempotency-Key"] = key
    return response


def _canonical_body(request: HttpRequest) -> bytes:
    """The body's parameters in one spelling: JSON re-written with sorted keys and no spaces, form fields
    sorted; a body that does not parse as its type says (it is refused before it runs) is compared as bytes."""
    body = request.body
    media = (request.content_type or "").lower()
    if not body.strip():
        return b"none"
    if media == "application/json":
        try:
            data = json.loads(body)
        except ValueError:
            return b"raw:" + body
        return b"json:" + json.dumps(data, sort_keys=True, separators=(",", ":")).encode()
    if media == "application/x-www-form-urlencoded":
        try:
            pairs = sorted(parse_qsl(body.decode("utf-8"), keep_blank_values=True))
        except (UnicodeDecodeError, ValueError):
            return b"raw:" + body
        return b"form:" + json.dumps(pairs).encode()
    return b"raw:" + body


def _digest(request: HttpRequest, api_key: object) -> str:
    """The request as parameters: the API key that sends it, its method, its path, its query and body
    parameters in one spelling each."""
    h = hashlib.sha256()
    assert request.method is not None  # a request being served has its method (the stubs allow a bare one)
    query = json.dumps(sorted(parse_qsl(request.META.get("QUERY_STRING", ""), keep_blank_values=True)))
    for part in (str(api_key).encode(), request.method.encode(), request.path.encode(), query.encode(),
                 _canonical_body(request)):
        h.update(len(part).to_bytes(8, "big"))
        h.update(part)
    return h.hexdigest()


def shown_once(response: _R, *fields: str) -> _R:
    """Mark the top-level fields of a JSON answer that are secrets shown once: the kept answer leaves them
    out, so a replay never shows them again (and names them in ``shown_once``)."""
    response.kt_shown_once = fields  # type: ignore[attr-defined]  # read back by _kept_row
    return response


def _withheld(content: bytes, fields: Iterable[str]) -> bytes:
    answer = json.loads(content)
    for name in fields:
        answer.pop(name, None)
    answer["shown_once"] = sorted(fields)
    return json.dumps(answer, separators=(",", ":")).encode()


def _error_code(response: HttpResponse) -> str | None:
    try:
        code = json.loads(response.content)["error"]["code"]
    except (ValueError, KeyError, TypeError):
        return None
    return code if isinstance(code, str) else None


def _try_lock(brand: Brand, livemode: bool, key: str) -> bool:
    """Hold the key for this transaction; False if another request holds it. SQLite has one writer at a time,
    so a second request waits for the first's transaction there instead."""
    return requests.hold_key(f"idempotency|{brand.pk}|{int(livemode)}|{key}")


def _kept_row(*, brand: Brand, livemode: bool, key: str, request: HttpRequest, digest: str,
              response: HttpResponse) -> IdempotencyKey:
    assert request.method is not None  # as in _digest
    withheld = getattr(response, "kt_shown_once", ())
    return IdempotencyKey(brand=brand, livemode=livemode, key=key, request_digest=digest, method=request.method,
                          path=request.get_full_path()[:2000], status=response.status_code,
                          content_type=response.get("Content-Type", "application/json")[:100],
                          body=_withheld(response.content, withheld) if withheld else bytes(response.content),
                          created_at=wall_now())


def run(*, request: HttpRequest, brand: Brand, livemode: bool, key: str,
        call: Callable[[], HttpResponse]) -> HttpResponse:
    """Answer a POST that carries an Idempotency-Key: replay its kept answer, refuse a clash, or run it."""
    if not _KEY.match(key):
        return _refuse("invalid_idempotency_key", "an Idempotency-Key is 1 to 255 printable ASCII characters, "
                       "e.g. a V4 UUID", 400)
    try:
        digest = _digest(request, getattr(brand, "api_key_id", None))
    except Exception:  # the body could not be read (too large): the view answers that, and nothing is kept
        return call()
    now = wall_now()
    expired = IdempotencyKey.objects.filter(created_at__lt=now - KEPT)
    old = list(expired.order_by("created_at").values_list("pk", flat=True)[:_PRUNE])
    if old:
        IdempotencyKey.objects.filter(pk__in=old).delete()
    save_after = None
    with transaction.atomic():
        if not _try_lock(brand, livemode, key):
            return _refuse("idempotency_key_in_progress", "a request with this Idempotency-Key is still running; "
                           "retry when it has answered", 409)
        kept = (IdempotencyKey.objects.filter(brand=brand, livemode=livemode, key=key, created_at__gte=now - KEPT)
                .first())
        if kept is not None:
            if kept.request_digest != digest:
                return _refuse("idempotency_key_in_use", f"this Idempotency-Key was used for another request "
                               f"({kept.method} {kept.path}: another API key, path or parameters); use a new key "
                               "for a new request", 400)
            return _replay(kept, key)
        response = call()
        if hasattr(response, "render") and not getattr(response, "is_rendered", True):
            response.render()
        response["Idempotency-Key"] = key
        if response.status_code >= 400:
            # A refusal writes nothing, whatever the view did before it refused; its answer is kept on its own.
            transaction.set_rollback(True)
            if (response.status_code < 500 and response.status_code not in _NOT_KEPT
                    and _error_code(response) not in _NOT_KEPT_CODES):
                save_after = _kept_row(brand=brand, livemode=livemode, key=key, request=request, digest=digest,
                                       response=response)
        else:
            IdempotencyKey.objects.filter(brand=brand, livemode=livemode, key=key).delete()  # an expired one
            _kept_row(brand=brand, livemode=livemode, key=key, request=request, digest=digest,
                      response=response).save(force_insert=True)
    if save_after is not None:
        try:
            with transaction.atomic():
                IdempotencyKey.objects.filter(brand=brand, livemode=livemode, key=key,
                                              created_at__lt=now - KEPT).delete()
                save_after.save(force_insert=True)
        except IntegrityError:
            pass  # a retry that came in between kept its own (the same refusal, or what changed since)
    return response


def openapi_header(result: dict[str, Any], generator: SchemaGenerator, request: Request | None,
                public: bool) -> dict[str, Any]:
    """drf-spectacular's postprocessing hook: every POST takes an optional Idempotency-Key header."""
    param = {"in": "header", "name": "Idempotency-Key", "required": False,
             "description": "Replays the first answer to the same request for 24 hours (Idempotent-Replayed: true); "
                            "another request under the key is 400 idempotency_key_in_use, one sent while the first "
                            "still runs 409 idempotency_key_in_progress",
             "schema": {"type": "string", "minLength": 1, "maxLength": 255, "pattern": "^[\\x21-\\x7e]+$"}}
    error = {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}
    said = {"400": "invalid_idempotency_key, idempotency_key_in_use (the key was sent with another request)",
            "409": "idempotency_key_in_progress (the key's first request is still running)"}
    for operations in result.get("paths", {}).values():
        post = operations.get("post")
        if post is None:
            continue
        if not any(p.get("name") == "Idempotency-Key" for p in post.get("parameters", [])):
            post.setdefault("parameters", []).append(param)
        # Any POST may answer these for its key, whatever else it answers.
        responses = post.setdefault("responses", {})
        for status, description in said.items():
            responses.setdefault(status, {"description": description, "content": error})
    return result
