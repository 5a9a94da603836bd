"""Where an outside call may go: schedules' HTTP targets, webhook endpoints and the outbox's http(s) transports.

A target is refused (``400 invalid_target`` when it is made; a failed try with its reason when it is sent) if
its host resolves to an address that is not public (loopback 127.0.0.0/8 and ::1, link-local 169.254.0.0/16
and fe80::/10 (a cloud's metadata service is 169.254.169.254), private 10/8, 172.16/12, 192.168/16 and
fc00::/7, unspecified 0.0.0.0 and ::, multicast, reserved, shared and documentation ranges), or if it is the
database's own host and port, unless ``KEEPING_TIME["ALLOW_TARGETS"]`` (``KT_ALLOW_TARGETS``: host names,
``*.suffix`` names, addresses and CIDRs) names it. An allowed name may resolve anywhere; an allowed network
admits the addresses in it. The database's own port is refused whatever the allowance says.

Every address a host resolves to is judged, in whatever form the URL spells it (``2130706433``, ``0177.0.0.1``
and ``0x7f.1`` are 127.0.0.1 to the resolver, as they are to the connection; ``::ffff:127.0.0.1`` is 127.0.0.1),
because the resolver that judges is the one that connects. At send time the host is resolved once, every
address checked, and the connection made to a checked address (``opener``: an ``http.client`` connection whose
socket is opened to the pinned address while the Host header, TLS SNI and certificate check keep the name), so
a name that changes its answer between the check and the connection (DNS rebinding) reaches nothing new. No
proxy from the environment is used: a proxy would resolve the name itself.
"""

from __future__ import annotations

import collections
import dataclasses
import functools
import http.client
import ipaddress
import os
import select
import socket
import ssl
import string
import sys
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterable, Sequence
from typing import Any

from django.conf import settings

IP = ipaddress.IPv4Address | ipaddress.IPv6Address
AddrInfo = tuple[Any, Any, Any, str, tuple]  # socket.getaddrinfo's rows

_NAT64 = ipaddress.ip_network("64:ff9b::/96")
_SHARED = ipaddress.ip_network("100.64.0.0/10")
_DB_PORTS = {"postgresql": 5432, "postgis": 5432, "mysql": 3306, "oracle": 1521}


class TargetRefused(Exception):
    """A send's host resolved to an address it may not reach: nothing was connected."""

    def __init__(self, reason: str):
        super().__init__(reason)
        self.reason = reason


# -- the allowance -----------------------------------------------------------------------------------------
@functools.lru_cache(maxsize=8)
def _allowance(entries: tuple[str, ...]) -> tuple[frozenset[str], tuple[str, ...], tuple[Any, ...]]:
    names, suffixes, networks = set(), [], []
    for raw in entries:
        entry = raw.strip().lower().rstrip(".")
        if not entry:
            continue
        try:
            networks.append(ipaddress.ip_network(entry.strip("[]"), strict=False))
            continue
        except ValueError:
            pass
        if entry.startswith("*."):
            suffixes.append(entry[1:])
        else:
            names.add(entry)
    return frozenset(names), tuple(suffixes), tuple(networks)


def allowance(entries: Iterable[str] | None = None) -> tuple[frozenset[str], tuple[str, ...], tuple[Any, ...]]:
    """(names, .suffixes, networks) of ``entries``, by default KEEPING_TIME["ALLOW_TARGETS"]."""
    if entries is None:
        entries = settings.KEEPING_TIME.get("ALLOW_TARGETS") or ()
    if isinstance(entries, str):
        entries = entries.split(",")
    return _allowance(tuple(entries))


def _name(host: str) -> str:
    return host.strip("[]").lower().rstrip(".")


def name_allowed(host: str, entries: Iterable[str] | None = None) -> bool:
    names, suffixes, _ = allowance(entries)
    name = _name(host)
    return name in names or any(name.endswith(s) for s in suffixes)


# -- an address ----------------------------------------------------------------------------------------------
def parse_ip(text: str) -> IP:
    """An address as the resolver returns it (an IPv6 scope, ``%eth0``, dropped)."""
    return ipaddress.ip_address(text.split("%", 1)[0])


def embedded(ip: IP) -> list[IP]:
    """The address itself and the IPv4 address an IPv6 one carries (mapped, compatible, 6to4, NAT64): a
    connection to ::ffff:127.0.0.1 reaches 127.0.0.1."""
    out: list[IP] = [ip]
    if isinstance(ip, ipaddress.IPv6Address):
        inner = ip.ipv4_mapped or ip.sixtofour
        if inner is None and (ip in _NAT64 or (int(ip) >> 32 == 0 and int(ip) > 1)):
            inner = ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF)
        if inner is not None:
            out.append(inner)
    return out


_PRIVATE = tuple(ipaddress.ip_network(n) for n in ("10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16", "fc00::/7"))


def kind(ip: IP) -> str:
    """What keeps ``ip`` from being a public address ("a loopback address" …), or "" if it is one. An IPv6
    address that carries an IPv4 one is judged by the IPv4 one: that is where its packets go."""
    a = embedded(ip)[-1]
    if a.is_unspecified:
        return "an unspecified address"
    if a.is_loopback:
        return "a loopback address"
    if a.is_link_local:
        return "a link-local address"
    if a.is_multicast:
        return "a multicast address"
    if any(a.version == n.version and a in n for n in _PRIVATE):
        return "a private address"
    if a in _SHARED:
        return "a shared (carrier-grade NAT) address"
    if a.is_reserved:
        return "a reserved address"
    if not a.is_global:
        return "an address that is not public"
    return ""


def address_allowed(ip: IP, entries: Iterable[str] | None = None) -> bool:
    _, _, networks = allowance(entries)
    return any(a.version == n.version and a in n for a in embedded(ip) for n in networks)


# -- the database ----------------------------------------------------------------------------------------------
@functools.lru_cache(maxsize=32)
def _resolved(host: str) -> frozenset[IP]:
    try:
        return frozenset(parse_ip(i[4][0]) for i in socket.getaddrinfo(host, None, proto=socket.IPPROTO_TCP))
    except (OSError, UnicodeError, ValueError):
        return frozenset()


def _loopback(ip: IP) -> bool:
    return any(a.is_loopback or a.is_unspecified for a in embedded(ip))


def database_endpoints() -> list[tuple[str, frozenset[IP], int]]:
    """(host, its addresses, port) of each database this server uses over TCP."""
    out = []
    for db in settings.DATABASES.values():
        vendor = db.get("ENGINE", "").rsplit(".", 1)[-1]
        port = db.get("PORT") or _DB_PORTS.get(vendor)
        host = (db.get("HOST") or "").strip()
        if not port or host.startswith("/"):
            continue  # SQLite, a Unix socket
        if not host or host.lower() == "localhost":
            host, addrs = host or "localhost", frozenset({ipaddress.ip_address("127.0.0.1"), ipaddress.ip_address("::1")})
        else:
            try:
                addrs = frozenset({parse_ip(host.strip("[]"))})
            except ValueError:
                addrs = _resolved(host)
        out.append((_name(host), addrs, int(port)))
    return out


def is_database(host: str, ip: IP | None, port: int) -> bool:
    """Whether (host or ip, port) is the database's: its name, one of its addresses, or (a database on this
    machine) any loopback address, on its port."""
    for name, addrs, db_port in database_endpoints():
        if port != db_port:
            continue
        if _name(host) == name:
            return True
        if ip is not None and (set(embedded(ip)) & addrs or (_loopback(ip) and any(map(_loopback, addrs)))):
            return True
    return False


def _literal(host: str) -> IP | None:
    try:
        return parse_ip(_name(host))
    except ValueError:
        return None


# -- the rule ---------------------------------------------------------------------------------------------------
def refusal(host: str, port: int, addresses: Sequence[str], entries: Iterable[str] | None = None) -> str:
    """Why a call to ``host``:``port`` that resolved to ``addresses`` may not go, or "" if it may."""
    if entries is not None:
        entries = tuple(entries)
    named = name_allowed(host, entries)
    for text in addresses:
        ip = parse_ip(text)
        if is_database(host, ip, port):
            return f"{host}:{port} is the database's own address"
        if named or address_allowed(ip, entries):
            continue
        why = kind(ip)
        if why:
            said = f"{host} is" if _literal(host) == ip else f"{host} resolves to {ip},"
            return f"{said} {why}: this server calls public addresses only (KT_ALLOW_TARGETS names exceptions)"
    if not addresses and is_database(host, None, port):
        return f"{host}:{port} is the database's own address"
    return ""


def resolve(host: str, port: int) -> list[AddrInfo]:
    """Every TCP address of ``host`` (one lookup). OSError (socket.gaierror) if it has none."""
    try:
        return socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, proto=socket.IPPROTO_TCP)
    except (UnicodeError, ValueError) as exc:
        raise socket.gaierror(socket.EAI_NONAME, f"{host[:100]!r} is not a host name: {exc}") from None


def checked(host: str, port: int) -> list[AddrInfo]:
    """Resolve once and judge every address: the addresses to connect to, or TargetRefused."""
    infos = resolve(host, port)
    entries = settings.KEEPING_TIME.get("ALLOW_TARGETS") or ()
    why = _judged(host, port, tuple(i[4][0] for i in infos), tuple(entries.split(",") if isinstance(entries, str)
                                                                  else entries), _databases())
    if why:
        raise TargetRefused(why)
    return infos


def _databases() -> tuple:
    return tuple((db.get("ENGINE"), db.get("HOST"), db.get("PORT")) for db in settings.DATABASES.values())


@functools.lru_cache(maxsize=4096)
def _judged(host: str, port: int, addresses: tuple[str, ...], entries: tuple[str, ...], databases: tuple) -> str:
    # refusal() of one answer under one allowance and one set of databases (the key names all it reads): a
    # send judges its host's answer every time, and a schedule's sends ask the same question thousands of times.
    return refusal(host, port, addresses, entries)


def endpoint(url: str) -> tuple[str, int]:
    """The (host, port) a send to ``url`` connects to, found as urllib and http.client find it. ValueError
    or http.client.InvalidURL if it names none."""
    req = urllib.request.Request(url)
    if req.type not in ("http", "https") or not req.host:
        raise ValueError("an http(s) URL with a host")
    cls = http.client.HTTPSConnection if req.type == "https" else http.client.HTTPConnection
    conn = cls(req.host)
    return conn.host, conn.port


def why_refused(url: str, entries: Iterable[str] | None = None) -> str:
    """At creation: why ``url`` may not be a target ("" if it may). A name that does not resolve now is
    taken (it is judged again at every send); one that resolves is judged on every address it has."""
    try:
        host, port = endpoint(url)
    except (ValueError, http.client.InvalidURL) as exc:
        return f"it names no host and port this server can call ({exc})"
    if not host:
        return "it names no host"
    try:
        addresses = [i[4][0] for i in resolve(host, port)]
    except OSError:
        addresses = []
    return refusal(host, port, addresses, entries)


# -- sending: connect to the address that was checked ----------------------------------------------------------------
def _connect(infos: list[AddrInfo], timeout: Any, source_address: Any) -> tuple[socket.socket, str]:
    """A socket to the first of ``infos`` (checked addresses) that answers, and that address."""
    error: OSError | None = None
    for family, type_, proto, _, sockaddr in infos:
        sock = None
        try:
            sock = socket.socket(family, type_, proto)
            if timeout is not socket._GLOBAL_DEFAULT_TIMEOUT:  # type: ignore[attr-defined]
                sock.settimeout(timeout)
            if source_address:
                sock.bind(source_address)
            sock.connect(sockaddr)
            # A request leaves as two writes (head, then body): without this the body waits for the far end's
            # delayed ACK of the head (40 ms) on a connection that is kept.
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            return sock, sockaddr[0]
        except OSError as exc:
            error = exc
            if sock is not None:
                sock.close()
    raise error or OSError("no address to connect to")


class _Pinned:
    """Resolve the host once, judge every address, open the socket to a judged one; the name stays the
    request's (Host header, and for https the SNI and the certificate's check). ``infos``, when set, are
    addresses already resolved and judged for this send (a kept connection's: see fetch)."""

    host: str
    port: int
    infos: list[AddrInfo] | None = None
    address = ""  # the checked address the socket was opened to: a kept connection is filed under it

    def connect(self) -> None:
        infos = self.infos if self.infos is not None else checked(self.host, self.port)

        def create(address, timeout, source_address=None):
            sock, self.address = _connect(infos, timeout, source_address)
            return sock

        self._create_connection = create  # type: ignore[attr-defined]
        super().connect()  # type: ignore[misc]


class PinnedHTTPConnection(_Pinned, http.client.HTTPConnection):
    pass


class PinnedHTTPSConnection(_Pinned, http.client.HTTPSConnection):
    pass


class _HTTPHandler(urllib.request.HTTPHandler):
    def http_open(self, req):
        return self.do_open(PinnedHTTPConnection, req)


class _HTTPSHandler(urllib.request.HTTPSHandler):
    def https_open(self, req):
        return self.do_open(PinnedHTTPSConnection, req, context=self._context)


class _NoRedirects(urllib.request.HTTPRedirectHandler):
    # A 3xx is an answer, not a new place to go (a webhook's delivery counts it failed, as Stripe does).
    def redirect_request(self, req, fp, code, msg, headers, newurl):
        return None


def opener(*, redirects: bool = True) -> urllib.request.OpenerDirector:
    """An opener for http(s) only, every connection pinned and checked (a redirect's too), no proxies."""
    o = urllib.request.OpenerDirector()
    for handler in (urllib.request.UnknownHandler(), urllib.request.HTTPDefaultErrorHandler(),
                    urllib.request.HTTPRedirectHandler() if redirects else _NoRedirects(),
                    _HTTPHandler(), _HTTPSHandler(), urllib.request.HTTPErrorProcessor()):
        o.add_handler(handler)
    return o


_OPENER = opener()


def urlopen(req: urllib.request.Request | str, *, timeout: float):
    """urllib.request.urlopen for an outside call: redirects followed (each hop checked), TargetRefused if a
    connection would reach a refused address."""
    return _OPENER.open(req, timeout=timeout)


# -- sending on kept connections -------------------------------------------------------------------------------------
IDLE_SECONDS = 4.0  # a kept connection idle longer is closed, not reused: servers drop idle ones from 5 s (Node, uvicorn)
IDLE_KEPT = 64  # idle connections a process keeps, over every (scheme, host, port, address)
ANSWER_READ = 64 * 1024  # an answer's body longer than this is cut, and its connection closed rather than drained
REDIRECTS, REPEATS = 10, 4  # as urllib: hops in all, and visits of one URL

Key = tuple[str, str, int, str]  # (scheme, host, port, the checked address the socket reaches)


class Pool:
    """Idle kept connections, filed by (scheme, host, port, address connected to). A send takes one only under an
    address its own lookup just resolved and judged, so a name that now resolves elsewhere (or is refused now)
    never reaches an earlier address through a kept socket; a connection the far end closed while idle (readable
    before anything was asked) or idle too long is closed and not used."""

    def __init__(self, *, kept: int = IDLE_KEPT, idle_seconds: float = IDLE_SECONDS) -> None:
        self.kept, self.idle_seconds = kept, idle_seconds
        self._idle: collections.OrderedDict[Key, list[tuple[float, http.client.HTTPConnection]]] = (
            collections.OrderedDict())
        self._count = 0
        self._lock = threading.Lock()

    def take(self, scheme: str, host: str, port: int, addresses: Iterable[str]) -> http.client.HTTPConnection | None:
        now = time.monotonic()
        stale = []
        found = None
        with self._lock:
            for address in addresses:
                kept = self._idle.get((scheme, host, port, address))
                while kept and found is None:
                    since, conn = kept.pop()
                    self._count -= 1
                    if now - since > self.idle_seconds or _dropped(conn):
                        stale.append(conn)
                    else:
                        found = conn
                if found is not None:
                    break
        for conn in stale:
            conn.close()
        return found

    def give(self, scheme: str, host: str, port: int, conn: http.client.HTTPConnection) -> None:
        key = (scheme, host, port, getattr(conn, "address", ""))
        if conn.sock is None or not key[3]:
            conn.close()
            return
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


def _dropped(conn: http.client.HTTPConnection) -> bool:
    # Idle, a kept socket has nothing to read: readable means the far end closed it (or sent what nobody asked).
    if conn.sock is None:
        return True
    try:
        return bool(select.select([conn.sock], [], [], 0)[0])
    except (OSError, ValueError):
        return True


POOL = Pool()
os.register_at_fork(after_in_child=lambda: POOL.__init__(kept=POOL.kept, idle_seconds=POOL.idle_seconds))

_TLS: list[ssl.SSLContext] = []


def _tls() -> ssl.SSLContext:
    # One context for every kept https connection (http.client makes, and loads the CAs into, one per connection).
    if not _TLS:
        context = ssl.create_default_context()
        context.set_alpn_protocols(["http/1.1"])
        _TLS.append(context)
    return _TLS[0]


@dataclasses.dataclass
class Answer:
    status: int
    reason: str
    headers: http.client.HTTPMessage
    body: bytes  # its first ``keep`` bytes


def fetch(method: str, url: str, *, body: bytes | None = None, headers: dict[str, str], timeout: float,
          keep: int = 2000, pool: Pool | None = None) -> Answer:
    """One outside call on a kept connection: every hop's host resolved once and every address judged
    (TargetRefused), the connection made to (or kept for) a judged address, redirects followed as urllib follows
    them (a POST's 301/302/303 as a GET without the body; a 307/308 or a loop is the answer). Any answer is
    returned (``status``); no answer raises (OSError, http.client.HTTPException), as urllib's does."""
    pool = POOL if pool is None else pool
    visited: dict[str, int] = {}
    while True:
        answer = _exchange(method, url, body, headers, timeout, keep, pool)
        location = answer.headers.get("location") or answer.headers.get("uri")
        if answer.status not in (301, 302, 303, 307, 308) or not location:
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
def _origin(url: str) -> tuple[str, str, int, str]:
    """(scheme, host, port, path) of ``url`` as urllib and http.client find them (endpoint's way)."""
    req = urllib.request.Request(url)
    if req.type not in ("http", "https") or not req.host:
        raise urllib.error.URLError(f"unknown url type: {req.type}")
    host, port = endpoint(url)
    return req.type, host, port, req.selector


def _exchange(method: str, url: str, body: bytes | None, headers: dict[str, str], timeout: float, keep: int,
              pool: Pool) -> Answer:
    scheme, host, port, path = _origin(url)
    infos = checked(host, port)  # at every send, as a new connection's: a kept one is taken under these only
    conn = pool.take(scheme, host, port, [i[4][0] for i in infos])
    for fresh in ((False, True) if conn is not None else (True,)):
        if fresh:
            conn = (PinnedHTTPSConnection(host, port, timeout=timeout, context=_tls()) if scheme == "https"
                    else PinnedHTTPConnection(host, port, timeout=timeout))
        conn.infos = infos
        conn.timeout = timeout
        if conn.sock is not None:
            conn.sock.settimeout(timeout)
        try:
            conn.request(method, path, body=body, headers={"User-Agent": _AGENT, **headers})
            break
        except OSError:
            conn.close()
            # A kept connection the far end had closed fails on the write: the request never reached it whole,
            # so nothing of it can have been acted on; it goes once more, on a new connection. A failed write on
            # a new connection, or anything after the request left, is the caller's failed try.
            if fresh:
                raise
    try:
        resp = conn.getresponse()
        data = resp.read(keep)
        if not resp.isclosed():
            resp.read(ANSWER_READ)
    except BaseException:
        conn.close()
        raise
    if resp.isclosed() and not resp.will_close:
        pool.give(scheme, host, port, conn)
    else:
        conn.close()
    return Answer(resp.status, resp.reason, resp.headers, data)


_AGENT = f"Python-urllib/{sys.version_info[0]}.{sys.version_info[1]}"  # what urllib's sends said


__all__ = ["POOL", "Answer", "Pool", "TargetRefused", "address_allowed", "checked", "endpoint", "fetch", "kind",
           "name_allowed", "opener", "refusal", "urlopen", "why_refused"]
