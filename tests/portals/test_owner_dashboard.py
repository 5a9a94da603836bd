"""The owner's dashboard answers "what do I act on today" (issue 24).

apis.tax with Acme (``loadexample apis_tax``) advanced to 2028-04-12 12:00Z, as the demo is: five dates due
on Tue 18 Apr 2028 (the 2027 return's federal, CA and NY file dates, its pay date, the 2028-Q1 estimate's pay
date) are ahead and at risk; the 2026 return's file dates, the 2027 estimates' pay dates and five late jobs
are past. Ada Lovelace answers for Acme's dates: she is the customer. The owner is Olive Owner.

What is proved: the dates still ahead lead, the costliest miss first and then the soonest (said once, and by
date, where nothing costs money); what passed is a collapsed section with its count and what happens next;
no act on a date the customer answers for is offered, and the settle view refuses a forged one with a
sentence; the 90-day chart is server-side SVG with the week counts; the page's and every banner's words hold
no id and no runtime word; every time is in the brand's zone, named; one query per kind, never per row.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from calendars.models import Clock, ClockItem
from calendars.words import runtime_words
from portals.owner import actions
from portals.owner.dashboard import dashboard
from portals.owner.risks import dates_at_risk
from portals.owner.scope import AsOf
from services.models import Job, Notification
from tests.support.demo import demo_moment
from timers.advance import advance
from timers.domains import domain_now
from timers.models import Event, TestClock

pytestmark = pytest.mark.django_db

NY = "America/New_York"
ZONED = re.compile(r"^(Mon|Tue|Wed|Thu|Fri|Sat|Sun) \d{1,2} [A-Z][a-z]{2} \d{4}, \d{2}:\d{2} (EDT|EST)$")


@pytest.fixture
def acme(db):
    return demo_moment()


def _at(acme) -> AsOf:
    tc = acme["tc"]
    return AsOf(domain=tc, clock=TestClock.objects.get(pk=tc), now=domain_now(domain=tc), zone=NY,
                brand_ids=frozenset({acme["brand"].id}), chosen=True)


def _page(client, acme) -> str:
    client.force_login(acme["olive"])
    return client.get("/admin/").content.decode()


def _board(html: str) -> str:
    """The dashboard's part of the page (the model lists after it are the admin's own)."""
    return html.split('id="content-main"', 1)[1].split('<div class="app-lists">', 1)[0]


def _text(html: str) -> str:
    html = re.sub(r"<(style|script)\b.*?</\1>", " ", html, flags=re.S)
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", html)).replace("&#x27;", "'")


def _rows(section: str) -> list[str]:
    return re.findall(r'<tr class="risk[^"]*" data-ref="([^"]+)"', section)


def _section(html: str, sid: str) -> str:
    return html.split(f'id="{sid}"', 1)[1].split("</section>", 1)[0]


def _item(acme, name: str, period: str, item: str) -> ClockItem:
    return ClockItem.objects.select_related("clock__subject").get(
        clock__domain=acme["tc"], clock__name=name, clock__period=period, item=item)


# -- what leads -----------------------------------------------------------------------------------------------
def test_the_dates_ahead_lead_and_what_passed_is_collapsed_with_its_count(acme, client):
    html = _page(client, acme)
    board = _board(html)
    # The section ahead comes first, then the past one: a <details> left closed, its count in its summary.
    assert board.index('id="dates-at-risk"') < board.index('id="already-past"')
    ahead, past = _rows(_section(board, "dates-at-risk")), _rows(_section(board, "already-past"))
    risks = dates_at_risk(_at(acme))
    assert [r.past for r in risks] == [False] * 5 + [True] * 13  # the dates ahead lead the list
    assert ahead == [r.ref for r in risks if not r.past] and len(ahead) == 5
    assert past == [r.ref for r in risks if r.past] and len(past) == 13
    details = _section(board, "already-past")
    assert re.match(r">\s*<details>", details), "the past section is collapsed"
    assert re.search(r"Already past <span class=\"count\">· 13</span>", details)
    assert "each row says what happens next" in details
    # Every row ahead is still ahead, every past one passed; each past row says what happens next.
    now = _at(acme).now
    assert all(r.at >= now for r in risks if not r.past)
    assert all(r.past and r.next for r in risks if r.at < now)
    # Nothing here costs money: said once, and the rows are by date (the federal date's five first).
    assert _text(board).count("No date here costs money if missed; soonest first.") == 1
    assert "A miss costs" not in _section(board, "dates-at-risk")
    assert [r.at for r in risks if not r.past] == sorted(r.at for r in risks if not r.past)


def test_where_a_miss_costs_money_the_costliest_leads_then_the_soonest(acme, client):
    # Guarantees on the 2027 return's dates (pay $500, file $200 each); the 2028-Q1 estimate's pay date, which
    # costs nothing, moved two days sooner: the costliest lead, then by date.
    pay = _item(acme, "pay", "2027", "US")
    fed = _item(acme, "file", "2027", "US-NY")
    q1 = _item(acme, "pay", "2028-Q1", "US")
    Clock.objects.filter(pk=fed.clock_id).update(guarantee={"cap_usd": 200})
    Clock.objects.filter(pk=pay.clock_id).update(guarantee={"cap_usd": 500})
    ClockItem.objects.filter(pk=q1.pk).update(due_at=q1.due_at - timedelta(days=2))
    risks = [r for r in dates_at_risk(_at(acme)) if not r.past]
    assert [r.ref for r in risks[:1]] == [pay.owner_key]
    assert [r.cost.cents for r in risks] == [50000, 20000, 20000, 20000, 0]
    assert risks[-1].ref == q1.owner_key and risks[-1].at < risks[0].at  # the soonest, but costs nothing
    html = _board(_page(client, acme))
    section = _section(html, "dates-at-risk")
    assert _rows(section)[0] == pay.owner_key
    assert "No date here costs money" not in html
    assert "A miss costs" in section and "$500.00" in section
    assert "the costliest miss first, then the soonest" in section


# -- a customer's date ----------------------------------------------------------------------------------------
def test_no_act_on_a_date_the_customer_answers_for_is_offered_or_performed(acme, client):
    fed = _item(acme, "file", "2027", "US")
    assert fed.clock.answers_for == "Ada Lovelace"  # the customer, not one of apis.tax's people
    risks = {r.ref: r for r in dates_at_risk(_at(acme))}
    for ref in (fed.owner_key, _item(acme, "file", "2026", "US").owner_key, _item(acme, "pay", "2027-Q1", "US").owner_key):
        assert risks[ref].customers
        assert {c.act for c in risks[ref].controls} == {"remind", "reassign"}, ref
    html = _board(_page(client, acme))
    for row in re.findall(r'<tr class="risk customers".*?</tr>', html, flags=re.S):
        assert 'value="satisfy"' not in row and 'value="choose"' not in row
        assert 'value="remind"' in row
    assert html.count('<tr class="risk customers"') == 5 + 8  # the 8 dates past are hers too
    # A forged POST: refused with a sentence, nothing kept, nothing on the record.
    events = Event.objects.filter(domain=acme["tc"]).count()
    for form in ({"act": "satisfy"}, {"act": "choose", "option": "extend"}):
        r = client.post("/admin/settle/", {"kind": "item", "id": fed.pk, **form}, follow=True)
        text = _text(r.content.decode())
        assert "Not done. Ada Lovelace answers for file · the 2027 return · US for Acme Robotics" in text
        assert "Nothing was changed." in text
    fed.refresh_from_db()
    assert fed.status == "open"
    assert Event.objects.filter(domain=acme["tc"]).count() == events
    # What the brand may do: remind her (an email to her), or assign it to one of its people.
    r = client.post("/admin/settle/", {"kind": "item", "id": fed.pk, "act": "remind"}, follow=True)
    assert ("Emailed Ada Lovelace (ada@acme-robotics.example) a reminder of file · the 2027 return · US for Acme "
            "Robotics (Tue 18 Apr 2028).") in _text(r.content.decode())
    assert Notification.objects.filter(kind="clock.reminder", recipient="Ada Lovelace",
                                       subject=fed.owner_key).count() == 1
    client.post("/admin/settle/", {"kind": "item", "id": fed.pk, "act": "reassign", "member": "olive"})
    fed.clock.refresh_from_db()
    assert fed.clock.answers_for == "Olive Owner"
    # Now the brand's own: mark done is offered, and done.
    row = next(r for r in dates_at_risk(_at(acme)) if r.ref == fed.owner_key)
    assert not row.customers and "satisfy" in {c.act for c in row.controls}
    r = client.post("/admin/settle/", {"kind": "item", "id": fed.pk, "act": "satisfy"}, follow=True)
    assert "File · the 2027 return · US for Acme Robotics (Tue 18 Apr 2028) marked done." in _text(r.content.decode())
    fed.refresh_from_db()
    assert fed.status == "satisfied"
    # Offered back on the next page until its date passes; taken back, it is open, and the record says both.
    assert ("Changed your mind about file · the 2027 return · US for Acme Robotics (Tue 18 Apr 2028)? Undo: not "
            "done yet") in _text(r.content.decode())
    r = client.post("/admin/settle/", {"kind": "item", "id": fed.pk, "act": "reopen"}, follow=True)
    assert "File · the 2027 return · US for Acme Robotics (Tue 18 Apr 2028) is open again." in _text(r.content.decode())
    assert "Changed your mind" not in _text(r.content.decode())
    fed.refresh_from_db()
    assert fed.status == "open"
    assert list(Event.objects.filter(subject=fed.owner_key, type__in=["clock.satisfied", "clock.reopened"])
                .order_by("seq").values_list("type", "data__by")) == [("clock.satisfied", "Olive Owner"),
                                                                      ("clock.reopened", "Olive Owner")]
    # Done again and the date passed: the console says why there is no undo, and a posted one is refused.
    client.post("/admin/settle/", {"kind": "item", "id": fed.pk, "act": "satisfy"})
    advance(acme["tc"], datetime(2028, 4, 20, 14, tzinfo=UTC))
    page = _text(client.get("/admin/").content.decode())
    assert "Its date, Tue 18 Apr 2028, has passed, so this can no longer be undone." in page
    assert "Undo: not done yet" not in page
    r = client.post("/admin/settle/", {"kind": "item", "id": fed.pk, "act": "reopen"}, follow=True)
    assert "Not done. That date has passed, so this can no longer be undone. Nothing was changed." in _text(
        r.content.decode())
    fed.refresh_from_db()
    assert fed.status == "satisfied"


# -- the chart --------------------------------------------------------------------------------------------------
def test_the_90_day_chart_is_inline_svg_with_the_week_counts(acme, client):
    board = _board(_page(client, acme))
    chart = board.split('id="chart-90-days"', 1)[1].split("</figure>", 1)[0]
    # Above the list, drawn on the server: no script, an accessible title and description, a table too.
    assert board.index('id="chart-90-days"') < board.index('<tr class="risk')
    assert "<script" not in board
    svg = chart.split("<svg", 1)[1].split("</svg>", 1)[0]
    assert 'role="img"' in svg and 'aria-labelledby="chart-title chart-desc"' in svg
    assert '<title id="chart-title">Dates in the next 90 days, by week</title>' in svg
    assert "9 dates from Wed 12 Apr 2028" in svg
    totals = [int(n) for n in re.findall(r'<g class="week" data-week="[^"]+" data-total="(\d+)"', svg)]
    # 13 weeks from Wed 12 Apr: the five dates of the 18th and two job deadlines (14th, 17th) in the first,
    # NJ's and TX's file dates (Mon 15 May, more than 30 days off: fine) in the fifth.
    assert totals == [7, 0, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0, 0]
    at_risk = [int(n) for n in re.findall(r'data-risk="at risk" data-count="(\d+)"', svg)]
    assert at_risk == [5]  # the five rows ahead, in red
    assert re.findall(r'data-risk="due soon" data-count="(\d+)"', svg) == ["2"]
    assert re.findall(r'data-risk="fine" data-count="(\d+)"', svg) == ["2"]
    table = chart.split('class="chart-table"', 1)[1]
    assert re.search(r"<th scope=\"row\">Wed 12 Apr 2028</th><td>5</td><td>2</td><td>0</td><td>7</td>", table)


# -- words and zones --------------------------------------------------------------------------------------------
def test_the_dashboard_speaks_the_owners_words_with_every_time_zoned(acme, client):
    board = _board(_page(client, acme))
    text = _text(board)
    assert runtime_words(text) == [], runtime_words(text)
    # Every time in the brand's zone with the zone named, and how far it is.
    at = _at(acme)
    b = dashboard(at)
    for r in b["risks"] + b["past"]:
        assert ZONED.match(r.when), r.when
        assert r.until
    assert [a.when for a in b["ahead"] if not ZONED.match(a.when)] == []
    assert "Tue 18 Apr 2028, 23:59 EDT" in text and "in 6 days" in text
    assert "Wed 15 Dec 2027, 23:59 EST" in text  # a date past, in winter time
    # The next 30 days say things in words: the deadlines and the dates by name, for whom.
    ahead = _section(board, "next-30-days")
    assert "The 2027 return is late after this" in _text(ahead) and "Acme Robotics" in ahead


def test_every_banner_the_settle_view_can_say_is_in_words(acme, client):
    client.force_login(acme["olive"])
    said: list[str] = []

    def settle(**form) -> str:
        r = client.post("/admin/settle/", form, follow=True)
        found = re.findall(r'<ul class="messagelist">(.*?)</ul>', r.content.decode(), flags=re.S)
        assert found, form
        said.append(_text(found[0]).strip())
        return said[-1]

    fed = _item(acme, "file", "2027", "US")
    ny26 = _item(acme, "file", "2026", "US-NY")
    pay = _item(acme, "pay", "2027-Q1", "US")
    job = Job.objects.filter(domain=acme["tc"], late=True, status="open").order_by("id").first()
    settle(kind="item", id=fed.pk, act="satisfy")  # the customer's: refused
    settle(kind="item", id=fed.pk, act="remind")
    settle(kind="item", id=fed.pk, act="remind")  # again, at once
    settle(kind="item", id=fed.pk, act="reassign", member="nobody")
    Clock.objects.filter(pk__in=[fed.clock_id, pay.clock_id, ny26.clock_id]).update(
        answers_for="the brand", role="brand", contact=None)
    settle(kind="item", id=fed.pk, act="remind")  # the brand's own: nobody to remind
    settle(kind="item", id=pay.pk, act="choose", option="pay late")  # no such option
    settle(kind="item", id=ny26.pk, act="choose", option="extend")
    settle(kind="item", id=fed.pk, act="satisfy")
    settle(kind="item", id=fed.pk, act="satisfy")  # already done
    settle(kind="item", id=fed.pk, act="reassign", member="olive")
    settle(kind="item", id=999999, act="satisfy")
    settle(kind="item", id=fed.pk, act="launch")
    settle(kind="job", id=job.pk, act="deliver")
    settle(kind="job", id=job.pk, act="deliver")  # closed now
    settle(kind="job", id=job.pk, act="done", step="prepare")
    settle(kind="job", id="job_nope000", act="deliver")
    settle(kind="task", id="tsk_nope000", act="assign")
    note = Notification.objects.filter(domain=acme["tc"]).first()
    settle(kind="notification", id=note.pk, act="read")
    settle(kind="notification", id="ntf_nope000", act="read")
    assert len(said) == 19 and all(said)
    assert [s for s in said if runtime_words(s)] == []
    # And every refusal the console can say, whatever its code.
    assert [c for c in [*actions.REFUSED, "a_code_never_seen"] if runtime_words(actions.refused(c))] == []
    assert "Not done. Ada Lovelace answers for" in said[0]
    assert said[-2].endswith("marked read.")


# -- queries ---------------------------------------------------------------------------------------------------------
def test_the_dashboard_reads_a_query_per_kind_never_one_per_row(acme):
    at = _at(acme)
    with CaptureQueriesContext(connection) as before:
        first = dashboard(at)
    # More of every kind: three more dates ahead on a clock of their own, and three more past on another.
    for status, due in (("open", at.now + timedelta(days=3)), ("due", at.now - timedelta(days=40))):
        src = ClockItem.objects.filter(clock__domain=acme["tc"], status=status).select_related("clock").first()
        clock = Clock.objects.get(pk=src.clock_id)
        clock.pk = None
        clock.id = Clock._meta.pk.get_default()
        clock.save()
        for n in range(3):
            ClockItem.objects.create(clock=clock, item=f"US-T{n}", civil=due.date(), due_date=due.date(), due_at=due,
                                     status=status, changed_at=at.now)
    with CaptureQueriesContext(connection) as after:
        second = dashboard(at)
    assert len(second["risks"]) == len(first["risks"]) + 3 and second["past_count"] == first["past_count"] + 3
    assert len(after) == len(before), [q["sql"][:120] for q in after.captured_queries]
