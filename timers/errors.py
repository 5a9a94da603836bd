"""Errors with a code: the API renders them as {"error": {code, message}}, the CLI as one line."""

from __future__ import annotations

from typing import Any


class KeepingTimeError(Exception):
    code = "invalid_request"
    status = 400
    # The request field to blame, where one is (the API's "param"): set on few, so read with getattr.
    param: str | None

    def __init__(self, message: str, *, code: str | None = None, status: int | None = None):
        super().__init__(message)
        self.message = message
        if code:
            self.code = code
        if status:
            self.status = status


class InvalidKey(KeepingTimeError):
    code = "invalid_key"


class InvalidSpan(KeepingTimeError):
    code = "invalid_span"


class TestClockBackward(KeepingTimeError):
    __test__ = False  # not a pytest class
    code = "test_clock_backward"
    status = 409


class TestClockAdvancing(KeepingTimeError):
    __test__ = False
    code = "test_clock_advancing"
    status = 409


class TestClockDeleted(KeepingTimeError):
    __test__ = False
    code = "test_clock_deleted"
    status = 409


class UnknownHandler(KeepingTimeError):
    code = "unknown_handler"


class NotFound(KeepingTimeError):
    code = "resource_missing"
    status = 404


class Refused(Exception):
    """Raised by a handler's proposal when the gate must refuse it (date_passed, needs_grant, …)."""

    def __init__(self, code: str, message: str = "", data: dict[str, Any] | None = None):
        super().__init__(code)
        self.code = code
        self.message = message
        self.data = data or {}
