"""One settings module, read from the environment (django-environ).

DATABASE_URL defaults to the embedded SQLite file; production and CI point it at PostgreSQL. SECRET_KEY
has no default: without one the settings refuse to load unless DEBUG is on (``scripts/demo`` writes one
to ``.env`` once per machine). The environment wins over ``.env``; KT_ENV_FILE names another file.
"""

import ipaddress
import os
import re
import sys
import warnings
from pathlib import Path

import environ
from django.core.exceptions import ImproperlyConfigured

BASE_DIR = Path(__file__).resolve().parent.parent

env = environ.Env(
    DEBUG=(bool, False),
    ALLOWED_HOSTS=(list, ["localhost", "127.0.0.1", "[::1]", "testserver"]),
)
environ.Env.read_env(os.environ.get("KT_ENV_FILE") or BASE_DIR / ".env", overwrite=False)

DEBUG = env("DEBUG")
SECRET_KEY = env("SECRET_KEY", default="")
if not SECRET_KEY:
    if not DEBUG:
        # A known key signs sessions and the admin's cookies for anyone who reads this file: never serve with one.
        raise ImproperlyConfigured(
            "SECRET_KEY is not set: export SECRET_KEY (or put it in .env), or set DEBUG=1 for a development run")
    # Django's own prefix for a development key: `manage.py check --deploy` flags it.
    SECRET_KEY = "django-insecure-keeping-time-debug-only"
elif not DEBUG and (len(SECRET_KEY) < 50 or len(set(SECRET_KEY)) < 5 or SECRET_KEY.startswith("django-insecure-")):
    # What `check --deploy` calls a weak key (security.W009), refused at the start rather than warned of.
    raise ImproperlyConfigured(
        "SECRET_KEY is too weak: it needs at least 50 characters, 5 of them different, and no 'django-insecure-' "
        "prefix (python -c 'import secrets; print(secrets.token_urlsafe(50))' makes one)")
ALLOWED_HOSTS = env("ALLOWED_HOSTS")

# Behind HTTPS (production): each from the environment, off by default so the demo serves plain http on
# 127.0.0.1. The README's production settings turn them all on; `manage.py check --deploy` is clean then.
SECURE_SSL_REDIRECT = env.bool("SECURE_SSL_REDIRECT", default=False)
# "HTTP_X_FORWARDED_PROTO,https" behind a proxy that sets the header (and strips a client's own).
_proxy_header = env.list("SECURE_PROXY_SSL_HEADER", default=[])
SECURE_PROXY_SSL_HEADER = tuple(_proxy_header) if len(_proxy_header) == 2 else None
SESSION_COOKIE_SECURE = env.bool("SESSION_COOKIE_SECURE", default=False)
CSRF_COOKIE_SECURE = env.bool("CSRF_COOKIE_SECURE", default=False)
SECURE_HSTS_SECONDS = env.int("SECURE_HSTS_SECONDS", default=0)
SECURE_HSTS_INCLUDE_SUBDOMAINS = env.bool("SECURE_HSTS_INCLUDE_SUBDOMAINS", default=False)
SECURE_HSTS_PRELOAD = env.bool("SECURE_HSTS_PRELOAD", default=False)
CSRF_TRUSTED_ORIGINS = env.list("CSRF_TRUSTED_ORIGINS", default=[])

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "rest_framework",
    "drf_spectacular",
    "drf_spectacular_sidecar",  # /docs: Redoc served from our own static files
    "timers",
    "calendars",
    "services",
    "portals",
    "agents",  # `manage.py mcp`: the agent tools over MCP
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",  # the admin's styling, the same in the demo and production
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
]

ROOT_URLCONF = "keeping_time.urls"
APPEND_SLASH = False

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    },
]

WSGI_APPLICATION = "keeping_time.wsgi.application"
ASGI_APPLICATION = "keeping_time.asgi.application"

DATABASES = {"default": env.db("DATABASE_URL", default=f"sqlite:///{BASE_DIR / 'db.sqlite3'}")}
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    # The tick writes in batches from one process; wait for the lock rather than fail.
    DATABASES["default"].setdefault("OPTIONS", {})["timeout"] = 30

DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

# A member's password (the welcome page, a reset) meets Django's validators; so does an owner's.
AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]

# The built .ics feeds, per change stamp (KEEPING_TIME["FEED_CACHE"]): each process's memory by default;
# CACHE_URL names a shared one (redis://…, pymemcache://…, dbcache://table) when processes should share.
CACHES = {"default": env.cache("CACHE_URL", default="locmemcache://"),
          # Sign-in tries per client address (timers/api/throttles.py): shared by every process, so the limit is
          # one under gunicorn's workers. Django's database cache by default, its table made by `migrate`.
          "sign_in": env.cache("KT_SIGN_IN_CACHE", default="dbcache://kt_sign_in_tries")}

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATIC_ROOT = BASE_DIR / "staticfiles"
# WhiteNoise serves static files from the apps' own folders (no collectstatic step for the demo); production
# may run collectstatic into STATIC_ROOT and serve the same URLs.
WHITENOISE_USE_FINDERS = True
# Until a collectstatic fills STATIC_ROOT, WhiteNoise warns once per start that it is missing: the finders serve.
warnings.filterwarnings("ignore", message="No directory at")
LOGIN_URL = "delivery:login"
# A brand's owners hold the owner console's permissions by their Membership (portals/owner/backends.py).
AUTHENTICATION_BACKENDS = ["django.contrib.auth.backends.ModelBackend", "portals.owner.backends.OwnerPermissions"]

REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": ["timers.api.auth.SecretKeyAuthentication"],
    "DEFAULT_PERMISSION_CLASSES": ["timers.api.auth.HasBrand"],
    "DEFAULT_RENDERER_CLASSES": ["rest_framework.renderers.JSONRenderer"],
    "DEFAULT_PARSER_CLASSES": ["rest_framework.parsers.JSONParser"],
    "EXCEPTION_HANDLER": "timers.api.errors.exception_handler",
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    "UNAUTHENTICATED_USER": None,
}

# Rate limits (timers/api/throttles.py): per secret key for the API, per client address for sign-ins (the
# customer portal's link, the delivery portal's and the owner console's logins); over one, 429 with
# Retry-After. "<n>/s", "<n>/min", "<n>/h", "<n>/day", or "off". KT_NUM_PROXIES: how many proxies in front
# append to X-Forwarded-For (0: the connection's address is the client's).
def _rate(name: str, default: str) -> str | None:
    value = env(name, default=default).strip()
    if value.lower() in ("off", "none", "0", ""):
        return None
    num, _, period = value.partition("/")
    if not (num.isdigit() and int(num) > 0 and period[:1] in ("s", "m", "h", "d")):
        raise ImproperlyConfigured(f"{name}={value!r}: a rate is <count>/s, /min, /h or /day (e.g. 100/s), or off")
    return value


REST_FRAMEWORK["DEFAULT_THROTTLE_RATES"] = {"api_key": _rate("KT_RATE_LIMIT", "100/s"),
                                            "sign_in": _rate("KT_SIGN_IN_RATE_LIMIT", "10/min")}
REST_FRAMEWORK["NUM_PROXIES"] = env.int("KT_NUM_PROXIES", default=0)

SPECTACULAR_SETTINGS = {
    "TITLE": "Keeping Time API",
    "DESCRIPTION": (
        "Timers, test clocks and the record; a brand's calendars, customers (subjects), subscriptions and "
        "orders. Authenticate with a secret key: `Authorization: Bearer sk_test_…` (test clocks) or "
        "`sk_live_…` (the live clock). Every POST takes an `Idempotency-Key`. Errors are "
        "`{\"error\": {\"type\", \"code\", \"message\", \"param\"}}`."
    ),
    "VERSION": "1.0.0",
    "SERVE_INCLUDE_SCHEMA": False,
    "REDOC_DIST": "SIDECAR",
    "POSTPROCESSING_HOOKS": [
        "drf_spectacular.hooks.postprocess_schema_enums",
        "timers.api.idempotency.openapi_header",
    ],
}
SPECTACULAR_SETTINGS["POSTPROCESSING_HOOKS"].append("timers.api.throttles.openapi_rate_limited")  # the 429s
SPECTACULAR_SETTINGS["POSTPROCESSING_HOOKS"].append("timers.api.test_clock_serializers.openapi_advance_body")  # to or span
SPECTACULAR_SETTINGS["POSTPROCESSING_HOOKS"].append("timers.api.parameters.openapi_no_other_parameters")  # only its own

# Services, by module path: each module declares one or more services.declare.Service.
KEEPING_TIME_SERVICES = env.list("KT_SERVICES", default=[
    "services.examples.apis_tax.annual_return",
    "services.examples.apis_tax.estimate",
    "services.examples.apis_tax.notice_response",
    "services.examples.apis_tax.tax_plan",
    "services.examples.api_forsale.deal",
    "services.examples.api_forsale.desk",
])



# KT_PEOPLE (a name → address map) is retired: people are records now. `migrate` reads it once, to move what it
# held onto customers' contacts and members' accounts (calendars' migration 0008), so only migrate starts with it.
if os.environ.get("KT_PEOPLE", "").strip() and sys.argv[1:2] != ["migrate"]:
    raise ImproperlyConfigured(
        "KT_PEOPLE is retired: who hears a date is a person record now, a customer's contact (POST "
        "/subjects/<id>/contacts, the console's customer page, `manage.py subjects contacts add`) or a member of "
        "the brand (their account's email). `manage.py migrate` moves what KT_PEOPLE held onto them; then unset it.")


# Email (notifications, members' one-time set-password links): SMTP from EMAIL_URL (smtp://user:pass@host:587,
# smtp+tls://…). The console is the default only with DEBUG on: it prints every email whole, a member's one-time
# link included, into the server's output and its logs, so with DEBUG off EMAIL_URL must be set, and
# EMAIL_URL=consolemail:// chooses the console knowingly (check --deploy still warns: timers.W001).
if not DEBUG and not env("EMAIL_URL", default=""):
    raise ImproperlyConfigured(
        "EMAIL_URL is not set: with DEBUG off, email would go to the console, which prints each member's one-time "
        "set-password link whole in the server's output. Set EMAIL_URL=smtp+tls://user:pass@host:587, or "
        "EMAIL_URL=consolemail:// to choose the console knowingly")
vars().update(env.email_url("EMAIL_URL", default="consolemail://"))
DEFAULT_FROM_EMAIL = env("DEFAULT_FROM_EMAIL", default="keeping-time@localhost")

# The tick: how many armed timers one claim query takes, and how deep a chain may go in one instant.
KEEPING_TIME = {
    "BATCH_SIZE": env.int("KT_BATCH_SIZE", default=2000),
    # A test clock's advance is a bulk job its caller waits on as a whole: larger batches (fewer reads of
    # what a batch's handlers share, fewer statements) at the price of holding the clock's row longer per
    # batch. The live tick keeps BATCH_SIZE, a turn's worth for one brand before the next. KT_BATCH_SIZE
    # alone sets both. Either way a batch ends within a third of LEASE_SECONDS (timers/engine.py).
    "ADVANCE_BATCH_SIZE": env.int("KT_ADVANCE_BATCH_SIZE", default=env.int("KT_BATCH_SIZE", default=50_000)),
    # The statements of a batch of a few timers (the guard, the claim, the writes) are prepared once per
    # PostgreSQL connection (timers/store.py); a pooler in transaction mode cannot keep them: KT_TICK_PREPARE=0.
    "TICK_PREPARE": env.bool("KT_TICK_PREPARE", default=True),
    "MAX_PASSES": 32,
    "LATE_AFTER_SECONDS": 300,
    # The host webcal:// feed URLs name (the subject calendar's .ics).
    "FEED_HOST": env("KT_FEED_HOST", default="localhost:8000"),
    # The feed answers If-None-Match / If-Modified-Since from its change stamp (calendars/feed_stamp.py)
    # without building the calendar, and keeps each built body per stamp in this cache (an alias of CACHES;
    # "" keeps none). KT_FEED_STAMP=0 builds every request and tags the body's hash, as before the stamp.
    "FEED_STAMP": env.bool("KT_FEED_STAMP", default=True),
    "FEED_CACHE": env("KT_FEED_CACHE", default="default"),
    "FEED_CACHE_SECONDS": env.int("KT_FEED_CACHE_SECONDS", default=24 * 3600),
    # The stamp's one statement is prepared per PostgreSQL connection; a pooler in transaction mode
    # (pgbouncer) cannot keep prepared statements: KT_FEED_PREPARE=0 there.
    "FEED_PREPARE": env.bool("KT_FEED_PREPARE", default=True),
    # The API's fixed statements (a key's lookup, an arming's writes) are prepared per PostgreSQL connection
    # (timers/prepared.py); KT_API_PREPARE=0 behind a pooler in transaction mode.
    "API_PREPARE": env.bool("KT_API_PREPARE", default=True),
    # Outside systems the outbox sends to, by name: "recording" (in this process) or an http(s)://
    # submissions URL (timers/transports.py, HttpTransport). Clock notices go to "notices".
    "TRANSPORTS": {"notices": env("KT_NOTICES_TRANSPORT", default="recording"),
                   # Notifications' emails, through Django's email backend (EMAIL_URL, below).
                   "email": env("KT_EMAIL_TRANSPORT", default="django-email")},
    # How long a sender's claim on an outbox row holds; a claim whose sender's session died frees at once.
    "OUTBOX_LEASE_SECONDS": env.float("KT_OUTBOX_LEASE_SECONDS", default=30.0),
    # The most sends of one claim in flight at once, on threads of their own (a schedule's HTTP calls). 4: a far
    # end that answers in well under a millisecond is bounded by this process's CPU, and 8 threads under one GIL
    # cost more of it than 4 (bench/README.md, schedule_year.py); 4 in flight at 50 ms a call still send 80 a
    # second, over twice what 10,000 schedules every 5 minutes ask. Raise it for far ends slower than that.
    "SEND_THREADS": env.int("KT_SEND_THREADS", default=4),
    # How long a worker's lease on a clock domain holds unrenewed (timers/lease.py): it is renewed at every
    # batch, and a worker that died is taken over this long after its last batch.
    "LEASE_SECONDS": env.float("KT_LEASE_SECONDS", default=30.0),
    # How long `tick --forever` runs a requested test-clock advance before it yields to its live turns (the next
    # slice goes on where it stopped; its sends still owed go to the worker's sender). 0: each advance to its end.
    "ADVANCE_SLICE_SECONDS": env.float("KT_ADVANCE_SLICE_SECONDS", default=1.0),
    # How many of a domain's lease terms (timers_leaseterm, a row per take) are kept: a live worker takes a
    # brand's lease for every turn, so the history is cut back to the newest this many as it grows.
    "LEASE_TERMS_KEPT": env.int("KT_LEASE_TERMS_KEPT", default=1000),
    # How many batches a brand's live clock runs in its turn before the loop moves to the next owed one.
    "LIVE_TURN_BATCHES": env.int("KT_LIVE_TURN_BATCHES", default=1),
    # Webhook endpoints (timers/webhooks.py): a failed delivery is tried again after BASE seconds, doubling up
    # to CAP, until WINDOW seconds after its event (three days, as Stripe's), then failed. Tests shrink them.
    "WEBHOOK_RETRY_BASE_SECONDS": env.float("KT_WEBHOOK_RETRY_BASE_SECONDS", default=60.0),
    "WEBHOOK_RETRY_CAP_SECONDS": env.float("KT_WEBHOOK_RETRY_CAP_SECONDS", default=6 * 3600.0),
    "WEBHOOK_RETRY_WINDOW_SECONDS": env.float("KT_WEBHOOK_RETRY_WINDOW_SECONDS", default=3 * 86400.0),
    # How long one delivery waits for its answer.
    "WEBHOOK_TIMEOUT_SECONDS": env.float("KT_WEBHOOK_TIMEOUT_SECONDS", default=10.0),
}

# Quotas per brand and mode (timers/quotas.py): past one, a create is 429 quota_exceeded naming it. Counts (a test
# key's test clocks; each mode's schedules and webhook endpoints) and spans (the shortest period a schedule may
# fire at; the furthest one advance may move a test clock), each "off" for none.
def _quota(name: str, default: str, *, span: bool = False) -> int | str:
    value = env(name, default=default).strip()
    if value.lower() in ("off", "none", "0", ""):
        return "" if span else 0
    if span and re.fullmatch(r"[1-9][0-9]{0,5}(s|m|min|h|d|w|mo|y)", value):
        return value
    if not span and value.isdigit():
        return int(value)
    raise ImproperlyConfigured(f"{name}={value!r}: " + ("a span such as 1m, 30s or 10y" if span else "a count") +
                               ", or off")


KEEPING_TIME["QUOTAS"] = {
    "test_clocks": _quota("KT_QUOTA_TEST_CLOCKS", "100"),
    "schedules": _quota("KT_QUOTA_SCHEDULES", "1000"),
    "webhook_endpoints": _quota("KT_QUOTA_WEBHOOK_ENDPOINTS", "16"),
    "schedule_period": _quota("KT_QUOTA_SCHEDULE_PERIOD", "1m", span=True),
    "advance": _quota("KT_QUOTA_ADVANCE", "10y", span=True),
}


# Where outside calls may go (timers/targets.py): schedules' HTTP targets, webhook endpoints and the outbox's
# http(s) transports are refused at loopback, link-local, private, unspecified and other non-public addresses,
# and at the database's own host:port, unless KT_ALLOW_TARGETS names them: comma-separated host names
# (hooks.internal, *.corp.example), addresses and CIDRs (127.0.0.1, ::1, 10.0.0.0/8). The database's port stays
# refused. DEBUG (a trial on this machine: the quickstart's listener) allows loopback unless it is set.
# KT_WEBHOOK_PRIVATE_HOSTS is no longer read.
def _allow_targets(entries: list[str]) -> list[str]:
    entries = [e.strip() for e in entries if e.strip()]
    for entry in entries:
        try:
            ipaddress.ip_network(entry.strip("[]"), strict=False)
        except ValueError:
            if not re.fullmatch(r"(\*\.)?[A-Za-z0-9_][A-Za-z0-9_.-]{0,252}", entry):
                raise ImproperlyConfigured(f"KT_ALLOW_TARGETS: {entry!r} is neither a host name (*.example.com "
                                           "for a suffix) nor an address or CIDR") from None
    return entries


KEEPING_TIME["ALLOW_TARGETS"] = _allow_targets(env.list("KT_ALLOW_TARGETS", default=["127.0.0.1", "::1"] if DEBUG else []))

# /metrics (timers/metrics.py) answers a scraper sending "Authorization: Bearer <METRICS_TOKEN>", or a
# superuser's session; with no token set, only a superuser's session.
METRICS_TOKEN = env("METRICS_TOKEN", default="")

# The feed and the portal take their secret in the URL (?token=…): every logger that prints a request line
# or a URL logs only the token's first characters. Logger filters see only records logged on that logger,
# so the handlers carry the filter too (records propagated from any other logger).
LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "filters": {
        "url_tokens": {"()": "keeping_time.log_filters.RedactURLTokens"},
    },
    "formatters": {
        # As Django's default for runserver's access log.
        "django.server": {"()": "django.utils.log.ServerFormatter", "format": "[{server_time}] {message}",
                          "style": "{"},
    },
    "handlers": {
        "console": {"class": "logging.StreamHandler", "filters": ["url_tokens"]},
        "django.server": {"level": "INFO", "class": "logging.StreamHandler", "formatter": "django.server",
                          "filters": ["url_tokens"]},
    },
    "loggers": {
        "django.server": {"handlers": ["django.server"], "level": "INFO", "propagate": False,
                          "filters": ["url_tokens"]},
        "django.request": {"filters": ["url_tokens"]},
    },
    "root": {"handlers": ["console"], "level": env("LOG_LEVEL", default="WARNING")},
}
