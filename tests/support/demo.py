"""apis.tax's example at the demo's moment, with its owner signed up."""

from __future__ import annotations

from datetime import UTC, datetime
from io import StringIO

from django.contrib.auth import get_user_model
from django.core.management import call_command

from timers import transports
from timers.advance import advance
from timers.models import Brand, Membership

NOW = datetime(2028, 4, 12, 12, tzinfo=UTC)  # 08:00 in New York: the federal date is in six days


def demo_moment(password: str = "pw") -> dict:
    """apis.tax's example at the demo's moment (2028-04-12 12:00Z) and its owner, Olive Owner ("olive")."""
    transports.register("notices", transports.RecordingTransport())
    out = StringIO()
    call_command("loadexample", "apis_tax", stdout=out)
    tc = out.getvalue().split("test clock ")[1].split()[0]
    advance(tc, NOW)
    brand = Brand.objects.get(name="apis.tax")
    user = get_user_model().objects.create_user(username="olive", password=password, is_staff=True)
    Membership.objects.create(user=user, brand=brand, role=Membership.Role.OWNER, name="Olive Owner")
    return {"tc": tc, "brand": brand, "olive": user}
