"""A subject's history is read on event_domain_subject, however big the record and whatever the statistics say.

The record only grows (docs/scaling.md, "The record at 10M events"). Before 0012 a read of one subject's
events had no index of its own: the owner console's at-risk jobs walked the brand's whole ``job.at_risk``
record on event_brand_type, and a subject's history in order walked the domain's record on
event_domain_seq: 100x and 140x slower at 10M events than at 10k (bench/record_growth.py). Here the record
holds many subjects over many domains, and each shape must be an index scan (or a bitmap) on
event_domain_subject and no Seq Scan, never analyzed (the history; the at-risk read: see below), analyzed while
young, and analyzed (PostgreSQL only).
"""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest
from django.db import connection

from portals.owner.selectors import in_as_of
from tests.support.plans import analyze, check, forget_statistics
from timers.models import Event

pytestmark = [pytest.mark.postgresql("plans are PostgreSQL's"), pytest.mark.django_db]

HOT = "tc_hot"
AT = datetime(2027, 1, 20, 14, tzinfo=UTC)


def fill(brand, n: int, tag: str) -> None:
    """``n`` events over 40 domains and the hot one (every 7th row), about 20 a subject, job.at_risk 1 in 30,
    fired in seq order: a year's record in miniature."""
    with connection.cursor() as cur:
        cur.execute(
            """INSERT INTO timers_event (id, domain, brand_id, type, subject, owed_at, key, data, fired_at)
               SELECT 'evt_' || %(tag)s || g, CASE WHEN g %% 7 = 0 THEN %(hot)s ELSE 'tc_other' || (g %% 40) END,
                      %(b)s, CASE WHEN g %% 30 = 0 THEN 'job.at_risk' ELSE 'timer.fired' END,
                      'job_' || %(tag)s || (g / 140), %(t)s, 'job_' || %(tag)s || (g / 140) || ':rung:notice 30d:2027',
                      '{}', %(t)s + make_interval(secs => g)
               FROM generate_series(1, %(n)s) g""", {"tag": tag, "hot": HOT, "b": brand.id, "t": AT, "n": n})


def plan(qs) -> dict:
    return json.loads(qs.explain(format="json"))[0]["Plan"]


@pytest.mark.parametrize("state", ["never", "stale", "fresh"])
def test_a_subjects_history_reads_its_own_index(brand, state):
    if state == "never":
        forget_statistics()
    if state == "stale":
        fill(brand, 500, "y")  # analyzed young: a few subjects, each a large share of the record
        analyze()
    fill(brand, 60_000, "p")
    if state == "fresh":
        analyze()
    subjects = ["job_p140", "job_p280"]  # each with events on the hot domain
    assert Event.objects.filter(domain=HOT, subject__in=subjects).count() >= 2 * 19

    # The owner console's at-risk jobs (portals/owner/risks.py, dates_at_risk), narrowed as it narrows.
    # Never analyzed, the planner prices event_brand_type (brand, type) below this (its default selectivities
    # favour the one-value brand over the subject IN list): a finding, in docs/scaling.md.
    at = type("AsOf", (), {"domain": HOT, "brand_ids": frozenset({brand.id})})()
    at_risk = in_as_of(Event.objects.filter(type="job.at_risk", subject__in=subjects), at).values_list("subject", flat=True)
    if state != "never":
        check(plan(at_risk), "event_domain_subject", ordered=False)
    # A subject's whole history, in record order: a few rows, which the planner may fetch through a bitmap
    # and sort; never the domain's whole record in seq order.
    history = Event.objects.filter(domain=HOT, subject=subjects[0]).order_by("seq").values_list("seq", "type", "key")
    check(plan(history), "event_domain_subject", ordered=False)
    assert [s for s, _, _ in history] == sorted(s for s, _, _ in history)
