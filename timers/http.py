"""One road out: every outside call this server makes (schedules' HTTP targets, webhook deliveries, the outbox's
e-file and notice submissions endpoint) is ``send``, on urllib3's connections.

A send resolves its URL's host once and judges every address (timers/targets.py's rule: ``TargetRefused``,
nothing connected), then connects to a judged address: the urllib3 connection's host is that address, while
the Host header, TLS SNI and the certificate's check keep the name (``server_hostname``; with no
``assert_hostname`` the certificate is checked against it). A name that changes its answer between the check
and the connection (DNS rebinding) reaches nothing new. No proxy from the environment is used (a proxy would
resolve the name itself). Redirects are followed hop by hop as urllib follows them, each hop resolved and
judged again, or not at all (``redirects=False``: a webhook counts a 3xx failed).

Connections are kept between sends (``Pool``), filed by the address they reach: a kept one is taken only under
an address its own send just judged. A send raises what the socket, TLS or http.client raised (OSError,
http.client.HTTPException), unwrapped from urllib3's exceptions, so a failed try's reason reads as before.
"""

from __future__ import annotations

import collections
import dataclasses
import functools
import os
import ssl
import string
import sys
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterable, Mapping

import urllib3
from urllib3.connection import HTTPConnection, HTTPSConnection
from urllib3.exceptions import ConnectTimeoutError, NewConnectionError, ProtocolError

from . import targets

IDLE_SECONDS = 4.0  # a kept connection idle longer is closed, not reused: servers drop idle ones from 5 s (Node, uvicorn)
IDLE_KEPT = 64  # idle connections a process keeps, over every (scheme, host, port, address)
ANSWER_READ = 64 * 1024  # an answer's body longer than ``keep`` and this is cut, its connection closed, not drained
REDIRECTS, REPEATS = 10, 4  # as urllib: hops in all, and visits of one URL
AGENT = f"Python-urllib/{sys.version_info[0]}.{sys.version_info[1]}"  # what the sends said before: far ends see no change

Key = tuple[str, str, int, str]  # (scheme, host, port, the checked address the connection reaches)


@dataclasses.dataclass(frozen=True)
class Response:
    status: int
    reason: str
    headers: Mapping[str, str]  # case-insensitive (urllib3's HTTPHeaderDict)
    body: bytes  # its first ``keep`` bytes


@functools.cache
def _default_tls() -> ssl.SSLContext:
    # One context for every https connection: made, and its CAs loaded, once a process.
    return ssl.create_default_context()


class Pool:
    """Idle kept connections (urllib3's), filed by (scheme, host, port, address connected to). A send takes one
    only under an address its own lookup just resolved and judged, so a name that now resolves elsewhere (or is
    refused now) never reaches an earlier address through a kept socket; one the far end closed while idle
    (urllib3 finds it readable before anything was asked) or idle longer than ``idle_seconds`` is closed and not
    used. At most ``kept`` idle connections in all: the address unused longest gives its oldest up. ``tls``: the
    context https connections are made with (by default the system's CAs, the name checked).

    Ours rather than urllib3's HTTPConnectionPool: its urlopen cost a send 0.08 ms more of the process's CPU
    (0.7 s of a schedule's year), it keeps idle connections with no age, and it cannot tell a request that never
    left (a kept connection's failed write: sent again on a new one) from one that did."""

    def __init__(self, *, kept: int = IDLE_KEPT, idle_seconds: float = IDLE_SECONDS,
                 tls: ssl.SSLContext | None = None) -> None:
        self.kept, self.idle_seconds, self.tls = kept, idle_seconds, tls
        self._idle: collections.OrderedDict[Key, list[tuple[float, HTTPConnection]]] = collections.OrderedDict()
        self._count = 0
        self._lock = threading.Lock()

    def new(self, key: Key, timeout: float) -> HTTPConnection:
        """A connection (not yet open) to ``key``'s address, under ``key``'s name for Host, SNI and certificate."""
        scheme, host, port, address = key
        if scheme == "https":
            return HTTPSConnection(address, port, timeout=timeout, server_hostname=host,
                                   ssl_context=self.tls or _default_tls())
        return HTTPConnection(address, port, timeout=timeout)

    def take(self, scheme: str, host: str, port: int, addresses: Iterable[str]) -> tuple[str, HTTPConnection] | None:
        """A kept connection to one of ``addresses`` (in their order), and that address; None if none is kept."""
        now = time.monotonic()
        stale = []
        found = None
        with self._lock:
            for address in addresses:
                kept = self._idle.get((scheme, host, port, address))
                while kept and found is None:
                    since, conn = kept.pop()
                    self._count -= 1
                    if now - since > self.idle_seconds or not conn.is_connected:
                        stale.append(conn)
                    else:
                        found = (address, conn)
                if found is not None:
                    break
        for conn in stale:
            conn.close()
        return found

    def give(self, key: Key, conn: HTTPConnection) -> None:
        out = []
        with self._lock:
            self._idle.setdefault(key, []).append((time.monotonic(), conn))
            self._idle.move_to_end(key)
            self._count += 1
            while self._count > self.kept:  # the longest unused address gives its oldest up
                oldest, kept = next(iter(self._idle.items()))
                out.append(kept.pop(0)[1])
                self._count -= 1
                if not kept:
                    del self._idle[oldest]
        for c in out:
            c.close()

    def clear(self) -> None:
        with self._lock:
            conns = [c for kept in self._idle.values() for _, c in kept]
            self._idle.clear()
            self._count = 0
        for c in conns:
            c.close()

    def idle(self) -> dict[Key, int]:
        with self._lock:
            return {k: len(v) for k, v in self._idle.items() if v}

    def forget(self) -> None:
        # A forked child: the parent's connections are the parent's; the child opens its own.
        self._idle, self._count, self._lock = collections.OrderedDict(), 0, threading.Lock()


POOL = Pool()
os.register_at_fork(after_in_child=POOL.forget)


def send(method: str, url: str, *, headers: Mapping[str, str] | None = None, body: bytes | None = None,
         timeout: float, keep: int | None = 2000, redirects: bool = True, pool: Pool | None = None) -> Response:
    """One outside call: every hop's host resolved once and every address judged (TargetRefused), the
    connection made to (or kept for) a judged address; redirects followed as urllib follows them (a POST's
    301/302/303 as a GET without the body; a 307/308 or a loop is the answer), or none (``redirects=False``).
    Any answer is returned, its body's first ``keep`` bytes (None: all of it); no answer raises OSError or
    http.client.HTTPException."""
    pool = POOL if pool is None else pool
    headers = dict(headers or {})
    visited: dict[str, int] = {}
    while True:
        answer = _exchange(method, url, body, headers, timeout, keep, pool)
        if not redirects or answer.status not in (301, 302, 303, 307, 308):
            return answer
        location = answer.headers.get("location") or answer.headers.get("uri")
        if not location:
            return answer
        if not (method in ("GET", "HEAD") or (method == "POST" and answer.status in (301, 302, 303))):
            return answer
        new = urllib.parse.urljoin(url, urllib.parse.quote(location.replace(" ", "%20"), encoding="iso-8859-1",
                                                           safe=string.punctuation))
        if urllib.parse.urlsplit(new).scheme not in ("http", "https"):
            return answer
        if len(visited) >= REDIRECTS or visited.get(new, 0) >= REPEATS:
            return answer
        visited[new] = visited.get(new, 0) + 1
        method = "HEAD" if method == "HEAD" else "GET"
        url, body = new, None
        headers = {k: v for k, v in headers.items() if k.lower() not in ("content-length", "content-type")}


@functools.lru_cache(maxsize=1024)
def _origin(url: str) -> tuple[str, str, int, str, str]:
    """(scheme, host, port, path, Host header) of ``url``: the host and port timers/targets.py judges (its
    ``endpoint``)."""
    req = urllib.request.Request(url)
    if req.type not in ("http", "https") or not req.host:
        raise urllib.error.URLError(f"unknown url type: {req.type}")
    host, port = targets.endpoint(url)
    return req.type, host, port, req.selector, _host_header(req.type, host, port)


def _host_header(scheme: str, host: str, port: int) -> str:
    # As http.client writes it for the name: ASCII or IDNA, an IPv6 literal in brackets, the port if not the default.
    try:
        name = host.encode("ascii").decode()
    except UnicodeEncodeError:
        name = host.encode("idna").decode()
    if ":" in name:
        name = f"[{name}]"
    return name if port == (443 if scheme == "https" else 80) else f"{name}:{port}"


def _exchange(method: str, url: str, body: bytes | None, headers: dict[str, str], timeout: float,
              keep: int | None, pool: Pool) -> Response:
    scheme, host, port, path, host_header = _origin(url)
    # At every send, as a new connection's: a kept one is taken only under an address of this answer.
    addresses = [i[4][0] for i in targets.checked(host, port)]
    head = {"Host": host_header, "User-Agent": AGENT, **headers}
    kept = pool.take(scheme, host, port, addresses)
    # A kept connection first; then a new one to each checked address in turn, until one connects.
    tries: list[tuple[str, HTTPConnection | None]] = [kept] if kept is not None else []
    tries += [(a, None) for a in dict.fromkeys(addresses)]
    error: BaseException | None = None
    for address, conn in tries:
        fresh = conn is None
        if conn is None:
            conn = pool.new((scheme, host, port, address), timeout)
        conn.timeout = timeout
        try:
            conn.request(method, path, body=body, headers=head, preload_content=False, decode_content=False)
            break
        except (NewConnectionError, ConnectTimeoutError) as exc:  # not connected: the next checked address
            conn.close()
            error = exc
        except urllib3.exceptions.HTTPError as exc:
            conn.close()
            raise _cause(exc) from None
        except OSError as exc:
            conn.close()
            # A kept connection the far end had closed fails on the write: the request never reached it whole,
            # so nothing of it can have been acted on; it goes once more, on a new connection. A failed write on
            # a new connection, or anything after the request left, is the caller's failed try.
            if fresh:
                raise
            error = exc
    else:
        raise _cause(error) if error is not None else OSError("no address to connect to")
    try:
        resp = conn.getresponse()
        data = resp.read() if keep is None else resp.read(keep)
        if not resp.closed:
            resp.read(ANSWER_READ)  # the rest, when short, so the connection is kept
    except urllib3.exceptions.HTTPError as exc:
        conn.close()
        raise _cause(exc) from None
    except BaseException:
        conn.close()
        raise
    if resp.closed and conn.sock is not None:  # read whole, and the far end keeps it open (no Connection: close)
        pool.give((scheme, host, port, address), conn)
    else:
        conn.close()
    return Response(resp.status, resp.reason or "", resp.headers, data)


def _cause(exc: BaseException) -> BaseException:
    """What the socket, TLS or http.client raised under urllib3's wrapping (a ProtocolError carries it as its
    second argument, the others as their cause); an error of urllib3's own, as an OSError."""
    seen = exc
    while isinstance(seen, urllib3.exceptions.HTTPError):
        inner = seen.args[1] if isinstance(seen, ProtocolError) and len(seen.args) > 1 else seen.__cause__
        if not isinstance(inner, BaseException):
            return OSError(f"{type(seen).__name__}: {seen}")
        seen = inner
    return seen


__all__ = ["POOL", "Pool", "Response", "send"]
