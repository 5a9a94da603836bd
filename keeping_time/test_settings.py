"""Test settings: PostgreSQL by default (what CI runs), SQLite when DATABASE_URL says so."""

import os

os.environ.setdefault("DATABASE_URL", "postgres://postgres@127.0.0.1:5432/keeping_time")
# The settings refuse to load without a key (DEBUG is off here, as in production). This one is put in the
# environment, so the processes the tests start with keeping_time.settings (tests/timers/test_concurrency.py) have
# it too; it signs nothing outside a test run.
os.environ.setdefault("SECRET_KEY", "keeping-time-tests-only-not-a-secret-0123456789-abcdefghij")
# Production settings refuse to start without EMAIL_URL (DEBUG is off here); pytest-django swaps in its
# in-memory backend, and the processes the tests start print to the console, knowingly.
os.environ.setdefault("EMAIL_URL", "consolemail://")
os.environ.setdefault("KT_ALLOW_TARGETS", "127.0.0.1,::1")  # the tests' far ends and receivers, their processes' too

from .settings import *  # noqa: E402,F403

PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
# Advances in batches of BATCH_SIZE, as tests set it (small batches put a batch's edge where a test wants it);
# a test of the advance's own size sets ADVANCE_BATCH_SIZE.
KEEPING_TIME = {**KEEPING_TIME, "ADVANCE_BATCH_SIZE": None}  # noqa: F405
DEBUG = False
# Rate limits out of the way of every other test (thousands of calls a second with one key, every login from
# 127.0.0.1), yet counted, so the throttles run on every request; tests/timers/test_rate_limits.py sets its own.
REST_FRAMEWORK = {**REST_FRAMEWORK,  # noqa: F405
                  "DEFAULT_THROTTLE_RATES": {"api_key": "1000000/s", "sign_in": "1000000/min"}}
