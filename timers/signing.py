"""The signature an outside call carries, and how a receiver checks it: ``Keeping-Time-Signature: t=…,v1=…``.

Stripe's scheme: ``t`` is the Unix time the call was signed, each ``v1`` the hex HMAC-SHA256 of ``"<t>.<body>"``
under one secret. Webhook deliveries sign with their endpoint's secret and schedules' HTTP calls with the
schedule's (timers/webhooks.py, timers/schedule_http.py); ``manage.py webhooks listen`` and a brand's own
receiver verify. A header may carry several ``v1=`` (one per secret while a secret is rotated) and a verifier
accepts any of the secrets it holds, so the old and the new secret both pass until the old one is dropped. A
``t`` further than the tolerance (300 s, as Stripe's libraries default) from the receiver's clock, before or
after, is refused: a recorded call replayed later does not pass.
"""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Sequence

from .clock import wall_now

SIGNATURE_HEADER = "Keeping-Time-Signature"
TOLERANCE_SECONDS = 300


def _mac(secret: str, body: bytes, at: int) -> str:
    return hmac.new(secret.encode(), f"{at}.".encode() + body, hashlib.sha256).hexdigest()


def _secrets(secrets: str | Sequence[str]) -> list[str]:
    return [secrets] if isinstance(secrets, str) else [s for s in secrets if s]


def sign(secrets: str | Sequence[str], body: bytes, *, at: int) -> str:
    """The header's value for ``body`` signed at Unix time ``at``: one ``v1=`` per secret (several while one is
    rotated, the new one first)."""
    return ",".join([f"t={at}", *(f"v1={_mac(s, body, at)}" for s in _secrets(secrets))])


def verify(secrets: str | Sequence[str], body: bytes, header: str, *, now: float | None = None,
           tolerance: float = TOLERANCE_SECONDS) -> bool:
    """Whether ``header`` signs ``body`` under any of ``secrets`` (one, or a list while rotating), at a ``t``
    within ``tolerance`` seconds of ``now`` (by default this machine's clock), earlier or later."""
    at, given = None, []
    for part in header.split(","):
        name, eq, value = part.strip().partition("=")
        if not eq:
            continue
        if name == "t":
            try:
                at = int(value)
            except ValueError:
                return False
        elif name == "v1":
            given.append(value)
    if at is None or not given:
        return False
    if abs((wall_now().timestamp() if now is None else now) - at) > tolerance:
        return False
    # Every pair compared in constant time, none skipped: how many secrets matched says nothing by its timing.
    matched = False
    for secret in _secrets(secrets):
        expected = _mac(secret, body, at)
        for value in given:
            matched |= hmac.compare_digest(expected, value)
    return matched


__all__ = ["SIGNATURE_HEADER", "TOLERANCE_SECONDS", "sign", "verify"]
