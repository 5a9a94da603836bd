"""Outside calls go only where they should (timers/targets.py): schedules' HTTP targets, webhook endpoints and the
outbox's http transport are refused at loopback, link-local, private and unspecified addresses, in every spelling,
and at the database's own port, unless KT_ALLOW_TARGETS names them; when they are made (400 invalid_target,
nothing written) and at every send, on the address the connection is made to (a name that resolves elsewhere
at send time, or changes its answer mid-send, reaches nothing).

The test settings allow 127.0.0.1 and ::1 (the other tests' far ends); each test here sets the allowance it
means, most of them none."""

from __future__ import annotations

import json
import socket
import ssl
import threading
from collections.abc import Iterator
from datetime import timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from io import StringIO
from types import SimpleNamespace

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from tests.conftest import T0
from tests.support.keep_alive import KeepAlive
from timers import outbox, targets, transports, webhooks
from timers.advance import advance
from timers.arming import timer_arm
from timers.http import Pool, send
from timers.models import (
    DeadLetter,
    Event,
    Outbox,
    Schedule,
    ScheduleRun,
    Timer,
    WebhookAttempt,
    WebhookEndpoint,
)
from timers.schedules import schedule_create
from timers.test_clocks import test_clock_create

LOCAL = "127.0.0.1"


def allow(settings, *entries: str) -> None:
    settings.KEEPING_TIME = {**settings.KEEPING_TIME, "ALLOW_TARGETS": list(entries)}


# -- a far end that counts, and a resolver the test answers for ---------------------------------------------
class FarEnd:
    """A local HTTP server that keeps every request's Host header; answers 200."""

    def __init__(self) -> None:
        self.hosts: list[str] = []
        me = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args) -> None:
                pass

            def do_POST(self) -> None:  # noqa: N802 - http.server's name
                self.rfile.read(int(self.headers.get("Content-Length") or 0))
                me.hosts.append(self.headers.get("Host", ""))
                body = json.dumps({"ok": True}).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            do_GET = do_POST  # noqa: N815 - http.server's name

        self.server = ThreadingHTTPServer((LOCAL, 0), Handler)
        self.server.daemon_threads = True
        self.port = self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def far() -> Iterator[FarEnd]:
    f = FarEnd()
    yield f
    f.close()


@pytest.fixture
def dns(monkeypatch):
    """``dns["name"] = ["1.2.3.4", …]`` answers for a name: each lookup takes the next answer list (the last
    one repeats); ``dns.asked["name"]`` counts lookups. Other names go to the real resolver."""
    real = socket.getaddrinfo
    answers: dict[str, list[list[str]]] = {}
    asked: dict[str, int] = {}

    def fake(host, port, family=0, type=0, proto=0, flags=0):  # noqa: A002 - socket's names
        if isinstance(host, str) and host in answers:
            asked[host] = asked.get(host, 0) + 1
            queue = answers[host]
            ips = queue.pop(0) if len(queue) > 1 else queue[0]
            return [(socket.AF_INET6 if ":" in ip else socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP, "",
                     (ip, port or 0, 0, 0) if ":" in ip else (ip, port or 0)) for ip in ips]
        return real(host, port, family, type, proto, flags)

    class Answers(dict):
        def __setitem__(self, name, value):
            answers[name] = [value] if value and isinstance(value[0], str) else list(value)

    monkeypatch.setattr(socket, "getaddrinfo", fake)
    table = Answers()
    table.asked = asked
    return table


# == the rule, pure ===========================================================================================
REFUSED = [
    ("http://127.0.0.1/", "loopback"),
    ("http://127.255.255.254:8080/x", "loopback"),
    ("http://localhost/", "loopback"),
    ("http://[::1]/", "loopback"),
    ("http://169.254.169.254/latest/meta-data/", "link-local"),
    ("http://169.254.0.1/", "link-local"),
    ("http://[fe80::1]/", "link-local"),
    ("http://[febf::1]/", "link-local"),
    ("http://10.0.0.1/", "private"),
    ("http://10.255.255.255/", "private"),
    ("http://172.16.0.1/", "private"),
    ("http://172.31.255.254/", "private"),
    ("http://192.168.0.1/", "private"),
    ("http://[fc00::1]/", "private"),
    ("http://[fd12:3456::1]/", "private"),
    ("http://0.0.0.0/", "unspecified"),
    ("http://[::]/", "unspecified"),
    # IPv4 carried in IPv6: mapped, compatible, 6to4, NAT64
    ("http://[::ffff:127.0.0.1]/", "loopback"),
    ("http://[::ffff:7f00:1]/", "loopback"),
    ("http://[::ffff:169.254.169.254]/", "link-local"),
    ("http://[::ffff:10.0.0.1]/", "private"),
    ("http://[::127.0.0.1]/", "loopback"),
    ("http://[2002:a00:1::1]/", "private"),
    ("http://[64:ff9b::a9fe:a9fe]/", "link-local"),
    # the resolver's other spellings of an IPv4 address: decimal, octal, hex, short
    ("http://2130706433/", "loopback"),
    ("http://0177.0.0.1/", "loopback"),
    ("http://0x7f.0.0.1/", "loopback"),
    ("http://0x7f000001/", "loopback"),
    ("http://017700000001/", "loopback"),
    ("http://127.1/", "loopback"),
    ("http://2852039166/", "link-local"),  # 169.254.169.254
    ("http://0/", "unspecified"),
    ("http://167772161:8080/", "private"),  # 10.0.0.1
    ("http://127%2e0%2e0%2e1/", "loopback"),  # urllib unquotes the host it connects to
    # the rest that is not the public internet
    ("http://224.0.0.1/", "multicast"),
    ("http://100.64.0.1/", "shared"),
    ("http://240.0.0.1/", "reserved"),
    ("http://192.0.2.1/", "not public"),
]


@pytest.mark.parametrize(("url", "kind"), REFUSED)
def test_an_address_that_is_not_public_is_refused_in_every_spelling(url, kind):
    why = targets.why_refused(url, entries=[])
    assert kind in why and "KT_ALLOW_TARGETS" in why, why


@pytest.mark.parametrize("url", [
    "http://8.8.8.8/", "https://1.1.1.1:8443/x", "http://[2606:4700:4700::1111]/", "http://[::ffff:8.8.8.8]/",
    "http://172.32.0.1/", "http://172.15.255.255/", "http://11.0.0.1/", "http://192.169.0.1/", "http://134744072/",
])
def test_a_public_address_is_taken(url):
    assert targets.why_refused(url, entries=[]) == ""


def test_a_name_is_judged_on_every_address_it_resolves_to(dns):
    dns["api.example.test"] = ["93.184.216.34", "2606:2800:220:1::1"]
    assert targets.why_refused("https://api.example.test/hook", entries=[]) == ""
    dns["mixed.example.test"] = ["93.184.216.34", "10.1.2.3"]
    why = targets.why_refused("https://mixed.example.test/hook", entries=[])
    assert why.startswith("mixed.example.test resolves to 10.1.2.3, a private address"), why
    dns["meta.example.test"] = ["fe80::a9fe:a9fe"]
    assert "link-local" in targets.why_refused("http://meta.example.test/", entries=[])


def test_a_name_that_does_not_resolve_is_taken_when_made_and_judged_at_send(dns):
    # No answer now (this sandbox resolves nothing outside): the send resolves it again and judges that.
    assert targets.why_refused("https://nowhere.invalid/hook", entries=[]) == ""


def test_the_allowance_names_networks_addresses_and_hosts(dns):
    assert targets.why_refused("http://10.9.8.7/", entries=["10.0.0.0/8"]) == ""
    assert "private" in targets.why_refused("http://192.168.1.1/", entries=["10.0.0.0/8"])
    assert targets.why_refused("http://127.0.0.1:9000/", entries=["127.0.0.1"]) == ""
    assert "loopback" in targets.why_refused("http://127.0.0.2:9000/", entries=["127.0.0.1"])
    assert targets.why_refused("http://[::ffff:127.0.0.1]:9000/", entries=["127.0.0.1"]) == ""  # its mapped form
    assert targets.why_refused("http://2130706433:9000/", entries=["127.0.0.0/8"]) == ""
    assert targets.why_refused("http://[fd00::5]/", entries=["fd00::/8"]) == ""
    assert targets.why_refused("http://[::1]:9000/", entries=["[::1]"]) == ""
    assert targets.why_refused("http://169.254.169.254/", entries=["169.254.169.254/32"]) == ""
    # A name allowed may resolve anywhere; the same address under another name may not.
    dns["hooks.internal"] = ["10.0.0.7"]
    dns["other.internal"] = ["10.0.0.7"]
    assert targets.why_refused("http://hooks.internal/x", entries=["hooks.internal"]) == ""
    assert targets.why_refused("http://HOOKS.internal./x", entries=["hooks.internal"]) == ""
    assert "private" in targets.why_refused("http://other.internal/x", entries=["hooks.internal"])
    # A suffix: any name under it, not the name itself, nor one that merely ends alike.
    dns["a.corp.example"] = dns["corp.example"] = dns["evilcorp.example"] = ["10.0.0.8"]
    assert targets.why_refused("http://a.corp.example/", entries=["*.corp.example"]) == ""
    assert "private" in targets.why_refused("http://corp.example/", entries=["*.corp.example"])
    assert "private" in targets.why_refused("http://evilcorp.example/", entries=["*.corp.example"])


@pytest.mark.parametrize("url", [
    "http://[2002:7f00:1::1]:9000/",          # 6to4 of 127.0.0.1: a relay's, not this socket
    "http://[64:ff9b::7f00:1]:9000/",         # NAT64 of 127.0.0.1: a gateway's
    "http://[::127.0.0.1]:9000/",             # IPv4-compatible (deprecated): an IPv6 address of its own
    "http://[2002:a00:5::]/",                 # 6to4 of 10.0.0.5
])
def test_an_ipv4_allowance_never_admits_an_ipv6_address_that_merely_carries_it(url):
    """Only the IPv4-mapped form (::ffff:a.b.c.d) is the same socket as the IPv4 address; an allowance for
    127.0.0.1 or 10.0.0.5 admits that and nothing else that carries the IPv4 address inside an IPv6 one."""
    assert targets.why_refused(url, entries=["127.0.0.1", "10.0.0.5"]) != ""
    assert targets.why_refused(url.replace("7f00:1", "7f00:2"), entries=["127.0.0.0/8", "10.0.0.0/8"]) != ""
    assert targets.why_refused("http://[::ffff:10.0.0.5]/", entries=["10.0.0.5"]) == ""
    host = url.split("[")[1].split("]")[0]
    assert targets.why_refused(url, entries=[f"{host}/128"]) == ""  # an IPv6 allowance of its own admits it


def test_the_allowance_is_read_from_the_settings(settings):
    allow(settings)
    assert "loopback" in targets.why_refused("http://127.0.0.1:9/")
    allow(settings, "127.0.0.1", "10.0.0.0/8")
    assert targets.why_refused("http://127.0.0.1:9/") == targets.why_refused("http://10.1.1.1/") == ""


def test_the_database_port_is_refused_even_where_its_host_is_allowed(monkeypatch, dns):
    fake = SimpleNamespace(KEEPING_TIME={"ALLOW_TARGETS": ["127.0.0.0/8", "db.internal", "10.0.0.0/8"]}, DATABASES={
        "default": {"ENGINE": "django.db.backends.postgresql", "HOST": "127.0.0.1", "PORT": ""},
        "other": {"ENGINE": "django.db.backends.postgresql", "HOST": "db.internal", "PORT": "6432"},
        "file": {"ENGINE": "django.db.backends.sqlite3", "NAME": "/tmp/x.sqlite3"},
    })
    monkeypatch.setattr(targets, "settings", fake)
    dns["db.internal"] = ["10.0.0.9"]
    for url in ("http://127.0.0.1:5432/", "http://127.0.0.2:5432/", "http://[::1]:5432/", "http://localhost:5432/",
                "http://db.internal:6432/", "http://10.0.0.9:6432/", "http://[::ffff:10.0.0.9]:6432/"):
        assert "the database's own address" in targets.why_refused(url), url
    for url in ("http://127.0.0.1:5433/", "http://db.internal:5432/", "http://10.0.0.9:80/"):
        assert targets.why_refused(url) == "", url


# == made: the API, the CLI, the service functions ==============================================================


MADE_REFUSED = ["http://169.254.169.254/latest/meta-data/", "http://127.0.0.1:8080/hook", "http://2130706433/",
                "http://0177.0.0.1/", "http://0x7f.1/", "http://10.0.0.1/", "https://192.168.1.1:8443/",
                "http://172.20.0.1/", "http://0/", "http://localhost/"]
# A webhook endpoint's URL takes no IPv6 literal (invalid_url, timers/webhooks.py); a schedule's does.
IPV6_REFUSED = ["http://[::ffff:127.0.0.1]/", "http://[::1]:8080/", "http://[::]/", "https://[fd00::1]/",
                "http://[fe80::1]/"]


@pytest.mark.parametrize("url", MADE_REFUSED)
def test_api_a_webhook_endpoint_at_a_refused_address_is_400_invalid_target_and_nothing_is_written(api, settings,
                                                                                                    url):
    allow(settings)
    r = api.post("/webhook_endpoints", {"url": url, "enabled_events": ["*"]}, format="json")
    assert r.status_code == 400, r.content
    error = r.json()["error"]
    assert error["code"] == "invalid_target" and error["param"] == "url" and error["type"] == "invalid_request_error"
    assert "KT_ALLOW_TARGETS" in error["message"]
    assert not WebhookEndpoint.objects.exists()


def test_api_a_webhook_endpoint_moved_to_a_refused_address_is_400_and_unchanged(api, settings, brand):
    allow(settings, LOCAL)
    made = api.post("/webhook_endpoints", {"url": "http://127.0.0.1:9/h", "enabled_events": ["*"]}, format="json")
    assert made.status_code == 201, made.content
    allow(settings)
    for url in ("http://127.0.0.1:9/h", "http://169.254.169.254/"):
        r = api.post(f"/webhook_endpoints/{made.json()['id']}", {"url": url}, format="json")
        assert r.status_code == 400 and r.json()["error"]["code"] == "invalid_target", r.content
    assert WebhookEndpoint.objects.get().url == "http://127.0.0.1:9/h"


@pytest.mark.parametrize("url", MADE_REFUSED + IPV6_REFUSED)
def test_api_a_schedule_at_a_refused_address_is_400_invalid_target_and_nothing_is_written(api, settings, brand,
                                                                                            url):
    clock = test_clock_create(brand=brand, frozen_time=T0, name="targets")
    allow(settings)
    before = (Event.objects.count(), Timer.objects.count())
    r = api.post("/schedules", {"test_clock": clock.id, "spec": {"every": "1h"}, "target": {"url": url}},
                 format="json")
    assert r.status_code == 400, r.content
    error = r.json()["error"]
    assert error["code"] == "invalid_target" and error["param"] == "target.url", error
    assert "KT_ALLOW_TARGETS" in error["message"]
    assert not Schedule.objects.exists() and (Event.objects.count(), Timer.objects.count()) == before


def test_api_an_allowed_address_is_made(api, settings, brand):
    allow(settings, "127.0.0.0/8")
    clock = test_clock_create(brand=brand, frozen_time=T0, name="targets")
    r = api.post("/schedules", {"test_clock": clock.id, "spec": {"every": "1h"},
                                "target": {"url": "http://2130706433:9/fire"}}, format="json")
    assert r.status_code == 200, r.content
    r = api.post("/webhook_endpoints", {"url": "http://127.0.0.9:9/h", "enabled_events": ["*"]}, format="json")
    assert r.status_code == 201, r.content


def test_cli_a_webhook_endpoint_at_a_refused_address_is_one_line_invalid_target(brand, settings):
    allow(settings)
    with pytest.raises(CommandError) as err:
        call_command("webhooks", "create", "--brand", brand.name, "--url", "http://169.254.169.254/", "--events",
                     "*", stdout=StringIO())
    assert str(err.value).startswith("invalid_target: ") and "\n" not in str(err.value)
    assert not WebhookEndpoint.objects.exists()


# == sent: the address connected to is the address checked ======================================================
def _fire_one(brand, clock) -> None:
    timer_arm(brand=brand, key="job_t:task:t:1", owed_at=T0 + timedelta(minutes=1), domain=clock.id, handler="noop",
              data={})
    advance(clock.id, T0 + timedelta(minutes=2))


def test_send_a_webhook_to_a_name_that_now_resolves_to_a_refused_address_is_a_failed_try_and_nothing_arrives(
        brand, settings, dns, far):
    allow(settings)
    clock = test_clock_create(brand=brand, frozen_time=T0, name="targets")
    dns["hooks.example.test"] = ["93.184.216.34"]  # public when it is made
    endpoint = webhooks.endpoint_create(brand=brand, livemode=False, url=f"http://hooks.example.test:{far.port}/in",
                                        enabled_events=["timer.fired"])
    dns["hooks.example.test"] = [LOCAL]  # the far end's address when it is sent
    _fire_one(brand, clock)
    stats = outbox.deliver(endpoint.id)
    assert stats.sent == 0 and far.hosts == []
    attempt = WebhookAttempt.objects.get(endpoint=endpoint)
    assert attempt.status is None
    assert attempt.error.startswith("refused: hooks.example.test resolves to 127.0.0.1, a loopback address"), \
        attempt.error
    row = Outbox.objects.get(domain=endpoint.id)
    assert row.status == "sending" and row.next_try_at is not None and "refused" in row.error  # a backoff, no loop
    # Allowed, the same send arrives at the address it was checked at, under its name.
    allow(settings, LOCAL)
    Outbox.objects.filter(domain=endpoint.id).update(next_try_at=None)
    assert outbox.deliver(endpoint.id).sent == 1
    assert far.hosts == [f"hooks.example.test:{far.port}"]


def test_send_a_name_that_changes_its_answer_mid_send_is_connected_at_the_address_checked(brand, settings, dns, far):
    """DNS rebinding: the first answer is checked and allowed, every later one is refused. The POST goes to the
    first answer (the far end gets it) and the name is looked up once; a second lookup by the connection would
    have gone to 127.0.0.2, where nothing listens."""
    allow(settings, LOCAL)
    clock = test_clock_create(brand=brand, frozen_time=T0, name="targets")
    dns["rebind.example.test"] = [LOCAL]
    endpoint = webhooks.endpoint_create(brand=brand, livemode=False, url=f"http://rebind.example.test:{far.port}/",
                                        enabled_events=["timer.fired"])
    _fire_one(brand, clock)
    dns["rebind.example.test"] = [[LOCAL], ["127.0.0.2"]]
    dns.asked.clear()
    assert outbox.deliver(endpoint.id).sent == 1
    assert far.hosts == [f"rebind.example.test:{far.port}"] and dns.asked == {"rebind.example.test": 1}
    assert WebhookAttempt.objects.get(endpoint=endpoint).status == 200


def test_send_a_schedules_call_to_a_name_that_now_resolves_to_a_refused_address_is_dead_lettered_unsent(
        brand, settings, dns, far):
    allow(settings)
    clock = test_clock_create(brand=brand, frozen_time=T0, name="targets")
    dns["sched.example.test"] = ["93.184.216.34"]
    sch = schedule_create(brand=brand, domain=clock.id, spec={"every": "1h"},
                          target={"url": f"http://sched.example.test:{far.port}/fire", "retries": 3})
    dns["sched.example.test"] = ["169.254.169.254", LOCAL]  # every address is judged
    advance(clock.id, T0 + timedelta(hours=1, minutes=1))
    assert far.hosts == []
    letter = DeadLetter.objects.get(schedule=sch)
    assert "refused target: sched.example.test resolves to 169.254.169.254, a link-local address" in letter.error
    run = ScheduleRun.objects.get(schedule=sch)
    assert run.state == "closed" and run.outcome.startswith("refused · refused target")
    assert Outbox.objects.get(transport="schedule.http").status == "failed"  # for good: not retried


def test_send_a_kept_connection_is_never_used_for_a_name_that_now_resolves_elsewhere(settings, dns):
    """Connections are kept (timers/http.py) filed under the address they were opened to, and every send resolves
    and judges its host again: a kept connection is taken only under an address of the answer just judged, so
    a name that now resolves elsewhere gets a new connection there, and one refused now reaches nothing."""
    allow(settings, "127.0.0.0/8")
    a = KeepAlive()
    b = KeepAlive(a.port, host="127.0.0.2")  # the same port on another loopback address
    pool = Pool()
    url = f"http://kept.example.test:{a.port}/fire"

    def post(key: str) -> int:
        return send("POST", url, body=b"{}", headers={"Idempotency-Key": key}, timeout=5, pool=pool).status

    try:
        dns["kept.example.test"] = [LOCAL]
        assert post("k1") == 200 and post("k2") == 200 and a.connections == 1  # kept
        dns["kept.example.test"] = ["127.0.0.2"]
        assert post("k3") == 200 and set(b.acked) == {"k3"} and set(a.acked) == {"k1", "k2"}
        assert pool.idle() == {("http", "kept.example.test", a.port, LOCAL): 1,
                               ("http", "kept.example.test", a.port, "127.0.0.2"): 1}
        dns["kept.example.test"] = [LOCAL]  # back: its kept connection is used again
        assert post("k4") == 200 and a.connections == 1 and set(a.acked) == {"k1", "k2", "k4"}
        allow(settings, "127.0.0.2")  # 127.0.0.1 is refused now, kept connection or not
        with pytest.raises(targets.TargetRefused, match="resolves to 127.0.0.1, a loopback address"):
            post("k5")
        assert "k5" not in a.got and "k5" not in b.got
    finally:
        pool.clear()
        a.close()
        b.close()


def test_send_a_redirect_to_a_refused_address_is_refused(settings, far):
    """A 3xx is a connection like any other (schedules' calls and the outbox's follow them): refused, nothing
    sent there."""
    class Redirect(BaseHTTPRequestHandler):
        def log_message(self, *args) -> None:
            pass

        def do_GET(self) -> None:  # noqa: N802 - http.server's name
            self.send_response(302)
            self.send_header("Location", f"http://127.0.0.2:{far.port}/meta")
            self.send_header("Content-Length", "0")
            self.end_headers()

    server = ThreadingHTTPServer((LOCAL, 0), Redirect)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        allow(settings, LOCAL)
        with pytest.raises(targets.TargetRefused, match="127.0.0.2 is a loopback address"):
            send("GET", f"http://127.0.0.1:{server.server_address[1]}/302", timeout=5)
    finally:
        server.shutdown()
        server.server_close()
    assert far.hosts == []


def test_send_the_outbox_http_transport_is_held_to_the_rule(settings, far):
    t = transports.HttpTransport(f"http://127.0.0.1:{far.port}", timeout=5)
    allow(settings)
    with pytest.raises(targets.TargetRefused, match="loopback"):
        t.send("sub_1", {"x": 1})
    with pytest.raises(targets.TargetRefused):
        t.lookup("sub_1")
    assert far.hosts == []
    allow(settings, LOCAL)
    assert t.send("sub_1", {"x": 1}) == {"ok": True} and far.hosts == [f"127.0.0.1:{far.port}"]


def test_send_https_keeps_the_name_for_sni_and_the_certificate_while_connecting_to_the_checked_address(dns,
                                                                                                    monkeypatch):
    """The TLS handshake is asked for the URL's name, not the address (SNI, and the certificate checked
    against the name): the socket is opened to the checked address, then wrapped."""
    seen: dict = {}

    class Context:
        verify_mode, check_hostname = ssl.CERT_REQUIRED, True

        def set_alpn_protocols(self, protocols):  # urllib3 offers http/1.1 on every context it is handed
            pass

        def wrap_socket(self, sock, server_hostname=None):
            seen["sni"], seen["peer"] = server_hostname, sock.getpeername()[0]
            sock.close()
            raise OSError("stop here")

    server = socket.socket()
    server.bind((LOCAL, 0))
    server.listen(1)
    try:
        dns["tls.example.test"] = [LOCAL]
        pool = Pool(tls=Context())
        with pytest.raises(OSError, match="stop here"):  # the test settings allow 127.0.0.1
            send("GET", f"https://tls.example.test:{server.getsockname()[1]}/", timeout=5, pool=pool)
    finally:
        server.close()
    assert seen == {"sni": "tls.example.test", "peer": LOCAL}
