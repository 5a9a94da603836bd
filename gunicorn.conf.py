"""gunicorn's settings, read when it starts in this folder (``gunicorn keeping_time.wsgi``).

Its access log prints each request line, and the feed's and the portal link's tokens ride in the query: the
same filter as Django's loggers (keeping_time/log_filters.py) cuts them to their first characters, on the
access log and the error log alike.
"""

import os

wsgi_app = "keeping_time.wsgi:application"
bind = os.environ.get("GUNICORN_BIND", "127.0.0.1:8000")
# Sync workers wait on the database for much of a request (the feed's poll is one statement and little
# else), so more of them than cores keeps the cores busy: gunicorn's own advice, 2 x cores + 1.
_cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
workers = int(os.environ.get("WEB_CONCURRENCY", str(2 * _cores + 1)))
accesslog = os.environ.get("GUNICORN_ACCESSLOG", "-")

logconfig_dict = {
    "version": 1,
    "disable_existing_loggers": False,
    "filters": {"url_tokens": {"()": "keeping_time.log_filters.RedactURLTokens"}},
    "formatters": {"generic": {"format": "%(asctime)s [%(process)d] [%(levelname)s] %(message)s",
                               "datefmt": "[%Y-%m-%d %H:%M:%S %z]"}},
    "handlers": {
        "access": {"class": "logging.StreamHandler", "formatter": "generic", "stream": "ext://sys.stdout",
                   "filters": ["url_tokens"]},
        "error": {"class": "logging.StreamHandler", "formatter": "generic", "stream": "ext://sys.stderr",
                  "filters": ["url_tokens"]},
    },
    "root": {"level": "INFO", "handlers": ["error"]},  # gunicorn's defaults name a handler this replaces
    "loggers": {
        "gunicorn.access": {"level": "INFO", "handlers": ["access"], "propagate": False, "filters": ["url_tokens"]},
        "gunicorn.error": {"level": "INFO", "handlers": ["error"], "propagate": False, "filters": ["url_tokens"]},
    },
}
