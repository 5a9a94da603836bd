"""What every bench does first: Django set up from the repository, with a throwaway key.

Run as ``python bench/<name>.py``, a bench has only ``bench/`` on its path; each imports this module by its
plain name (``from bench_django import setup_django``), as benches import each other.
"""

from __future__ import annotations

import os
import secrets
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def setup_django() -> None:
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "keeping_time.settings")
    # The settings refuse to load without a key (DEBUG stays off: it would keep every query in memory). A bench
    # signs nothing, so a throwaway key will do.
    os.environ.setdefault("SECRET_KEY", secrets.token_urlsafe(50))
    # Lapses send emails through Django's backend: the console one would print thousands of them.
    os.environ.setdefault("EMAIL_URL", "dummymail://")
    # A bench makes as many clocks and schedules as it measures (10,000 schedules), past any brand's quota.
    os.environ.setdefault("KT_QUOTA_TEST_CLOCKS", "off")
    os.environ.setdefault("KT_QUOTA_SCHEDULES", "off")
    import django

    django.setup()
