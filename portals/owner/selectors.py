"""The console's shared reads: what its pages, admins and acts all ask of a row.

What a job is called, which Service a row names, the page an object links to, and the header's "as of"
narrowing of a queryset: the dashboard, the date rows (``portals.owner.risks``), the admins and the acts
(``portals.owner.actions``) read them here, so none of them imports another's privates.
"""

from __future__ import annotations

from django.contrib.admin.utils import quote
from django.urls import reverse

from services import registry
from services.declare import ServiceError
from services.models import Job
from timers.models import in_domain

from .scope import AsOf


def admin_link(obj, pk=None) -> str:
    """The console's page of ``obj`` (its change page; of the row ``pk`` names instead, when given)."""
    # quote(): an id holding "_3A" or "_5F" written raw is read back as ":" or "_", and the page not found.
    opts = obj._meta
    return reverse(f"admin:{opts.app_label}_{opts.model_name}_change",
                   args=[quote(pk if pk is not None else obj.pk)])


def in_as_of(qs, at: AsOf):
    """``qs`` narrowed to the header's clock domain and the request's brands (every brand: a superuser)."""
    qs = qs.filter(in_domain(at.domain))
    return qs if at.brand_ids is None else qs.filter(brand_id__in=at.brand_ids)


def service_of(name: str, version: str = ""):
    """The Service a row names, as the version it ran declared it; None for one no longer registered."""
    try:
        return registry.get(name, version) if version else registry.get(name)
    except (ServiceError, Exception):  # a Service no longer registered: its objects still show
        return None


def job_title(job: Job) -> str:
    """What the brand calls a job: its Service's title with the period ('the 2026 return', 'deal B-2001')."""
    svc = service_of(job.service, job.version)
    return ((svc.title if svc is not None and svc.title else "{service} {period}")
            .format(period=job.period, service=job.service))
