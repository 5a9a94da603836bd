"""Every API error is one JSON shape: {"error": {"type", "code", "message"[, "param"]}} with its status.

``exception_handler`` is DRF's EXCEPTION_HANDLER; ``page_not_found`` and ``server_error`` are the same
shape for Django's handler404/handler500 (a URL no view matches never reaches DRF).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from functools import wraps
from typing import Any

from django.conf import settings
from django.core.exceptions import PermissionDenied as DjangoPermissionDenied
from django.core.exceptions import RequestDataTooBig, SuspiciousOperation, TooManyFieldsSent, TooManyFilesSent
from django.http import Http404, HttpRequest, JsonResponse
from django.http.response import HttpResponseBase
from django.views.decorators.csrf import csrf_exempt
from rest_framework import exceptions as drf
from rest_framework.response import Response
from rest_framework.views import set_rollback

from ..errors import KeepingTimeError, Refused
from ..sql.sessions import database_busy
from .throttles import retry_after

log = logging.getLogger(__name__)

SAFE_METHODS = ("GET", "HEAD")
BUSY_RETRY_AFTER = 1  # seconds: a lock SQLite could not take is another writer's, held for a batch
NO_KEY = "You did not provide an API key. Send it as 'Authorization: Bearer sk_test_…'."


def error_body(code: str, message: str, *, param: str | None = None, type_: str | None = None,
               status: int = 400) -> dict[str, Any]:
    err: dict[str, Any] = {"type": type_ or ("api_error" if status >= 500 else "invalid_request_error"), "code": code,
           "message": message}
    if param:
        err["param"] = param
    return {"error": err}


def _first_error(detail: Any, path: str = "") -> tuple[str | None, str]:
    """The first message in a ValidationError's detail, and the field it is about (``a.b`` when nested)."""
    if isinstance(detail, dict):
        for field, sub in detail.items():
            name = path if field in ("non_field_errors", "__all__") else (f"{path}.{field}" if path else str(field))
            return _first_error(sub, name)
        return (path or None), "invalid request"
    if isinstance(detail, list):
        for i, sub in enumerate(detail):
            if isinstance(sub, dict):  # a list of nested objects: name the index
                return _first_error(sub, f"{path}[{i}]")
            return _first_error(sub, path)
        return (path or None), "invalid request"
    return (path or None), detail


# Codes a field's ValidationError may carry to the answer (NameField, InstantField, SpanField); any other is
# DRF's own (invalid, required, max_length …), answered as invalid_request.
# invalid_amount, invalid_currency: services.amounts; invalid_dst_rule: a calendar's DST rules (calendars_api).
FIELD_CODES = frozenset({"invalid_name", "invalid_text", "invalid_time", "invalid_span", "invalid_amount",
                         "invalid_currency", "invalid_dst_rule"})


def _validation(exc: drf.ValidationError) -> tuple[str, str, str | None]:
    param, detail = _first_error(exc.detail)
    code = getattr(detail, "code", None)
    message = str(detail)
    if param:
        message = f"{param}: {message}"
    return (code if code in FIELD_CODES else "invalid_request"), message, param


def too_large(exc: Exception) -> tuple[int, str, str] | None:
    """The status, code and message for a body Django refuses to read (over DATA_UPLOAD_MAX_MEMORY_SIZE, or
    too many form fields), or None for any other exception."""
    if isinstance(exc, RequestDataTooBig):
        limit = settings.DATA_UPLOAD_MAX_MEMORY_SIZE
        return 413, "request_too_large", f"the body is larger than {limit} bytes, the most a request may send"
    if isinstance(exc, TooManyFieldsSent | TooManyFilesSent):
        return 413, "request_too_large", "the body has more fields than a request may send"
    return None


def exception_handler(exc: Exception, context: dict[str, Any]) -> Response | None:
    headers: dict[str, str] = {}
    param = None
    refused_body = too_large(exc)
    if refused_body is not None:
        status, code, message = refused_body
    elif isinstance(exc, KeepingTimeError):
        status, code, message = exc.status, exc.code, exc.message
        param = getattr(exc, "param", None)
    elif isinstance(exc, Refused):  # the gate refused the proposal: nothing it proposed landed
        status, code, message = 409, exc.code, exc.message or f"refused: {exc.code}"
    elif isinstance(exc, drf.ValidationError):
        status = 400
        code, message, param = _validation(exc)
    elif isinstance(exc, drf.ParseError):
        status, code, message = 400, "invalid_json", str(exc.detail)
    elif isinstance(exc, drf.NotAuthenticated | drf.AuthenticationFailed):
        status, code = 401, "invalid_api_key"
        message = NO_KEY if isinstance(exc, drf.NotAuthenticated) else str(exc.detail)
        auth_header = getattr(exc, "auth_header", None)
        headers["WWW-Authenticate"] = auth_header or 'Bearer realm="api"'
    elif isinstance(exc, Http404 | drf.NotFound):
        status, code = 404, "resource_missing"
        message = str(exc) if isinstance(exc, Http404) and str(exc) else "no such resource"
    elif isinstance(exc, drf.MethodNotAllowed):
        status, code, message = 405, "method_not_allowed", str(exc.detail)
        view = context.get("view")
        if view is not None:
            headers["Allow"] = ", ".join(view.allowed_methods)
    elif isinstance(exc, DjangoPermissionDenied | drf.PermissionDenied):
        status, code, message = 403, "permission_denied", str(getattr(exc, "detail", "") or "permission denied")
    elif isinstance(exc, drf.Throttled):  # timers.api.throttles: Stripe's 429, with the seconds to wait
        status, code = 429, "rate_limited"
        seconds = retry_after(exc.wait)  # type: ignore[attr-defined]  # DRF sets it in __init__; the stubs leave it out
        message = _rate_limited_message(seconds)
        headers["Retry-After"] = str(seconds)
    elif isinstance(exc, drf.APIException):
        status, code, message = exc.status_code, exc.default_code, str(exc.detail)
    elif database_busy(exc):
        status, code = 503, "database_busy"
        message = f"the database is busy with another writer; retry after {BUSY_RETRY_AFTER} second"
        headers["Retry-After"] = str(BUSY_RETRY_AFTER)
    else:
        # A bug, never bad input: log it and answer in the same shape (DEBUG re-raises for the page).
        if settings.DEBUG:
            return None
        log.exception("unhandled error in %s", context.get("view").__class__.__name__, exc_info=exc)
        status, code, message = 500, "internal_error", "an internal error occurred; it has been logged"
    set_rollback()
    return Response(error_body(code, message, param=param, status=status), status=status, headers=headers)


def _rate_limited_message(seconds: int) -> str:
    return f"too many requests with this API key; retry after {seconds} second{'s' if seconds != 1 else ''}"


def rate_limited(wait: float | None) -> JsonResponse:
    """The 429 the throttle's exception answers, for a request refused before DRF's view runs (a replay)."""
    seconds = retry_after(wait)
    response = JsonResponse(error_body("rate_limited", _rate_limited_message(seconds), status=429), status=429)
    response["Retry-After"] = str(seconds)
    return response


# -- Django's handlers, for URLs no API view matches (wire them in keeping_time/urls.py) ---------------
def page_not_found(request: HttpRequest, exception: Exception | None = None) -> JsonResponse:
    return JsonResponse(error_body("resource_missing", f"no such URL: {request.method} {request.path}",
                                   status=404), status=404)


def bad_request(request: HttpRequest, exception: Exception | None = None) -> JsonResponse:
    """handler400: a request Django refused before any view (a body too large for the CSRF check to read,
    a bad Host) in the API's shape; a body too large is a 413 as in the API's views."""
    refused_body = too_large(exception) if exception is not None else None
    if refused_body is not None:
        status, code, message = refused_body
    else:
        status, code = 400, "invalid_request"
        # The exception's class only: its text can echo configuration (ALLOWED_HOSTS hints).
        message = "the request was refused" + (f" ({type(exception).__name__})"
                                               if isinstance(exception, SuspiciousOperation) else "")
    return JsonResponse(error_body(code, message, status=status), status=status)


def method_not_allowed(request: HttpRequest, allowed: list[str]) -> JsonResponse:
    """A 405 in the API's shape for the views outside DRF (the feed, the portal pages), with Allow."""
    response = JsonResponse(error_body("method_not_allowed", f"method {request.method!r} is not allowed here; "
                                       f"allowed: {', '.join(allowed)}", status=405), status=405)
    response["Allow"] = ", ".join(allowed)
    return response


def read_only(view: Callable[..., HttpResponseBase]) -> Callable[..., HttpResponseBase]:
    """For a function view outside DRF that only reads (GET and HEAD): any other method is a 405 in the API's
    shape. CSRF is off for it, since it changes nothing: otherwise Django's check answers a POST with an HTML
    403 before the view can say 405."""

    @wraps(view)
    def wrapper(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponseBase:
        if request.method not in SAFE_METHODS:
            return method_not_allowed(request, list(SAFE_METHODS))
        return view(request, *args, **kwargs)

    return csrf_exempt(wrapper)


def server_error(request: HttpRequest) -> JsonResponse:
    return JsonResponse(error_body("internal_error", "an internal error occurred; it has been logged",
                                   status=500), status=500)
