"""Where an outside call may go: schedules' HTTP targets, webhook endpoints and the outbox's http(s) transports.

A target is refused (``400 invalid_target`` when it is made; a failed try with its reason when it is sent) if
its host resolves to an address that is not public (loopback 127.0.0.0/8 and ::1, link-local 169.254.0.0/16
and fe80::/10 (a cloud's metadata service is 169.254.169.254), private 10/8, 172.16/12, 192.168/16 and
fc00::/7, unspecified 0.0.0.0 and ::, multicast, reserved, shared and documentation ranges), or if it is the
database's own host and port, unless ``KEEPING_TIME["ALLOW_TARGETS"]`` (``KT_ALLOW_TARGETS``: host names,
``*.suffix`` names, addresses and CIDRs) names it. An allowed name may resolve anywhere; an allowed network
admits the addresses in it (an IPv4 one, their IPv4-mapped forms too, and no other IPv6 address that carries
them: 6to4, NAT64 and IPv4-compatible addresses need an IPv6 allowance of their own). The database's own port is refused whatever the allowance says.

Every address a host resolves to is judged, in whatever form the URL spells it (``2130706433``, ``0177.0.0.1``
and ``0x7f.1`` are 127.0.0.1 to the resolver, as they are to the connection; ``::ffff:127.0.0.1`` is 127.0.0.1),
because the resolver that judges is the one that connects. At send time the host is resolved once and every
address checked (``checked``), and timers/http.py connects to a checked address while the Host header, TLS SNI
and certificate check keep the name, so a name that changes its answer between the check and the connection
(DNS rebinding) reaches nothing new.
"""

from __future__ import annotations

import functools
import http.client
import ipaddress
import socket
import urllib.request
from collections.abc import Iterable, Sequence
from typing import Any

from django.conf import settings

IP = ipaddress.IPv4Address | ipaddress.IPv6Address
AddrInfo = tuple[Any, Any, Any, str, tuple[Any, ...]]  # socket.getaddrinfo's rows

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
    """Whether the allowance's networks admit ``ip``. An IPv4 allowance admits its IPv4-mapped form too
    (::ffff:a.b.c.d, which a dual-stack socket connects to as a.b.c.d) and no other IPv6 address that carries
    it: 6to4 (2002::/16) goes to a relay, NAT64 (64:ff9b::/96) to a gateway, and an IPv4-compatible address
    (::a.b.c.d) is an IPv6 address of its own. Those are judged by what they carry (``kind``), and pass only
    by an IPv6 allowance of their own."""
    _, _, networks = allowance(entries)
    same = [ip] if not isinstance(ip, ipaddress.IPv6Address) or ip.ipv4_mapped is None else [ip, ip.ipv4_mapped]
    return any(a.version == n.version and a in n for a in same for n in networks)


# -- the database ----------------------------------------------------------------------------------------------
@functools.lru_cache(maxsize=32)
def _resolved(host: str) -> frozenset[IP]:
    try:
        # An IP family's sockaddr starts with the address's text; typeshed's row also allows other families' ints.
        return frozenset(parse_ip(i[4][0]) for i in socket.getaddrinfo(host, None, proto=socket.IPPROTO_TCP))  # type: ignore[arg-type]
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


def _databases() -> tuple[tuple[object, object, object], ...]:  # (engine, host, port) of each
    return tuple((db.get("ENGINE"), db.get("HOST"), db.get("PORT")) for db in settings.DATABASES.values())


@functools.lru_cache(maxsize=4096)
def _judged(host: str, port: int, addresses: tuple[str, ...], entries: tuple[str, ...],
            databases: tuple[tuple[object, object, object], ...]) -> str:
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


__all__ = ["TargetRefused", "address_allowed", "checked", "endpoint", "kind", "name_allowed", "refusal",
           "why_refused"]
