"""The calendars' shared reads over the API: a brand's subject by id, and the clock domain a request reads
its calendar on. The subject calendar's view and the MCP tools both ask them here.
"""

from __future__ import annotations

from timers.errors import KeepingTimeError
from timers.models import Brand, brand_domain, is_live
from timers.selectors import domain_of, get_owned

from .models import Subject


def get_subject(brand: Brand, subject_id: str) -> Subject:
    """One of the caller's subjects (its brand's, in its key's mode) with its calendar, or 404."""
    return get_owned(brand, Subject.objects.select_related("calendar"), subject_id, "subject")


def calendar_domain(brand: Brand, subject: Subject, test_clock: str | None) -> str:
    """The subject's own clock domain, or the test clock the request names (one of the brand's, and the
    one the subject lives on unless it lives on the live clock). The subject is already in the key's mode,
    and a live key names no test clock."""
    if not test_clock:
        return brand_domain(subject.domain, subject.brand_id)
    domain = domain_of(brand, test_clock)
    if not is_live(subject.domain) and subject.domain != domain:
        err = KeepingTimeError(f"test_clock: subject {subject.id} lives on test clock {subject.domain}, "
                               f"not {domain}", code="invalid_request")
        err.param = "test_clock"
        raise err
    return domain
