"""Settings that keep secrets: no start without a SECRET_KEY unless DEBUG, and no whole feed token in a log."""

from __future__ import annotations

import logging
import os
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest
from django.core.handlers.wsgi import WSGIHandler
from django.core.servers.basehttp import WSGIRequestHandler, WSGIServer
from django.db import connection

from calendars.feed_tokens import subject_feed_rotate
from keeping_time.log_filters import RedactURLTokens, redact
from tests.conftest import at
from tests.support import ROOT
from tests.support.acme import acme_subject
from timers.tenants import brand_get_or_create
from timers.test_clocks import test_clock_create

pytestmark = pytest.mark.processes

START = "import django; django.setup(); from django.conf import settings; print('started', settings.DEBUG)"


# -- SECRET_KEY --------------------------------------------------------------------------------------------
def _env(tmp_path: Path, env_file: str = "", **extra: str) -> dict:
    """The environment of a fresh process on keeping_time.settings: no SECRET_KEY, no DEBUG, and an env file
    of our own (a developer's .env must not hand the process a key)."""
    env = {k: v for k, v in os.environ.items() if k not in ("SECRET_KEY", "DEBUG")}
    path = tmp_path / "test.env"
    path.write_text(env_file)
    env.update({"KT_ENV_FILE": str(path), "DJANGO_SETTINGS_MODULE": "keeping_time.settings",
                "DATABASE_URL": f"sqlite:///{tmp_path / 'db.sqlite3'}", **extra})
    return env


def _run(env: dict, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)


def _refused(p: subprocess.CompletedProcess) -> str:
    assert p.returncode != 0, p.stdout
    last = p.stderr.strip().splitlines()[-1]
    assert last.startswith("django.core.exceptions.ImproperlyConfigured: SECRET_KEY is not set"), p.stderr
    return last


@pytest.mark.parametrize("extra", [{}, {"DEBUG": "0"}, {"SECRET_KEY": ""}, {"DEBUG": "false", "SECRET_KEY": ""}])
def test_without_a_secret_key_the_settings_refuse_to_load(tmp_path, extra):
    _refused(_run(_env(tmp_path, **extra), "-c", START))


def test_without_a_secret_key_manage_py_refuses_to_start(tmp_path):
    message = _refused(_run(_env(tmp_path), "manage.py", "check"))
    assert "DEBUG=1" in message  # the way out, on the same line


@pytest.mark.parametrize("extra", [{"DEBUG": "1"}, {"DEBUG": "true", "SECRET_KEY": ""}])
def test_with_debug_on_it_starts_without_a_key(tmp_path, extra):
    p = _run(_env(tmp_path, **extra), "-c", START)
    assert p.returncode == 0 and p.stdout.strip() == "started True", p.stderr


def test_with_a_key_in_the_environment_or_the_env_file_it_starts(tmp_path):
    p = _run(_env(tmp_path, SECRET_KEY="k7Qz9" * 11), "-c", START)
    assert p.returncode == 0 and p.stdout.strip() == "started False", p.stderr
    # scripts/demo's way: a key written once to .env.
    p = _run(_env(tmp_path, env_file="SECRET_KEY=" + "e5Wx2" * 11 + "\n"), "manage.py", "check")
    assert p.returncode == 0, p.stderr


@pytest.mark.parametrize("key", ["short-but-varied-key-0123456789", "ab" * 30, "django-insecure-" + "x1y2z3" * 9])
def test_a_weak_secret_key_stops_the_start_unless_debug(tmp_path, key):
    p = _run(_env(tmp_path, SECRET_KEY=key), "manage.py", "check")
    assert p.returncode != 0
    last = p.stderr.strip().splitlines()[-1]
    assert last.startswith("django.core.exceptions.ImproperlyConfigured: SECRET_KEY is too weak"), p.stderr
    assert _run(_env(tmp_path, SECRET_KEY=key, DEBUG="1"), "-c", START).returncode == 0


# The production settings the README documents (README.md, "Production"): check --deploy has nothing to say.
PRODUCTION = {"SECRET_KEY": "pr0d-Keeping-Time_" * 3, "ALLOWED_HOSTS": "time.example.com",
              "SECURE_SSL_REDIRECT": "1", "SECURE_PROXY_SSL_HEADER": "HTTP_X_FORWARDED_PROTO,https",
              "SESSION_COOKIE_SECURE": "1", "CSRF_COOKIE_SECURE": "1", "SECURE_HSTS_SECONDS": "31536000",
              "SECURE_HSTS_INCLUDE_SUBDOMAINS": "1", "SECURE_HSTS_PRELOAD": "1",
              "CSRF_TRUSTED_ORIGINS": "https://time.example.com",
              "EMAIL_URL": "smtp+tls://keeping-time:pass@smtp.example.com:587"}


def test_check_deploy_is_clean_under_the_documented_production_settings(tmp_path):
    readme = (ROOT / "README.md").read_text()
    for name in PRODUCTION:
        assert name in readme, f"README's production settings leave out {name}"
    p = _run(_env(tmp_path, **PRODUCTION), "manage.py", "check", "--deploy", "--fail-level", "WARNING")
    assert p.returncode == 0, p.stdout + p.stderr
    assert "no issues" in p.stdout
    # Without them, check --deploy says what is missing (the test can fail).
    bare = _run(_env(tmp_path, SECRET_KEY=PRODUCTION["SECRET_KEY"]), "manage.py", "check", "--deploy",
                "--fail-level", "WARNING")
    assert bare.returncode != 0 and "security.W004" in bare.stderr + bare.stdout


def test_passwords_meet_djangos_validators():
    from django.contrib.auth.password_validation import validate_password
    from django.core.exceptions import ValidationError

    with pytest.raises(ValidationError):
        validate_password("password")
    with pytest.raises(ValidationError):
        validate_password("12345678901")
    validate_password("correct horse battery staple")


# -- feed tokens in logs -----------------------------------------------------------------------------------
TOKEN = "abcdefSECRETSECRETSECRETSECRET0123456789"
SHOWN = "abcdef…"


class Capture(logging.Handler):
    def __init__(self):
        super().__init__()
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


@pytest.fixture
def captured():
    """A handler on django.server and django.request; what it receives has passed the loggers' filters (from
    settings.LOGGING, not added here)."""
    handler = Capture()
    loggers = [logging.getLogger("django.server"), logging.getLogger("django.request")]
    for logger in loggers:
        logger.addHandler(handler)
    yield handler
    for logger in loggers:
        logger.removeHandler(handler)


def _leaks(records: list[logging.LogRecord]) -> list[str]:
    return [r.getMessage() for r in records if TOKEN in r.getMessage() or TOKEN in str(r.args)]


def test_redact_keeps_a_prefix_of_every_token_parameter():
    assert redact(f"GET /subjects/sbj_1/calendar.ics?token={TOKEN} HTTP/1.1") == (
        f"GET /subjects/sbj_1/calendar.ics?token={SHOWN} HTTP/1.1")
    assert redact(f"/portal/subjects/sbj_1/calendar?from=2027&token={TOKEN}&x=1") == (
        f"/portal/subjects/sbj_1/calendar?from=2027&token={SHOWN}&x=1")
    assert redact(f"/a?access_token={TOKEN}") == f"/a?access_token={SHOWN}"
    assert redact("/a?token=short") == "/a?token=short"  # nothing left to hide
    assert redact("/a?tokens=1&q=token") == "/a?tokens=1&q=token"
    assert redact(f'"GET /portal/customer/session/{TOKEN} HTTP/1.1" 302') == (
        f'"GET /portal/customer/session/{SHOWN} HTTP/1.1" 302')
    assert redact(f"/portal/delivery/welcome/MQ/{TOKEN}?next=/") == f"/portal/delivery/welcome/MQ/{SHOWN}?next=/"


def test_the_access_log_of_runserver_shows_only_a_prefix_of_the_token(transactional_db, captured):
    """runserver's own request handler (django.core.servers.basehttp.WSGIRequestHandler) serving the real
    app: the django.server record's args are rewritten, and so is the line its configured handler prints."""
    brand_tc = test_clock_create(brand=_brand(), frozen_time=at("2027-06-01T12:00Z"))
    subject = acme_subject(brand_tc.brand, brand_tc.id)
    token = subject_feed_rotate(subject=subject)
    httpd = WSGIServer(("127.0.0.1", 0), WSGIRequestHandler, ipv6=False)
    # runserver's app is get_internal_wsgi_application(), which runs django.setup() again on first import and
    # so reconfigures logging (dropping the capture); the handler it builds is this one.
    httpd.set_app(WSGIHandler())
    server = threading.Thread(target=lambda: [httpd.handle_request() for _ in range(2)], daemon=True)
    server.start()
    base = f"http://127.0.0.1:{httpd.server_address[1]}"
    try:
        with urllib.request.urlopen(f"{base}/subjects/{subject.id}/calendar.ics?token={token}", timeout=30) as r:
            assert r.status == 200
        with pytest.raises(urllib.error.HTTPError) as err:  # a wrong token: a 404, logged as a warning
            urllib.request.urlopen(f"{base}/portal/subjects/{subject.id}/calendar?token={TOKEN}", timeout=30)
        assert err.value.code == 404
        server.join(timeout=30)
    finally:
        httpd.server_close()
    lines = [r for r in captured.records if r.name == "django.server"]
    assert len(lines) == 2, [r.getMessage() for r in captured.records]
    ok, missing = lines
    assert ok.args[0] == f"GET /subjects/{subject.id}/calendar.ics?token={token[:6]}… HTTP/1.1", ok.args
    assert missing.args[0] == f"GET /portal/subjects/{subject.id}/calendar?token={SHOWN} HTTP/1.1"
    assert token not in ok.getMessage() and not _leaks(captured.records)
    # What the configured handler writes (runserver's "[time] "GET …" 200 n" line).
    printer = logging.getLogger("django.server").handlers[0]
    assert f"?token={token[:6]}… HTTP/1.1\" 200" in printer.format(ok) and token not in printer.format(ok)


def test_request_log_records_with_a_url_show_only_a_prefix(client, captured, db):
    # Through the test client: the feed's 404 is logged by django.request with the path only.
    r = client.get("/subjects/sbj_nope/calendar.ics", {"token": TOKEN})
    assert r.status_code == 404
    assert any(rec.name == "django.request" for rec in captured.records)
    # A record that does carry the URL, in its message or its args, is rewritten before any handler sees it.
    logger = logging.getLogger("django.request")
    logger.warning("Forbidden (%s): %s", "token", f"/portal/subjects/sbj_1/calendar?token={TOKEN}")
    logger.warning(f"Bad Request: /subjects/sbj_1/calendar.ics?token={TOKEN}")
    *_, with_args, in_message = captured.records
    assert with_args.args == ("token", f"/portal/subjects/sbj_1/calendar?token={SHOWN}")
    assert in_message.getMessage() == f"Bad Request: /subjects/sbj_1/calendar.ics?token={SHOWN}"
    assert not _leaks(captured.records)


def test_the_filter_rewrites_mapping_args_and_keeps_every_record():
    record = logging.LogRecord("x", logging.INFO, __file__, 1, "%(url)s", None, None)
    record.args = {"url": f"/a?token={TOKEN}"}
    assert RedactURLTokens().filter(record) is True and record.getMessage() == f"/a?token={SHOWN}"


@pytest.mark.skipif(os.environ.get("DATABASE_URL", "").startswith("sqlite"),
                    reason="the process reads the test database: PostgreSQL only")
def test_manage_py_runserver_prints_no_whole_token(transactional_db, tmp_path):
    """The real thing: `manage.py runserver` in its own process, its stderr read back."""
    brand_tc = test_clock_create(brand=_brand(), frozen_time=at("2027-06-01T12:00Z"))
    subject = acme_subject(brand_tc.brand, brand_tc.id)
    token = subject_feed_rotate(subject=subject)
    s = connection.settings_dict
    env = _env(tmp_path, SECRET_KEY="r9Tb4" * 11,
               DATABASE_URL=f"postgres://{s['USER']}@{s['HOST'] or '127.0.0.1'}:{s['PORT'] or 5432}/{s['NAME']}")
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    # --nothreading: one request at a time, so the second request below is served only after the first one's
    # access line is written (terminating right after the first 200 raced that line under load).
    proc = subprocess.Popen([sys.executable, "manage.py", "runserver", f"127.0.0.1:{port}", "--noreload",
                             "--nothreading"], cwd=ROOT,
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        url = f"http://127.0.0.1:{port}/subjects/{subject.id}/calendar.ics?token={token}"
        _first_200(url, proc, "runserver")
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/static/admin/css/base.css", timeout=10) as r:
            assert r.status == 200  # served by WhiteNoise with DEBUG off
    finally:
        proc.terminate()
        out, err = proc.communicate(timeout=30)
    assert f"GET /subjects/{subject.id}/calendar.ics?token={token[:6]}… HTTP/1.1\" 200" in err, err
    assert token not in err and token not in out


def _first_200(url: str, proc: subprocess.Popen, server: str) -> None:
    """Wait (a minute at most) until the server just started answers ``url`` with a 200."""
    deadline = time.monotonic() + 60
    while True:
        try:
            with urllib.request.urlopen(url, timeout=10) as r:
                assert r.status == 200
            return
        except (urllib.error.URLError, ConnectionError):
            assert time.monotonic() < deadline and proc.poll() is None, f"{server} did not start"
            time.sleep(0.2)


def _brand():
    return brand_get_or_create(name="apis.logs")


@pytest.mark.skipif(os.environ.get("DATABASE_URL", "").startswith("sqlite"),
                    reason="the process reads the test database: PostgreSQL only")
def test_gunicorn_prints_no_whole_token(transactional_db, tmp_path):
    """The production server, as the README starts it (gunicorn.conf.py read from the project's folder): its
    access log cuts the feed's token and the portal link's, in the request line and the query atom alike."""
    from services.portal_sessions import portal_session_create

    brand_tc = test_clock_create(brand=_brand(), frozen_time=at("2027-06-01T12:00Z"))
    subject = acme_subject(brand_tc.brand, brand_tc.id)
    token = subject_feed_rotate(subject=subject)
    _, portal_path = portal_session_create(brand=subject.brand, subject=subject)
    portal_token = portal_path.split("token=", 1)[1]
    s = connection.settings_dict
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    # Its own count of sign-in tries: the test database's cache table keeps other tests' tries from 127.0.0.1,
    # which the production rate (10/min) would count against this process's requests (429).
    env = _env(tmp_path, SECRET_KEY="r9Tb4" * 11, GUNICORN_BIND=f"127.0.0.1:{port}", WEB_CONCURRENCY="1",
               KT_SIGN_IN_CACHE="locmemcache://",
               DATABASE_URL=f"postgres://{s['USER']}@{s['HOST'] or '127.0.0.1'}:{s['PORT'] or 5432}/{s['NAME']}")
    # %(q)s prints the bare query string: the format names it, so the test sees that atom cut too.
    proc = subprocess.Popen([str(Path(sys.executable).with_name("gunicorn")),
                             "--access-logformat", '%(h)s "%(r)s" %(s)s q=%(q)s'], cwd=ROOT, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    opener = urllib.request.build_opener(type("NoRedirect", (urllib.request.HTTPRedirectHandler,),
                                              {"redirect_request": lambda *a, **k: None}))
    try:
        url = f"http://127.0.0.1:{port}/subjects/{subject.id}/calendar.ics?token={token}"
        _first_200(url, proc, "gunicorn")
        try:
            opener.open(f"http://127.0.0.1:{port}{portal_path}", timeout=10)
        except urllib.error.HTTPError as e:
            assert e.code == 302  # signed in, and off to the clean URL
        time.sleep(0.5)  # the access line is written after the response
    finally:
        proc.terminate()
        out, err = proc.communicate(timeout=30)
    log = out + err
    assert f"calendar.ics?token={token[:6]}… HTTP/1.1\" 200 q=token={token[:6]}…" in log, log
    assert f"/portal/customer/session?token={portal_token[:6]}… HTTP/1.1\" 302" in log, log
    assert token not in log and portal_token not in log


@pytest.mark.skipif(os.environ.get("DATABASE_URL", "").startswith("sqlite"),
                    reason="the process reads the test database: PostgreSQL only")
def test_gunicorn_prints_no_whole_api_key(transactional_db, tmp_path):
    """`curl -u "$KEY:"`, as the quickstart calls the API: gunicorn's access log (its default format, which
    prints Basic's user, plus the Authorization and Cookie headers) shows the key's first 12 characters only,
    the prefix the console shows for it; a Bearer key likewise."""
    import base64

    from timers.tenants import api_key_create

    _, key = api_key_create(brand=_brand())
    s = connection.settings_dict
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    # Its own count of sign-in tries: the test database's cache table keeps other tests' tries from 127.0.0.1,
    # which the production rate (10/min) would count against this process's requests (429).
    env = _env(tmp_path, SECRET_KEY="r9Tb4" * 11, GUNICORN_BIND=f"127.0.0.1:{port}", WEB_CONCURRENCY="1",
               KT_SIGN_IN_CACHE="locmemcache://",
               DATABASE_URL=f"postgres://{s['USER']}@{s['HOST'] or '127.0.0.1'}:{s['PORT'] or 5432}/{s['NAME']}")
    default = '%(h)s %(l)s %(u)s %(t)s "%(r)s" %(s)s %(b)s "%(f)s" "%(a)s"'  # gunicorn's own
    proc = subprocess.Popen([str(Path(sys.executable).with_name("gunicorn")), "--access-logformat",
                             default + " auth=%({authorization}i)s missing=%({x-none}i)s"], cwd=ROOT, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    basic = "Basic " + base64.b64encode(f"{key}:".encode()).decode()
    try:
        _first_200(f"http://127.0.0.1:{port}/static/admin/css/base.css", proc, "gunicorn")
        for header in (basic, f"Bearer {key}"):
            req = urllib.request.Request(f"http://127.0.0.1:{port}/test_clocks?limit=1",
                                         headers={"Authorization": header})
            with urllib.request.urlopen(req, timeout=10) as r:
                assert r.status == 200
        time.sleep(0.5)  # the access line is written after the response
    finally:
        proc.terminate()
        out, err = proc.communicate(timeout=30)
    log = out + err
    lines = [line for line in log.splitlines() if "/test_clocks?limit=1" in line]
    assert len(lines) == 2, log
    assert f" - {key[:12]}… [" in lines[0] and f"auth=Basic {basic[6:12]}…" in lines[0], lines[0]
    assert f"auth=Bearer {key[:12]}…" in lines[1] and "missing=-" in lines[1], lines[1]
    assert key not in log and key[12:20] not in log and basic[6:] not in log, log


def test_every_logger_the_project_configures_cuts_an_api_key(caplog):
    """Django's loggers and their handlers carry the same filter: a key in a message or its arguments is cut."""
    from django.conf import settings

    key, secret = "sk_live_" + "Q" * 43, "whsec_" + "W" * 40
    for name, conf in settings.LOGGING["handlers"].items():
        assert "url_tokens" in conf.get("filters", ()), name
    record = logging.LogRecord("django.request", logging.WARNING, __file__, 1, f"Unauthorized: {key} %s", (secret,),
                               None)
    assert RedactURLTokens().filter(record) is True
    assert record.getMessage() == f"Unauthorized: {key[:12]}… {secret[:12]}…"
    assert redact(f"key={key}") == f"key={key[:12]}…"


# -- email that prints its links -----------------------------------------------------------------------------
def test_production_refuses_to_start_with_the_console_email_backend_unless_email_url_chooses_it(tmp_path):
    """The console backend prints a member's one-time set-password link whole: with DEBUG off, no start without
    EMAIL_URL; EMAIL_URL=consolemail:// starts, knowingly, and check --deploy says why it should not (timers.W001)."""
    key = PRODUCTION["SECRET_KEY"]
    env = _env(tmp_path, SECRET_KEY=key)
    env.pop("EMAIL_URL", None)
    p = _run(env, "-c", START)
    assert p.returncode != 0, p.stdout
    last = p.stderr.strip().splitlines()[-1]
    assert last.startswith("django.core.exceptions.ImproperlyConfigured: EMAIL_URL is not set"), p.stderr
    assert "consolemail://" in last and "set-password link" in last
    assert _run({**env, "DEBUG": "1"}, "-c", START).returncode == 0  # a trial on this machine
    assert _run({**env, "EMAIL_URL": "consolemail://"}, "-c", START).returncode == 0
    production = {k: v for k, v in PRODUCTION.items() if k != "EMAIL_URL"}
    chosen = _run(_env(tmp_path, **production, EMAIL_URL="consolemail://"), "manage.py", "check", "--deploy",
                  "--fail-level", "WARNING")
    said = chosen.stdout + chosen.stderr
    assert chosen.returncode != 0 and "timers.W001" in said and "set-password link" in said, said
