"""An outside system for the tests: a real HTTP server that counts every submission it receives.

Sends are counted here, at the far end, never read back from the outbox's own rows. It speaks what
timers.transports.HttpTransport speaks: ``POST /submissions`` and ``GET /submissions/<id>``.
"""

from __future__ import annotations

import json
import threading
import time
from collections import Counter
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class FarEnd:
    def __init__(self, *, delay: float = 0.0):
        self.delay = delay  # seconds each send takes, after it is received (a slow e-file service)
        self.received: Counter[str] = Counter()
        self.payloads: dict[str, dict] = {}
        self.fail_next = 0  # answer this many sends with a 503, without receiving them
        self._lock = threading.Lock()
        far = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args) -> None:
                pass

            def _answer(self, code: int, body: dict) -> None:
                data = json.dumps(body).encode()
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_POST(self) -> None:  # noqa: N802 - http.server's name
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                with far._lock:
                    if far.fail_next:
                        far.fail_next -= 1
                        self._answer(503, {"error": "try later"})
                        return
                    far.received[body["id"]] += 1
                    far.payloads[body["id"]] = body["payload"]
                time.sleep(far.delay)
                self._answer(200, {"received": body["id"]})

            def do_GET(self) -> None:  # noqa: N802
                sid = self.path.rsplit("/", 1)[-1]
                with far._lock:
                    got = far.received[sid] > 0
                self._answer(200, {"received": sid}) if got else self._answer(404, {"error": "unknown"})

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self._thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self) -> FarEnd:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.server.shutdown()
        self.server.server_close()

    def twice(self) -> dict[str, int]:
        with self._lock:
            return {sid: n for sid, n in self.received.items() if n > 1}
