"""A typed Python client for the Keeping Time API (httpx), one method per operation of /openapi.json.

    from keeping_time_client import KeepingTime

    kt = KeepingTime("sk_test_…", base_url="http://127.0.0.1:8000")
    page = kt.timers.list(on="job_4Tx9", test_clock="tc_7Hq4")
    kt.test_clocks.advance("tc_7Hq4", to="2028-02-02T14:00:00Z")

Errors raise a KeepingTimeError carrying the API's ``code`` (and ``status``, ``param``). docs/sdk.md has more.
"""

from ._base import (
    OMIT,
    APIConnectionError,
    APIError,
    AuthenticationError,
    ConflictError,
    InvalidRequestError,
    KeepingTimeError,
    NotFoundError,
    Omit,
    PermissionDeniedError,
    RateLimitError,
)
from ._generated import OPERATIONS, KeepingTime

__all__ = [
    "OMIT",
    "OPERATIONS",
    "APIConnectionError",
    "APIError",
    "AuthenticationError",
    "ConflictError",
    "InvalidRequestError",
    "KeepingTime",
    "KeepingTimeError",
    "NotFoundError",
    "Omit",
    "PermissionDeniedError",
    "RateLimitError",
]
