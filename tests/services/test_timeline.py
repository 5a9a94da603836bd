"""The timeline: what happened to a customer, a date or a job, read from the record in one fixed set of queries,
over real HTTP (``GET /subjects/<id>/timeline``, ``GET /clocks/<id>/items/<item>/timeline``,
``GET /jobs/<id>/timeline``): apis.tax's Acme Robotics ticked to six days before its 2027 return, after the owner
reminded Ada of the federal date.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from io import StringIO

import pytest
from django.core.management import call_command
from django.db import connection
from django.test.utils import CaptureQueriesContext

from calendars.models import ClockItem, Subject
from calendars.words import runtime_words
from services.models import Job
from services.reminders import clock_remind
from services.timeline import SENT, Timeline, job_timeline, send_status, subject_timeline
from tests.support.acme import acme_subject
from tests.support.api import Client
from tests.support.cli import one_line, run
from timers import tenants
from timers.models import Brand, Event, Outbox, Timer, WebhookEndpoint
from timers.webhooks import delivery_key

NOW = "2028-04-12T14:00Z"
# Words a sentence never says beside calendars.words' list: the tick's own.
TICK_WORDS = ("fired", "armed", "outbox", "tick")
WEBHOOKS = 8


@dataclass
class Tax:
    api: Client
    tc: str
    subject: str
    item: ClockItem


def _load() -> tuple[str, str]:
    out = StringIO()
    call_command("loadexample", "apis_tax", "--reset", stdout=out)
    text = out.getvalue()
    return text.split("test clock ")[1].split()[0], text.split("subject ")[1].split()[0]


@pytest.fixture
def tax(live_server, transactional_db) -> Tax:
    tc, subject = _load()
    call_command("tick", "--to", NOW, "--test-clock", tc, stdout=StringIO())
    item = (ClockItem.objects.select_related("clock__subject__calendar", "clock__brand")
            .get(clock__domain=tc, clock__name="file", clock__period="2027", item="US"))
    clock_remind(item=item, by="Olive Owner", link_base="http://portal.example")
    _, secret = tenants.api_key_create(brand=Brand.objects.get(name="apis.tax"))
    return Tax(Client(live_server.url, secret), tc, subject, item)


def _all(api: Client, path: str, *, limit: int = 100) -> list[dict]:
    """Every entry of a timeline, page by page after the last entry's id."""
    out: list[dict] = []
    after = ""
    while True:
        sep = "&" if "?" in path else "?"
        r = api.get(f"{path}{sep}limit={limit}" + (f"&starting_after={after}" if after else ""))
        assert r.status == 200, r.body
        assert r.body["object"] == "list" and r.body["url"] == path.split("?")[0]
        out += r.body["data"]
        if not r.body["has_more"]:
            return out
        after = r.body["data"][-1]["id"]


def _clean(entries: list[dict]) -> None:
    for e in entries:
        found = runtime_words(e["sentence"]) + [w for w in TICK_WORDS if w in e["sentence"].lower().split()]
        assert not found, f"{e['sentence']!r} says {found}"


def test_a_customers_timeline_says_what_happened_then_what_comes(tax):
    entries = _all(tax.api, f"/subjects/{tax.subject}/timeline?test_clock={tax.tc}")
    kinds = [e["kind"] for e in entries]
    assert set(kinds) == {"fired", "moved", "reminded", "acted", "sent", "armed"}
    # The past first, in record order; then what is armed ahead, in the order it will happen.
    first_ahead = kinds.index("armed")
    assert set(kinds[first_ahead:]) == {"armed"}
    ahead = [e["at"] for e in entries[first_ahead:]]
    assert ahead == sorted(ahead) and ahead[0] >= "2028-04-12T14:00:00Z"
    said = [e["sentence"] for e in entries]
    # Why a date moved: the 2027 return's federal date rolled over Emancipation Day.
    assert ("File · the 2027 return · US rolled from Sat 15 Apr 2028 to Tue 18 Apr 2028: Emancipation Day "
            "(observed), on the US federal calendar.") in said
    # The owner's reminder: who reminded whom, how; then the email it sent, with its status.
    at = next(i for i, e in enumerate(entries) if e["type"] == "clock.reminded")
    assert entries[at]["sentence"] == "Olive Owner reminded Ada Lovelace of file · the 2027 return · US, by email."
    assert entries[at]["kind"] == "reminded" and entries[at]["when"] == "Wed 12 Apr 2028, 10:00 EDT"
    sent = entries[at + 1]
    assert sent["kind"] == "sent" and sent["type"] == "email" and sent["attempt"] == 1
    assert sent["status"] in ("sent", "answered", "waiting") and sent["at"] == entries[at]["at"]
    assert sent["sentence"].startswith("Emailed ada@acme-robotics.example")
    # The 90-day notice rang and went out to Ada as a notice and an email, each a send of its own.
    notice = next(i for i, e in enumerate(entries) if e["type"] == "clock.notice" and "2027 return · US is" in e["sentence"])
    assert {entries[notice + 1]["type"], entries[notice + 2]["type"]} == {"notices", "email"}
    # Every time in the customer's zone, named; no id, no word of the runtime's.
    assert {e["zone"] for e in entries} == {"America/New_York"}
    assert all(e["when"].endswith((" EST", " EDT")) for e in entries)
    _clean(entries)
    # The viewer's own zone.
    r = tax.api.get(f"/subjects/{tax.subject}/timeline?test_clock={tax.tc}&zone=Europe/Paris&limit=1")
    assert r.status == 200 and r.body["data"][0]["zone"] == "Europe/Paris"
    assert r.body["data"][0]["when"].endswith((" CET", " CEST"))


def test_a_dates_and_a_jobs_timelines_are_theirs_alone(tax):
    clock = tax.item.clock
    entries = _all(tax.api, f"/clocks/{clock.id}/items/US/timeline")
    said = " ".join(e["sentence"] for e in entries)
    assert "US-CA" not in said and "file · the 2027 return · US" in said
    assert any(e["type"] == "clock.reminded" for e in entries)
    assert any(e["kind"] == "armed" and e["sentence"] == "File · the 2027 return · US is due." for e in entries)
    _clean(entries)
    job = Job.objects.get(pk=clock.owner_ref)
    entries = _all(tax.api, f"/jobs/{job.id}/timeline", limit=7)
    types = [e["type"] for e in entries]
    assert types[0] == "clock.assigned" and "job.opened" in types[:8] and "clock.rolled" in types and "clock.reminded" in types
    assert not any("2026" in e["sentence"] for e in entries)  # the 2026 return's dates are another job's
    _clean(entries)


def test_a_timeline_refuses_what_it_does_not_take(tax):
    base = f"/subjects/{tax.subject}/timeline"
    r = tax.api.get(f"{base}?test_clock={tax.tc}&color=red")
    assert r.status == 400 and r.body["error"]["param"] == "color", r.body
    r = tax.api.get(f"{base}?test_clock={tax.tc}&starting_after=evt_nope")
    assert r.status == 404 and r.body["error"]["param"] == "starting_after", r.body
    r = tax.api.get(f"{base}?test_clock={tax.tc}&zone=Mars/Olympus")
    assert r.status == 400 and r.body["error"]["code"] in ("invalid_zone", "invalid_request"), r.body
    r = tax.api.get(f"{base}?test_clock={tax.tc}&limit=0")
    assert r.status == 400, r.body
    r = tax.api.get("/subjects/sbj_nope/timeline")
    assert r.status == 404 and r.body["error"]["code"] == "resource_missing"
    r = tax.api.get(f"/clocks/{tax.item.clock_id}/items/ZZ/timeline")
    assert r.status == 404
    # Another brand's key sees none of it.
    _, other = tenants.api_key_create(brand=tenants.brand_get_or_create(name="globex"))
    r = tax.api.get(f"{base}?test_clock={tax.tc}", key=other)
    assert r.status == 404


def test_the_cli_prints_a_line_an_entry_and_refuses_in_one_line(tax):
    text = run("subjects", "timeline", tax.subject, "--test-clock", tax.tc, "--zone", "Europe/Paris", "--limit", "3")
    head, *lines = text.splitlines()
    assert head.startswith(f"{tax.subject} · Acme Robotics · Europe/Paris · ") and "the last 3 shown" in head
    ahead = Timer.objects.filter(domain=tax.tc, status="armed").count()
    assert len(lines) == 3 + int(head.split(" ahead")[0].rsplit(" · ", 1)[1]) and ahead >= 1
    assert all(" CET · " in line or " CEST · " in line for line in lines)
    assert any(" · armed · " in line for line in lines)
    one_line(["subjects", "timeline", "sbj_nope"], "resource_missing")
    one_line(["subjects", "timeline", tax.subject, "--zone", "Mars/X"], "invalid_zone")
    one_line(["subjects", "timeline", tax.subject, "--limit", "0"], "invalid_request")
    one_line(["subjects", "timeline", tax.subject, "--test-clock", "tc_nope"], "resource_missing")


# -- a long history, a fixed number of queries ----------------------------------------------------------------
def _history(brand, domain: str, *, jobs: int, events: int) -> Subject:
    """A customer with ``jobs`` jobs and ``events`` events across them, each event with a sent email, and an
    armed deadline per job."""
    subject = acme_subject(brand, domain)
    t0 = datetime(2018, 1, 1, 14, tzinfo=UTC)
    Job.objects.bulk_create([Job(brand=brand, domain=domain, service="annual-return", subject=subject,
                                 period=str(2018 + j // 4), opened_at=t0) for j in range(jobs)])
    ids = list(Job.objects.filter(subject=subject).values_list("id", flat=True))
    rows, sends = [], []
    for n in range(events):
        job = ids[n % len(ids)]
        at = t0 + timedelta(hours=17 * n)
        key = f"{job}:deadline:at_risk:{n}"
        rows.append(Event(domain=domain, brand=brand, type="job.at_risk", subject=job, owed_at=at, fired_at=at,
                          key=key, data={"late_at": "2028-04-14T04:00:00Z"}))
        sends.append(Outbox(id=f"sub_h{n:08d}", domain=domain, brand=brand, key=key, attempt=1, transport="email",
                            payload={"messages": [{"to": ["ada@acme-robotics.example"]}]}, status="sent",
                            receipt={"emails": 1}, created_at=at))
    made = Event.objects.bulk_create(rows, batch_size=1000)
    # The brand's webhook endpoint was owed the first events: given up on after five tries.
    endpoint = WebhookEndpoint.objects.create(brand=brand, livemode=False, url="https://hooks.example/kt",
                                              enabled_events=["*"], secret="whsec_x", created_at=t0)
    for e in made[:WEBHOOKS]:
        sends.append(Outbox(id=f"whd_h{e.seq:08d}", domain=endpoint.id, brand=brand, key=delivery_key(e.seq, e.id),
                            attempt=1, transport="webhook", payload={"endpoint": endpoint.id, "event": e.id,
                                                                      "domain": domain, "type": e.type},
                            status="failed", tries=5, error="ConnectionRefusedError: [Errno 111]",
                            created_at=e.owed_at))
    Outbox.objects.bulk_create(sends, batch_size=1000)
    Timer.objects.bulk_create([Timer(domain=domain, brand=brand, key=f"{job}:deadline:late:x", owner=job,
                                     kind="deadline", place=5, handler="noop", owed_at=t0 + timedelta(days=4000),
                                     opened_at=t0, armed_at=t0) for job in ids])
    return subject


@pytest.mark.django_db
@pytest.mark.parametrize("events", [10, 5_000])
def test_a_long_history_is_read_in_a_fixed_number_of_queries(brand, clock, events, django_assert_max_num_queries):
    """A customer with ten years of history (40 jobs, 5,000 events, each with its email) is read in the same 6
    queries as one with 10 events: the subject, its dates, its jobs and plans, its events, their sends, what is
    armed ahead."""
    s = _history(brand, clock.id, jobs=40, events=events)
    with CaptureQueriesContext(connection) as got, django_assert_max_num_queries(6):
        subject = Subject.objects.select_related("calendar").get(pk=s.id)  # as get_subject reads it
        timeline = subject_timeline(subject=subject, domain=clock.id)
    assert isinstance(timeline, Timeline)
    assert len(got.captured_queries) == 6
    kinds = [e.kind for e in timeline.entries]
    assert kinds.count("fired") == events and kinds.count(SENT) == events + WEBHOOKS and kinds.count("armed") == 40
    hooks = [e for e in timeline.entries if e.type == "webhook"]
    assert len(hooks) == WEBHOOKS and {e.status for e in hooks} == {"dead_lettered"}
    assert hooks[0].sentence == ("The brand's webhook endpoint was sent the job at risk event: given up after 5 tries: "
                                 "ConnectionRefusedError: [Errno 111].")
    # Each email (and webhook delivery) stands after the event it went with.
    assert all(timeline.entries[i + 1].type in ("email", "webhook") and timeline.entries[i + 1].at == e.at
               for i, e in enumerate(timeline.entries) if e.kind == "fired")
    job = Job.objects.select_related("subject__calendar").filter(subject=s).first()
    own = Event.objects.filter(subject=job.id).count()
    with django_assert_max_num_queries(5):  # its dates, the endpoints, its events, their sends, what is ahead
        mine = job_timeline(job=job).entries
    assert [e.kind for e in mine].count("fired") == own and [e.kind for e in mine].count("armed") == 1
    rows, more = timeline.page(limit=3, starting_after=timeline.entries[0].id)
    assert [r.id for r in rows] == [e.id for e in timeline.entries[1:4]] and more


def test_a_sends_status_says_where_it_is():
    def row(**kw) -> Outbox:
        return Outbox(**{"status": "pending", "tries": 0, "error": "", "receipt": None, **kw})

    assert send_status(row()) == "waiting"
    assert send_status(row(status="sending")) == "sending"
    assert send_status(row(status="sending", tries=1, error="timed out")) == "in_doubt"
    assert send_status(row(status="sent", receipt={"emails": 1})) == "sent"
    assert send_status(row(status="sent", receipt={"status": 200})) == "answered"
    assert send_status(row(status="failed", tries=1)) == "failed"
    assert send_status(row(status="failed", tries=5)) == "dead_lettered"
    assert send_status(row(status="voided")) == "voided"


def test_an_act_taken_back_is_its_own_line_after_the_act(tax):
    from calendars.clocks import clock_satisfy
    from calendars.undo import clock_reopen
    from services.timeline import item_timeline
    from timers.armer import DirectArmer

    item = tax.item
    armer = DirectArmer(brand=item.clock.brand_id, domain=item.clock.domain)
    clock_satisfy(armer=armer, item=item, by="Ada Lovelace", who="Ada Lovelace")
    clock_reopen(armer=armer, item=ClockItem.objects.get(pk=item.pk), by="Ada Lovelace")
    said = [e.sentence for e in item_timeline(item=ClockItem.objects.select_related("clock__subject__calendar")
                                              .get(pk=item.pk)).entries if e.kind != "armed"]
    done = said.index("Ada Lovelace marked file · the 2027 return · US done.")
    assert said[done + 1] == ("Ada Lovelace took back marking file · the 2027 return · US done: it is open again, "
                              "with its reminders ahead."), said[done:]


def test_a_date_kept_by_a_step_names_no_person(tax):
    """clock.satisfied's ``by`` is a step's name when a receipt or a sibling's step kept the date: only a person's
    act (its ``who``) says who marked it done."""
    from calendars.clocks import clock_satisfy
    from services.timeline import item_timeline
    from timers.armer import DirectArmer

    item = tax.item
    armer = DirectArmer(brand=item.clock.brand_id, domain=item.clock.domain)
    clock_satisfy(armer=armer, item=item, by="submit", kept_with="kept with the extension")
    said = [e.sentence for e in item_timeline(item=ClockItem.objects.select_related("clock__subject__calendar")
                                              .get(pk=item.pk)).entries if e.kind == "acted"]
    assert "File · the 2027 return · US was done (kept with the extension)." in said, said
    assert not any("marked" in s or "submit" in s.lower().split(" was")[0] for s in said), said
