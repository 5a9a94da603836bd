"""A far end that speaks HTTP/1.1 keep-alive as production servers do, counting what it got and answered."""

from __future__ import annotations

import contextlib
import socket
import threading
import time
from collections import Counter
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class KeepAlive:
    """A far end that keeps connections open between requests. Per Idempotency-Key: ``got`` (requests read)
    and ``acked`` (answered 200, the answer written whole); ``connections`` it accepted. ``die_at=n``: on the
    n-th request it stops, that request unanswered: every connection closed, no new one answered."""

    def __init__(self, port: int = 0, *, die_at: int | None = None, host: str = "127.0.0.1",
                 linger: float = 0.0) -> None:
        self.got: Counter[str] = Counter()
        self.linger = linger  # seconds each request is held before its answer, so sends overlap
        self.peak = 0  # the most requests in the middle of being answered at once
        self.acked: Counter[str] = Counter()
        self.connections = 0
        self.die_at = die_at
        self.dead = False
        self.lock = threading.Lock()  # an answer is written whole or not at all before a death
        self.open: dict[socket.socket, bool] = {}  # connection -> in the middle of a request
        far = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            disable_nagle_algorithm = True

            def log_message(self, *args) -> None:
                pass

            def setup(self) -> None:
                super().setup()
                with far.lock:
                    far.connections += 1
                    far.open[self.connection] = False

            def finish(self) -> None:
                with far.lock:
                    far.open.pop(self.connection, None)
                try:
                    super().finish()
                except OSError:
                    pass

            def do_POST(self) -> None:  # noqa: N802 - http.server's name
                with far.lock:
                    far.open[self.connection] = True
                    far.peak = max(far.peak, sum(far.open.values()))
                self.rfile.read(int(self.headers["Content-Length"]))
                time.sleep(far.linger)
                key = self.headers["Idempotency-Key"]
                with far.lock:
                    if far.dead:
                        self.close_connection = True
                        return
                    far.got[key] += 1
                    if far.die_at is not None and sum(far.got.values()) >= far.die_at:
                        far._die()
                        self.close_connection = True
                        return
                    far.acked[key] += 1  # before the answer leaves: a sender that read it finds it counted
                    data = b'{"ok":true}'
                    self.send_response(200)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                    far.open[self.connection] = False

        self.server = ThreadingHTTPServer((host, port), Handler)
        self.server.daemon_threads = True
        self.port = self.server.server_address[1]
        self.url = f"http://{host}:{self.port}/fire"
        threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()

    def _die(self) -> None:
        # Called under the lock: every connection closed (idle ones and those mid-request, unanswered), and
        # the listening socket closed once its loop has stopped.
        self.dead = True
        for conn in list(self.open):
            with contextlib.suppress(OSError):
                conn.shutdown(socket.SHUT_RDWR)
        threading.Thread(target=self.close, daemon=True).start()

    def drop_idle(self) -> None:
        """Close every connection between requests (a server's idle timeout), and wait until they are gone."""
        with self.lock:
            idle = [c for c, busy in self.open.items() if not busy]
        for conn in idle:
            with contextlib.suppress(OSError):
                conn.shutdown(socket.SHUT_RDWR)
        deadline = time.monotonic() + 5
        while self.open and time.monotonic() < deadline:
            time.sleep(0.01)
        assert not self.open

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
