"""Which timers belong to an owner, and how to name an owner: hooks a domain app fills in.

``timers list --on job_…`` and ``GET /timers?on=job_…`` list the job's own timers, those of its clocks
(whose data names the job with "of"), and whatever a domain app relates to it (the schedule timer that
minted it).
"""

from __future__ import annotations

from collections.abc import Callable

from django.db.models import Q

Related = Callable[[str, str], Q | None]  # (domain, owner) -> more timers that belong to it
Describe = Callable[[str, str], list[str]]  # (domain, owner) -> words for the header: service, period…

_related: list[Related] = []
_describe: list[Describe] = []


def register(*, related: Related | None = None, describe: Describe | None = None) -> None:
    if related is not None and related not in _related:
        _related.append(related)
    if describe is not None and describe not in _describe:
        _describe.append(describe)


def owner_filter(domain: str, owner: str) -> Q:
    q = Q(owner=owner) | Q(owner__startswith=f"{owner}#") | Q(data__of=owner)
    for fn in _related:
        more = fn(domain, owner)
        if more is not None:
            q |= more
    return q


def describe(domain: str, owner: str) -> list[str]:
    words: list[str] = []
    for fn in _describe:
        words += fn(domain, owner)
    return words
