"""The gate's statement (timers/gate.py): a key's commit offered once per clock domain, the unique constraint
refusing a second, beside its SQLite fallback."""

from __future__ import annotations

from typing import TYPE_CHECKING

from django.db import IntegrityError, connection, transaction

from ..models import Commit

if TYPE_CHECKING:
    from ..engine import CommitRow

# The gate's commits, each key once per domain: what the constraint refuses is not returned (params: the seven
# columns as arrays).
COMMIT_ONCE = ("INSERT INTO timers_commit (id, domain, key, timer_id, outcome, code, at) "
               "SELECT * FROM unnest(%s::varchar[], %s::varchar[], %s::varchar[], %s::varchar[], "
               "%s::varchar[], %s::varchar[], %s::timestamptz[]) ON CONFLICT DO NOTHING RETURNING key")


def commit_once(rows: list[CommitRow]) -> set[str]:
    """Offer each (id, domain, key, timer_id, outcome, code, at); returns the keys committed now. On SQLite one
    savepoint a row, whose unique constraint refuses a key committed before."""
    if not rows:
        return set()
    if connection.vendor == "postgresql":
        with connection.cursor() as cur:
            cur.execute(COMMIT_ONCE, [list(col) for col in zip(*rows, strict=True)])
            return {r[0] for r in cur.fetchall()}
    committed = set()
    for r in rows:
        try:
            with transaction.atomic():
                Commit.objects.create(id=r[0], domain=r[1], key=r[2], timer_id=r[3], outcome=r[4], code=r[5],
                                      at=r[6])
            committed.add(r[2])
        except IntegrityError:
            pass
    return committed
