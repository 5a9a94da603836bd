"""The apis.tax example's Service modules as a deploy names them, and the moment its version tests start."""

from __future__ import annotations

from datetime import UTC, datetime

START = datetime(2027, 1, 20, 14, tzinfo=UTC)


LIVE_PATHS = [
    "services.examples.apis_tax.annual_return",
    "services.examples.apis_tax.estimate",
    "services.examples.apis_tax.notice_response",
    "services.examples.apis_tax.tax_plan",
]
