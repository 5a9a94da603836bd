"""A client for the REST API over real HTTP (urllib): each call's status, JSON body and headers."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from dataclasses import dataclass


@dataclass
class Reply:
    status: int
    body: dict
    headers: dict

    @property
    def code(self) -> str | None:
        return (self.body.get("error") or {}).get("code")

    @property
    def message(self) -> str:
        return (self.body.get("error") or {}).get("message", "")


class Client:
    def __init__(self, base: str, key: str | None):
        self.base = base
        self.key = key

    def call(self, method: str, path: str, body=None, *, raw: bytes | None = None,
             headers: dict | None = None, key: str | None = None) -> Reply:
        data = raw if raw is not None else (None if body is None else json.dumps(body).encode())
        req = urllib.request.Request(self.base + path, data=data, method=method)
        if data is not None:
            req.add_header("Content-Type", "application/json")
        secret = key if key is not None else self.key
        if secret:
            req.add_header("Authorization", f"Bearer {secret}")
        for name, value in (headers or {}).items():
            req.add_header(name, value)
        try:
            with urllib.request.urlopen(req, timeout=30) as resp:
                status, payload, hdrs = resp.status, resp.read(), dict(resp.headers)
        except urllib.error.HTTPError as exc:
            status, payload, hdrs = exc.code, exc.read(), dict(exc.headers)
        assert hdrs.get("Content-Type", "").startswith("application/json"), (status, payload[:200])
        return Reply(status, json.loads(payload) if payload else {}, hdrs)

    def get(self, path: str, **kw) -> Reply:
        return self.call("GET", path, **kw)

    def post(self, path: str, body=None, **kw) -> Reply:
        return self.call("POST", path, {} if body is None and "raw" not in kw else body, **kw)

    def delete(self, path: str, **kw) -> Reply:
        return self.call("DELETE", path, **kw)


T0 = "2026-11-24T09:00:00Z"  # tests/conftest.py's T0, as the API writes it


def new_clock(api: Client, frozen_time: str = T0, name: str = "test") -> dict:
    r = api.post("/test_clocks", {"frozen_time": frozen_time, "name": name})
    assert r.status == 201, r.body
    return r.body
