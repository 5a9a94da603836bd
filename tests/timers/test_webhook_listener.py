"""``manage.py webhooks listen``: the receiver on this machine refuses a request its endpoint's secret did not
sign, prints each event once (a resend under the same Idempotency-Key says so), and removes its endpoint."""

from __future__ import annotations

import json
import socket
import threading
import time
import urllib.error
import urllib.request

import pytest

from timers.models import WebhookEndpoint
from timers.signing import SIGNATURE_HEADER, sign
from timers.webhook_listener import listen

pytestmark = pytest.mark.django_db(transaction=True)


def _post(port: int, body: bytes, headers: dict) -> int:
    req = urllib.request.Request(f"http://127.0.0.1:{port}/", data=body, method="POST",
                                 headers={"Content-Type": "application/json", **headers})
    try:
        with urllib.request.urlopen(req, timeout=5) as r:
            return r.status
    except urllib.error.HTTPError as exc:
        return exc.code


def test_the_listener_checks_signatures_prints_each_event_once_and_cleans_up(brand):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    lines: list[str] = []
    ready = threading.Event()
    done: dict = {}
    t = threading.Thread(target=lambda: done.setdefault("n", listen(
        brand=brand, livemode=False, events=["job.*"], port=port, say=lines.append, until="job.delivered",
        ready=ready)))
    t.start()
    assert ready.wait(10)
    endpoint = WebhookEndpoint.objects.get(url=f"http://127.0.0.1:{port}/")
    assert endpoint.enabled_events == ["job.*"] and not endpoint.livemode
    opened = json.dumps({"id": "evt_1", "type": "job.opened", "subject": "job_1",
                         "owed_at": "2027-02-01T14:00:00Z"}).encode()
    assert _post(port, opened, {SIGNATURE_HEADER: sign("whsec_wrong", opened, at=int(time.time()))}) == 400
    signed = {SIGNATURE_HEADER: sign(endpoint.secret, opened, at=int(time.time())), "Idempotency-Key": "evt_1"}
    assert _post(port, opened, signed) == 200
    assert _post(port, opened, signed) == 200  # a resend: answered, printed as such, counted once
    delivered = json.dumps({"id": "evt_2", "type": "job.delivered", "subject": "job_1"}).encode()
    assert _post(port, delivered, {SIGNATURE_HEADER: sign(endpoint.secret, delivered, at=int(time.time())),
                                   "Idempotency-Key": "evt_2"}) == 200
    t.join(10)
    assert done["n"] == 2
    printed = "\n".join(lines)
    assert "does not match" in printed
    assert printed.count("job.opened") == 2 and "(again: kept once)" in printed
    assert "2027-02-01 14:00Z  job.opened" in printed
    assert not WebhookEndpoint.objects.filter(pk=endpoint.pk).exists()
