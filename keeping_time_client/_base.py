"""The hand-written half of the client: the HTTP call, the key, and the API's errors as exceptions.

The other half, one method per API operation, is generated from /openapi.json (``_generated.py``): it only
names paths, parameters and types, and every call goes through ``KeepingTimeBase.request`` here.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterator
from datetime import UTC, date, datetime
from decimal import Decimal
from typing import Any, Final, Self
from urllib.parse import quote

import httpx

DEFAULT_BASE_URL: Final = "http://127.0.0.1:8000"


class Omit:
    """The default of every optional parameter: "not sent", which is not the same as sending null."""

    _instance: Omit | None = None

    def __new__(cls) -> Omit:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "OMIT"

    def __bool__(self) -> bool:
        return False


OMIT: Final = Omit()


# -- errors --------------------------------------------------------------------------------------------
class KeepingTimeError(Exception):
    """An answer in the API's error shape, {"error": {"type", "code", "message", "param"}}, raised.

    ``code`` is the API's (``invalid_request``, ``resource_missing``, ``test_clock_backward`` …): branch on
    it, never on the message. ``status`` is the HTTP status (0 when no answer came)."""

    def __init__(self, message: str, *, code: str, status: int = 0, param: str | None = None,
                 type: str | None = None, body: Any = None, headers: dict[str, str] | None = None):
        super().__init__(f"{status} {code}: {message}" if status else f"{code}: {message}")
        self.message = message
        self.code = code
        self.status = status
        self.param = param
        self.type = type
        self.body = body
        self.headers = headers or {}


class InvalidRequestError(KeepingTimeError):
    """400, 405, 413, 415: the request itself is wrong (a field, the JSON, the method)."""


class AuthenticationError(KeepingTimeError):
    """401 invalid_api_key: no key, or not a valid one."""


class PermissionDeniedError(KeepingTimeError):
    """403: the key's mode or the member may not do this (live_mode_only, test_mode_only, not_in_pool …)."""


class NotFoundError(KeepingTimeError):
    """404 resource_missing (and unknown_policy, unknown_step …): not this brand's, not this mode's, or none."""


class ConflictError(KeepingTimeError):
    """409: the state refuses it (test_clock_backward, timer_exists, a gate refusal such as needs_grant …)."""


class RateLimitError(KeepingTimeError):
    """429 rate_limited; ``retry_after`` is the seconds the API asked to wait."""

    @property
    def retry_after(self) -> int | None:
        value = self.headers.get("retry-after")
        return int(value) if value and value.isdigit() else None


class APIError(KeepingTimeError):
    """5xx, or an answer that is not the API's JSON."""


class APIConnectionError(KeepingTimeError):
    """No answer: the server could not be reached, or it timed out."""


_BY_STATUS: dict[int, type[KeepingTimeError]] = {401: AuthenticationError, 403: PermissionDeniedError,
                                                 404: NotFoundError, 409: ConflictError, 429: RateLimitError}


def error_from(response: httpx.Response) -> KeepingTimeError:
    """The exception for a non-2xx answer, carrying the API's code."""
    headers = {k.lower(): v for k, v in response.headers.items()}
    try:
        body = response.json()
        err = body["error"]
        code, message = str(err["code"]), str(err.get("message", ""))
    except (ValueError, KeyError, TypeError):
        # Not the API's shape (a proxy's page, a crash before the API): say so with what came back.
        return APIError(f"HTTP {response.status_code}: {response.text[:200]!r}", code="invalid_response",
                        status=response.status_code, body=response.text, headers=headers)
    status = response.status_code
    cls = _BY_STATUS.get(status) or (APIError if status >= 500 else InvalidRequestError)
    return cls(message, code=code, status=status, param=err.get("param"), type=err.get("type"), body=body,
               headers=headers)


# -- the client ----------------------------------------------------------------------------------------
class KeepingTimeBase:
    """The connection: a base URL and a secret key (sk_test_… or sk_live_…), sent as ``Bearer``."""

    def __init__(self, api_key: str | None = None, *, base_url: str | None = None, timeout: float = 30.0,
                 http_client: httpx.Client | None = None):
        key = api_key if api_key is not None else os.environ.get("KT_API_KEY")
        if not key:
            raise ValueError("no API key: pass api_key=… or set KT_API_KEY (a secret key, sk_test_… or sk_live_…)")
        self.api_key = key
        self.base_url = (base_url or os.environ.get("KT_BASE_URL") or DEFAULT_BASE_URL).rstrip("/")
        self._owns_http = http_client is None
        self._http = http_client or httpx.Client(timeout=timeout)

    def close(self) -> None:
        if self._owns_http:
            self._http.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def request(self, method: str, path: str, *, params: dict[str, Any] | None = None,
                json: dict[str, Any] | None = None, idempotency_key: str | Omit | None = OMIT) -> Any:
        """One API call; the parsed JSON answer, or the API's error raised as a KeepingTimeError."""
        headers = {"Authorization": f"Bearer {self.api_key}", "Accept": "application/json"}
        if isinstance(idempotency_key, str):
            headers["Idempotency-Key"] = idempotency_key
        # A query has no null: None there is left out, as OMIT is.
        query = {k: _wire(v, query=True) for k, v in (params or {}).items() if v is not OMIT and v is not None}
        body = None if json is None else {k: _wire(v) for k, v in json.items() if v is not OMIT}
        try:
            response = self._http.request(method, self.base_url + path, params=query, json=body, headers=headers)
        except httpx.TimeoutException as exc:
            raise APIConnectionError(f"{method} {path} timed out: {exc}", code="timeout") from exc
        except httpx.TransportError as exc:
            raise APIConnectionError(f"{method} {path}: could not reach {self.base_url}: {exc}",
                                     code="connection_error") from exc
        if response.status_code >= 400:
            raise error_from(response)
        try:
            return response.json()
        except ValueError as exc:
            raise APIError(f"{method} {path} answered {response.status_code} without JSON", code="invalid_response",
                           status=response.status_code, body=response.text) from exc

    def wait_for_test_clock(self, clock_id: str, *, timeout: float = 60.0, poll: float = 0.25) -> dict[str, Any]:
        """After ``test_clocks.advance``: poll the clock until the worker has fired everything owed by its
        new time (status ``ready``), and answer it. A clock whose advance failed raises its failure
        (``internal_failure``); one still advancing after ``timeout`` seconds raises ``test_clock_advancing``."""
        deadline = time.monotonic() + timeout
        path = f"/test_clocks/{quote(clock_id, safe='')}"
        while True:
            try:
                clock: dict[str, Any] = self.request("GET", path)
            except APIError as exc:
                # 503 database_busy: the server's database was busy with the very advance this waits on (SQLite
                # and a worker writing); the read did nothing, and the next poll asks again.
                if exc.status != 503 or time.monotonic() >= deadline:
                    raise
                time.sleep(poll)
                continue
            if clock["status"] == "ready":
                return clock
            if clock["status"] != "advancing":
                raise ConflictError(f"test clock {clock_id} is {clock['status']}: {clock.get('failure') or ''}".strip(),
                                    code=clock["status"], status=0, body=clock)
            if time.monotonic() >= deadline:
                raise ConflictError(f"test clock {clock_id} is still advancing after {timeout:g}s; is a worker "
                                    f"running (manage.py tick --forever)?", code="test_clock_advancing", status=0,
                                    body=clock)
            time.sleep(poll)

    def paginate(self, method: Callable[..., Any], /, **params: Any) -> Iterator[dict[str, Any]]:
        """Every object of a list method's pages, following ``starting_after`` while ``has_more``:
        ``for t in kt.paginate(kt.timers.list, on="job_…", test_clock="tc_…")``."""
        while True:
            page = method(**params)
            yield from page["data"]
            if not page["has_more"] or not page["data"]:
                return
            params["starting_after"] = page["data"][-1]["id"]


def _wire(value: Any, *, query: bool = False) -> Any:
    """A value as the API reads it: instants in UTC with Z, dates as YYYY-MM-DD, booleans in a query as
    true/false (not Python's True/False), Decimals as their exact text."""
    if isinstance(value, datetime):
        if value.tzinfo is None:
            raise ValueError(f"{value!r} has no zone: pass an aware datetime (the API stores instants in UTC)")
        return value.astimezone(UTC).isoformat().replace("+00:00", "Z")
    if isinstance(value, date):
        return value.isoformat()
    if isinstance(value, Decimal):
        return str(value)
    if isinstance(value, bool) and query:
        return "true" if value else "false"
    if isinstance(value, dict):
        return {k: _wire(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_wire(v) for v in value]
    return value


class Resource:
    """A group of operations under one path (``kt.timers``), sharing the client's connection."""

    def __init__(self, client: KeepingTimeBase):
        self._client = client
