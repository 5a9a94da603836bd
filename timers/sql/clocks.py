"""The statements of a test clock's run and a live clock's turn (timers/advance.py, timers/live.py): the frozen
time's moves, an advance's mark, a live clock's position, and the looks at what a domain still owes, beside
their SQLite fallback.

On PostgreSQL each goes on the tick's kept cursor, prepared (timers/prepared.py): the live tick and a compare's
ways send them once a batch or an advance, and planning them again was most of their cost. Two questions in
one round trip are a WITH whose UPDATE runs whether read or not. On SQLite the ORM's, whose datetimes SQLite
compares as text as it wrote them.
"""

from __future__ import annotations

from datetime import datetime

from django.db import connection, connections
from django.db.models import OuterRef, Subquery

from ..models import LiveClock, TestClock, Timer, is_live
from ..prepared import carried, kept_cursors
from . import one_row
from .leases import LAST_HOLDER_LIVE, last_holder

# The frozen time's move, once a batch: forward only, and never on a clock marked gone.
MOVE_FROZEN = ("UPDATE timers_testclock SET frozen_time = %s WHERE id = %s AND frozen_time < %s AND status NOT IN ("
               + ", ".join(f"'{s}'" for s in TestClock.GONE) + ")")
_MOVE_FROZEN_B = MOVE_FROZEN.replace("%s", "%b")
# Whether the domain owes sends (pending, or claimed and not yet settled).
OWED_SENDS = "SELECT EXISTS (SELECT 1 FROM timers_outbox WHERE domain = %s AND status IN ('pending', 'sending'))"
# The move and the look at the outbox in one round trip.
MOVE_FROZEN_LOOK = f"WITH moved AS ({MOVE_FROZEN} RETURNING 1) {OWED_SENDS}"
# Whether an armed timer is owed by then.
OWED_BY = "SELECT EXISTS (SELECT 1 FROM timers_timer WHERE domain = %s AND status = 'armed' AND owed_at <= %s)"
# An advance's mark with the look for an owed timer, and where none is owed the frozen time's move there.
IDLE_MARK = (f"WITH o AS ({OWED_BY} AS owed), m AS (UPDATE timers_testclock SET status = "
             f"'{TestClock.Status.ADVANCING}', advance_to = %s, frozen_time = CASE WHEN (SELECT owed FROM o) "
             "THEN frozen_time ELSE %s END WHERE id = %s) SELECT owed FROM o")
# A live clock's position, written once a batch. Its row is made when its first timer is armed (sql/arming.py,
# NAME_LIVE_CLOCK), never here: a brand deleted under a worker's turn stays deleted (services/brands.py).
# A test clock's row shared until the transaction ends: a delete's mark waits for the write that read it.
SHARE_CLOCK = 'SELECT 1 FROM "timers_testclock" WHERE id = %s FOR SHARE'
LIVE_POSITION = "UPDATE timers_liveclock SET position = %b WHERE id = %b"
# Where a domain's next run starts from: a live clock's position, a test clock's frozen time.
POSITION = {True: "SELECT position FROM timers_liveclock WHERE id = %b",
            False: "SELECT frozen_time FROM timers_testclock WHERE id = %b"}
# Each live clock's next owed instant (a probe of its armed timers' tick order), the holder of its last lease
# while that holder's session lives, and its position: the worker loop's look, once a step. The ORM's form of it (a subquery in the
# select list and the same again in the WHERE) cost the worker more to build than the server to run (issue 39).
LIVE_NEXT = (f"SELECT timers_liveclock.id, n.owed_at, ({LAST_HOLDER_LIVE}), timers_liveclock.position "
             "FROM timers_liveclock CROSS JOIN LATERAL "
             "(SELECT owed_at FROM timers_timer WHERE domain = timers_liveclock.id AND status = 'armed' "
             "ORDER BY owed_at LIMIT 1) n")
# ... of the live clocks with a timer owed by then.
LIVE_OWED = f"{LIVE_NEXT} WHERE n.owed_at <= %b"


def share_clock(clock_id: str) -> None:
    """Hold the test clock's row FOR SHARE in the transaction under way (PostgreSQL): a delete that marks the
    clock after this read waits until the write commits, and an advance's batch, which holds the row, is waited
    for the same way. Outside a transaction, and on SQLite (one writer at a time), nothing to hold."""
    conn = connections[TestClock.objects.db]
    if conn.vendor == "postgresql" and conn.in_atomic_block:
        with conn.cursor() as cur:
            cur.execute(SHARE_CLOCK, [clock_id])


def _kept() -> bool:
    return connection.vendor == "postgresql"


def owes_sends(clock_id: str) -> bool:
    """Whether the domain still owes sends: one statement."""
    if _kept():
        cur, _, prepare = kept_cursors()
        cur.execute(OWED_SENDS.replace("%s", "%b"), [clock_id], prepare=prepare)
        return bool(one_row(cur)[0])
    with connection.cursor() as db_cur:
        db_cur.execute(OWED_SENDS, [clock_id])
        return bool(db_cur.fetchone()[0])


def owed_by(clock_id: str, to: datetime) -> bool:
    """Whether an armed timer of the domain is owed by ``to``."""
    if _kept():
        cur, _, prepare = kept_cursors()
        cur.execute(OWED_BY.replace("%s", "%b"), [clock_id, to], prepare=prepare)
        return bool(one_row(cur)[0])
    return Timer.objects.filter(domain=clock_id, status="armed", owed_at__lte=to).exists()


def mark_idle(clock_id: str, to: datetime) -> bool:
    """An advance's mark (advancing to ``to``) and whether an armed timer is owed by then; where none is, the
    frozen time moves to ``to`` with the mark. One statement on PostgreSQL. Returns whether one is owed."""
    if _kept():
        cur, _, prepare = kept_cursors()
        cur.execute(IDLE_MARK.replace("%s", "%b"), [clock_id, to, to, to, clock_id], prepare=prepare)
        return bool(one_row(cur)[0])
    owed = owed_by(clock_id, to)
    TestClock.objects.filter(pk=clock_id).update(
        status=TestClock.Status.ADVANCING, advance_to=to, **({} if owed else {"frozen_time": to}))
    return owed


def move_frozen(clock_id: str, at: datetime, *, look: bool = False) -> bool | None:
    """Move the clock's frozen time forward to ``at``; with ``look``, whether the domain still owes sends,
    asked in the same round trip on PostgreSQL (else None). Once a batch: the statement as text, where building
    the queryset cost more than running it."""
    if _kept():
        if not look and carried(_MOVE_FROZEN_B, [at, clock_id, at]):
            return None  # in the batch's write statement (timers/store.py)
        cur, _, prepare = kept_cursors()
        if not look:
            cur.execute(_MOVE_FROZEN_B, [at, clock_id, at], prepare=prepare)
            return None
        cur.execute(MOVE_FROZEN_LOOK.replace("%s", "%b"), [at, clock_id, at, clock_id], prepare=prepare)
        return bool(one_row(cur)[0])
    with connection.cursor() as db_cur:
        db_cur.execute(MOVE_FROZEN, [at, clock_id, at])
        if not look:
            return None
        db_cur.execute(OWED_SENDS, [clock_id])
        return bool(db_cur.fetchone()[0])


def set_live_position(domain: str, at: datetime) -> None:
    """A live clock's position: on PostgreSQL one prepared statement on the tick's cursor, as the live tick's
    batch of one writes it once a batch."""
    if _kept():
        if carried(LIVE_POSITION, [at, domain]):
            return  # in the batch's write statement (timers/store.py)
        cur, _, prepare = kept_cursors()
        cur.execute(LIVE_POSITION, [at, domain], prepare=prepare)
        return
    LiveClock.objects.filter(pk=domain).update(position=at)


def position(domain: str) -> datetime | None:
    """Where a domain's next run starts from: a live clock's position, or a test clock's frozen time. Once a
    live turn, prepared on PostgreSQL."""
    if _kept():
        cur, _, prepare = kept_cursors()
        cur.execute(POSITION[is_live(domain)], [domain], prepare=prepare)
        row = cur.fetchone()
        return None if row is None else row[0]
    if is_live(domain):
        return LiveClock.objects.filter(pk=domain).values_list("position", flat=True).first()
    return TestClock.objects.filter(pk=domain).values_list("frozen_time", flat=True).first()


LiveNext = tuple[str, datetime, str | None, datetime | None]


def live_next(now: datetime | None = None) -> list[LiveNext]:
    """Each live domain's next owed instant (owed at ``now``, if given), the holder of its last lease (while its
    session lives) and its position, earliest owed first: one statement, an index probe each; prepared on
    PostgreSQL."""
    rows: list[LiveNext]
    if _kept():
        cur, _, prepare = kept_cursors()
        if now is None:
            cur.execute(LIVE_NEXT, prepare=prepare)
        else:
            cur.execute(LIVE_OWED, [now], prepare=prepare)
        rows = cur.fetchall()
    else:
        nxt = Timer.objects.filter(domain=OuterRef("pk"), status="armed").order_by("owed_at").values("owed_at")[:1]
        found = LiveClock.objects.annotate(nxt=Subquery(nxt), last=last_holder())
        found = found.filter(nxt__isnull=False) if now is None else found.filter(nxt__lte=now)
        rows = list(found.values_list("id", "nxt", "last", "position"))
    return sorted(rows, key=lambda r: (r[1], r[0]))
