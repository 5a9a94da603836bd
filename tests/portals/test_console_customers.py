"""The owner console runs a brand's first day (issue 23): add a customer, subscribe them (the plan's declared input
as a form, errors on the fields), order a job, and make and revoke API keys; each through the API's service
function, a refusal changing nothing."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from django.urls import reverse

from calendars.brand_calendars import calendar_create
from calendars.models import Subject
from services.models import Job, Subscription
from tests.conftest import admin_url
from tests.support.owners import owner
from timers.models import ApiKey
from timers.tenants import api_key_brand, brand_get_or_create
from timers.test_clocks import test_clock_create

pytestmark = pytest.mark.django_db

T0 = datetime(2027, 1, 20, 14, 0, tzinfo=UTC)



@pytest.fixture
def shop(client):
    brand = brand_get_or_create(name="apis.tax")
    cal = calendar_create(brand=brand, name="New York office", zone="America/New_York", holiday_country="US",
                          holiday_subdivision="DC", now=T0)
    clock = test_clock_create(brand=brand, frozen_time=T0, name="trial")
    other = brand_get_or_create(name="globex")
    client.force_login(owner(brand, "ada"))
    return {"brand": brand, "cal": cal, "clock": clock, "other": other}


def add_customer(client, shop, **over):
    data = {"name": "Acme Robotics", "kind": "taxpayer", "key": "12-3456789", "calendar": "",
            "where": shop["clock"].id, "brand": shop["brand"].pk, **over}
    return client.post(reverse("admin:calendars_subject_add"), data)


def test_an_owner_adds_a_customer_subscribes_them_and_orders_a_job(client, shop):
    page = client.get(reverse("admin:calendars_subject_add"))
    assert page.status_code == 200 and b"Add a customer" in page.content
    assert b"the brand&#x27;s default (New York office)" in page.content
    r = add_customer(client, shop)
    subject = Subject.objects.get()
    assert r.status_code == 302 and r["Location"] == admin_url(subject)
    assert subject.domain == shop["clock"].id and subject.calendar_id == shop["cal"].id
    page = client.get(admin_url(subject)).content.decode()
    assert "Subscribe to a plan" in page and "Order a job" in page
    sub_url = reverse("admin:calendars_subject_subscribe", args=[subject.pk])
    form = client.get(sub_url).content.decode()
    # The Tax Plan is the only plan a taxpayer takes: its declared input is the form.
    assert 'name="entity"' in form and 'name="states"' in form
    bad = client.post(sub_url, {"ready": "1", "service": "tax-plan", "entity": "C corp", "states": "California"})
    assert bad.status_code == 200 and not Subscription.objects.exists()
    assert "expected text matching" in bad.content.decode()  # on the states field, from the service's check
    ok = client.post(sub_url, {"ready": "1", "service": "tax-plan", "entity": "C corp", "states": "CA, NY"},
                     follow=True)
    sub = Subscription.objects.get()
    assert sub.input == {"entity": "C corp", "states": ["CA", "NY"]} and sub.opened_at == T0
    assert "subscribed to the Tax plan" in ok.content.decode()
    order_url = reverse("admin:calendars_subject_order", args=[subject.pk])
    r = client.post(order_url, {"ready": "1", "service": "annual-return", "period": "2026"})
    job = Job.objects.get(service="annual-return")
    assert r.status_code == 302 and job.subscription_id == sub.id and job.price_cents == 0
    r = client.post(order_url, {"ready": "1", "service": "annual-return", "period": "twenty"})
    assert r.status_code == 200 and b"a year, e.g. 2027" in r.content
    assert Job.objects.count() == 1
    # A Service that reads other inputs than the plan's is ordered with its own: the plan fills only what it reads.
    r = client.post(order_url, {"ready": "1", "service": "notice-response", "period": "2026",
                                "reply_by": "2027-03-01"})
    assert r.status_code == 302, r.content.decode()
    assert Job.objects.get(service="notice-response").input == {"reply_by": "2027-03-01"}


def test_a_refused_customer_shows_on_its_field_and_nothing_is_added(client, shop):
    r = add_customer(client, shop, key="12345")
    assert r.status_code == 200  # shown again, with what is wrong on the key
    assert b"12-3456789" in r.content and not Subject.objects.exists()
    add_customer(client, shop)
    r = add_customer(client, shop, name="Acme again")
    assert r.status_code == 200 and b"is a subject already" in r.content
    assert Subject.objects.count() == 1


def test_another_brands_customer_is_not_found_in_the_console(client, shop):
    clock = test_clock_create(brand=shop["other"], frozen_time=T0, name="theirs")
    cal = calendar_create(brand=shop["other"], name="Theirs", zone="UTC", now=T0)
    from services.subjects import subject_create

    theirs = subject_create(brand=shop["other"], domain=clock.id, kind="taxpayer", key="98-7654321",
                            name="Globex", calendar=cal, now=T0)
    assert client.get(reverse("admin:calendars_subject_subscribe", args=[theirs.pk])).status_code == 404
    assert client.post(reverse("admin:calendars_subject_order", args=[theirs.pk]),
                       {"ready": "1", "service": "annual-return"}).status_code == 404
    assert not Job.objects.exists()


def test_a_key_is_shown_once_and_revoked_stops_working(client, shop):
    r = client.post(reverse("admin:timers_apikey_add"), {"name": "billing", "mode": "test",
                                                         "brand": shop["brand"].pk})
    page = r.content.decode()
    secret = next(p.split('"')[0] for p in page.split('value="') if p.startswith("sk_test_"))
    assert api_key_brand(secret=secret) == shop["brand"]
    key = ApiKey.objects.get(name="billing")
    assert secret not in client.get(admin_url(key)).content.decode()  # never again
    client.post(reverse("admin:timers_apikey_changelist"), {"action": "revoke", "_selected_action": [key.pk]})
    assert api_key_brand(secret=secret) is None


def test_the_console_names_things_in_words_and_has_no_dead_view_site_link(client, shop):
    page = client.get(reverse("admin:index")).content.decode()
    assert "Outboxs" not in page and "Outbox sends" in page and "API keys" in page and "Members" in page
    assert "View site" not in page and "Customers" in page
