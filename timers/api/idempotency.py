"""Idempotency-Key on every POST, with Stripe's rules.

The first answer under a key is kept for 24 hours and replayed for the same key and body, with
``Idempotent-Replayed: true``; the same key with another body (or another method or path) is
``400 idempotency_key_in_use``; the key sent again while its first request is still running is
``409 idempotency_key_in_progress``. Keys are the brand's and its key's mode's: a live key and a test key
never see each other's answers.

What is kept and when: a request runs inside one transaction that also writes its answer, so an answer is
kept exactly when its effects are (a request killed mid-way leaves neither, and its key is free again). A
request refused before it did anything (its body did not parse or validate: a 400, a 401, a 413, a 415)
keeps nothing, so the caller can fix it and send it again under the same key, as Stripe allows; any other
answer below 500 is kept, so a retry of a refused create (409, 403, 404) hears the same refusal. A 5xx keeps
nothing. Concurrency: PostgreSQL's transaction-scoped advisory lock on the key; the second request does not
wait for the first, it is told to retry.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable
from datetime import timedelta
from typing import TYPE_CHECKING, Any

from django.db import IntegrityError, transaction
from django.http import HttpRequest, HttpResponse, JsonResponse

from ..clock import wall_now
from ..models import Brand, IdempotencyKey
from ..sql import requests
from .errors import error_body

if TYPE_CHECKING:
    from drf_spectacular.generators import SchemaGenerator
    from rest_framework.request import Request


HEADER = "HTTP_IDEMPOTENCY_KEY"
KEPT = timedelta(hours=24)
# Printable ASCII, as Stripe's keys are (a V4 UUID, say); at most 255 characters.
_KEY = re.compile(r"^[\x21-\x7e]{1,255}$")
# Refused before anything ran: nothing is kept, and the same key may be sent again with the body fixed.
_NOT_KEPT = (400, 401, 413, 415, 429)
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


def _digest(request: HttpRequest) -> str:
    h = hashlib.sha256()
    assert request.method is not None  # a request being served has its method (the stubs allow a bare one)
    for part in (request.method.encode(), request.get_full_path().encode(), request.body):
        h.update(len(part).to_bytes(8, "big"))
        h.update(part)
    return h.hexdigest()


def _try_lock(brand: Brand, livemode: bool, key: str) -> bool:
    """Hold the key for this transaction; False if another request holds it. SQLite has one writer at a time,
    so a second request waits for the first's transaction there instead."""
    return requests.hold_key(f"idempotency|{brand.pk}|{int(livemode)}|{key}")


def _kept_row(*, brand: Brand, livemode: bool, key: str, request: HttpRequest, digest: str,
              response: HttpResponse) -> IdempotencyKey:
    assert request.method is not None  # as in _digest
    return IdempotencyKey(brand=brand, livemode=livemode, key=key, request_digest=digest, method=request.method,
                          path=request.get_full_path()[:2000], status=response.status_code,
                          content_type=response.get("Content-Type", "application/json")[:100],
                          body=bytes(response.content), created_at=wall_now())


def run(*, request: HttpRequest, brand: Brand, livemode: bool, key: str,
        call: Callable[[], HttpResponse]) -> HttpResponse:
    """Answer a POST that carries an Idempotency-Key: replay its kept answer, refuse a clash, or run it."""
    if not _KEY.match(key):
        return _refuse("invalid_idempotency_key", "an Idempotency-Key is 1 to 255 printable ASCII characters, "
                       "e.g. a V4 UUID", 400)
    try:
        digest = _digest(request)
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
                               f"({kept.method} {kept.path}, another body); use a new key for a new request",
                               400)
            return _replay(kept, key)
        response = call()
        if hasattr(response, "render") and not getattr(response, "is_rendered", True):
            response.render()
        response["Idempotency-Key"] = key
        if response.status_code >= 400:
            # A refusal writes nothing, whatever the view did before it refused; its answer is kept on its own.
            transaction.set_rollback(True)
            if response.status_code < 500 and response.status_code not in _NOT_KEPT:
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
