"""The console's money page (Money lines › Balance and statements): each brand's balance and whether its
ledger balances, what each member earned in a month, and each customer's statements, on the clock the header
shows; each table as CSV (``?export=statements`` or ``?export=earnings``). Amounts say "$1,234.50", dates are
the brand's zone, people and customers by name. A handful of grouped queries per page, whatever its size."""

from __future__ import annotations

import csv
from datetime import date, datetime

from django.http import HttpRequest, HttpResponse
from django.template.response import TemplateResponse

from calendars.models import Subject
from services import registry
from services.ledger import brand_balance, statements_of
from services.models import Job, MoneyLine
from services.money import usd
from timers.models import LIVE, Brand, Membership, live_domain

from .scope import as_of, request_brands


def _brands(request: HttpRequest) -> list[Brand]:
    at = as_of(request)
    if at.clock is not None:
        return [at.clock.brand]
    ids = request_brands(request)
    qs = Brand.objects.all() if ids is None else Brand.objects.filter(pk__in=ids)
    if ids is None:  # the superuser: the brands with money on the record, not every brand there is
        qs = qs.filter(pk__in=MoneyLine.objects.values("brand_id"))
    return list(qs.order_by("name"))


def _domain(brand: Brand, at) -> str:
    return live_domain(brand.id) if at.domain == LIVE else at.domain


def _month(request: HttpRequest, today: date) -> tuple[date, date]:
    """The month asked (?month=2027-10), else this one; bad text is this month."""
    try:
        y, m = (int(x) for x in request.GET.get("month", "").split("-"))
        start = date(y, m, 1)
    except (ValueError, TypeError):
        start = today.replace(day=1)
    end = date(start.year + (start.month == 12), start.month % 12 + 1, 1)
    return start, end


def _cycle_words(s, tz) -> str:
    starts = f"{s.starts.astimezone(tz):%-d %b %Y}"
    if s.subscription is None:
        y, m = s.service.split("-")
        return f"orders of {date(int(y), int(m), 1):%B %Y}"
    ends = f"{s.ends.astimezone(tz):%-d %b %Y}" if s.ends else "now"
    return f"cycle {s.cycle}, {starts} to {ends}"


def _title(name: str) -> str:
    try:
        svc = registry.get(name)
    except Exception:  # a Service no longer registered: its name is all there is
        return name.replace("-", " ")
    return name.replace("-", " ") if not svc.title or "{" in svc.title else svc.title


def money_page(model_admin, request: HttpRequest) -> HttpResponse:
    at = as_of(request)
    tz = at.tz
    today = at.now.astimezone(tz).date()
    start, end = _month(request, today)
    since = datetime(start.year, start.month, 1, tzinfo=tz)
    until = datetime(end.year, end.month, 1, tzinfo=tz)
    sections, statement_rows, earning_rows = [], [], []
    for brand in _brands(request):
        domain = _domain(brand, at)
        b = brand_balance(brand_id=brand.id, domain=domain)
        off = [f"{j.service.replace('-', ' ')} {j.period} for {j.subject.name}" for j in
               Job.objects.filter(pk__in=b.unbalanced).select_related("subject")]
        # Earnings: one grouped query over the month's pay lines.
        people = {m.user_id: m.display_name for m in Membership.objects.filter(brand=brand).select_related("user")}
        earned: dict[int, dict] = {}
        for member_id, cents, status in MoneyLine.objects.filter(
                brand=brand, domain=domain, kind="pay", owed_at__gte=since, owed_at__lt=until).exclude(
                status="void").values_list("member_id", "amount_cents", "status"):
            row = earned.setdefault(member_id, {"acts": 0, "earned": 0, "paid": 0})
            row["acts"] += 1
            row["earned"] += cents
            row["paid"] += cents if status == "collected" else 0
        members = sorted(({"brand": brand.name, "name": people.get(uid, "a former member"), **row,
                           "earned_s": usd(row["earned"]), "paid_s": usd(row["paid"])}
                          for uid, row in earned.items()), key=lambda r: r["name"])
        earning_rows += members
        subjects = list(Subject.objects.filter(brand=brand, domain=domain).select_related("calendar")
                        .order_by("name", "id"))
        statements = statements_of(subjects=subjects)
        customers = []
        for subject in subjects:
            rows = [{"brand": brand.name, "customer": subject.name, "what": _title(s.service) if s.subscription
                     else "orders", "when": _cycle_words(s, tz), "starts": s.starts,
                     "included": ", ".join(f"{_title(k)} ×{v}" for k, v in sorted(s.included.items())),
                     "charged": s.charged, "credited": s.credited, "refunded": s.refunded, "total": s.total,
                     **{f"{k}_s": usd(getattr(s, k)) for k in ("charged", "credited", "refunded", "total")}}
                    for s in statements.get(subject.pk, [])]
            if rows:
                customers.append({"name": subject.name, "rows": rows})
                statement_rows += rows
        sections.append({"brand": brand, "balance": b, "off": off, "members": members, "customers": customers,
                         "figures": [("Charged", usd(b.charged)), ("Credited back", usd(b.credited)),
                                     ("Refunded", usd(b.refunded)), ("Members' pay", usd(b.pay)),
                                     ("Yours", usd(b.net)), ("Still held for open jobs", usd(b.held))]})
    export = request.GET.get("export")
    if export == "statements":
        return _csv("statements.csv", ["brand", "customer", "plan", "cycle", "included", "charged (USD)",
                                       "credited (USD)", "refunded (USD)", "total (USD)"],
                    [[r["brand"], r["customer"], r["what"], r["when"], r["included"], _dollars(r["charged"]),
                      _dollars(r["credited"]), _dollars(r["refunded"]), _dollars(r["total"])] for r in statement_rows])
    if export == "earnings":
        return _csv(f"earnings-{start:%Y-%m}.csv", ["brand", "member", "month", "acts", "earned (USD)",
                                                    "paid (USD)"],
                    [[r["brand"], r["name"], f"{start:%B %Y}", r["acts"], _dollars(r["earned"]), _dollars(r["paid"])]
                     for r in earning_rows])
    prev = date(start.year - (start.month == 1), (start.month - 2) % 12 + 1, 1)
    return TemplateResponse(request, "portals/owner/money.html", {
        **model_admin.admin_site.each_context(request), "opts": model_admin.model._meta, "title": "Balance and statements",
        "sections": sections, "several": len(sections) > 1, "month": f"{start:%B %Y}",
        "month_key": f"{start:%Y-%m}", "prev": f"{prev:%Y-%m}", "next": f"{end:%Y-%m}",
    })


def _dollars(cents: int) -> str:
    """A spreadsheet's number: 1234.50, no sign or commas (the header says the currency)."""
    return f"{cents / 100:.2f}"


def _csv(name: str, header: list[str], rows: list[list]) -> HttpResponse:
    response = HttpResponse(content_type="text/csv; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="{name}"'
    out = csv.writer(response)
    out.writerow(header)
    for row in rows:
        out.writerow(row)
    return response
