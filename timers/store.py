"""The tick's reads and writes: one claim query per batch, set statements per flush.

PostgreSQL (production) uses keyset row comparison and ``unnest`` arrays, so a batch of thousands of
timers costs a handful of statements. Other databases (the embedded SQLite default) go through the ORM.
Either way a batch's events become webhook deliveries in the batch's transaction (timers/webhooks.py,
``fan_out``: one indexed read when the brand has no endpoint), as bulk writes send no post_save.
"""

from __future__ import annotations

import contextlib
import functools
import json
import operator
from collections.abc import Callable, Iterable, Sequence
from datetime import datetime
from typing import Any

from django.db import connection
from django.db.models import Q
from django.db.models.functions import Now
from psycopg.types.json import Jsonb

from . import outbox
from .engine import TIMER_FIELDS, After, CommitRow, EventRow, Item, SendRow, TallyRow, VersionRow
from .failures import email_owners
from .history import LEFT
from .models import Commit, Event, Outbox, Timer, is_live
from .prepared import TickCursor, carrying, kept_cursors, new_cursor, together
from .rows import copy_in, insert_rows, probed_by_key
from .sql.tallies import tally_sql
from .webhooks import fan_out

_COLUMNS = ", ".join(f'"{c}"' for c in TIMER_FIELDS)
# A batch writing at most this many rows of each kind (a live tick's timers coming due one by one, a run at
# KT_ADVANCE_BATCH_SIZE=1) sends its statements in one pipeline: one round trip for the batch's writes and
# its webhook endpoints' read, where each statement (and each COPY, twice) waited for its answer. Bigger
# batches go by COPY, whose per-row cost is lower but which a pipeline cannot carry.
PIPELINED_UP_TO = 64
# Statements of the one-by-one regime are prepared once per connection on its kept cursors (timers/prepared.py;
# KT_TICK_PREPARE=0 for a pooler in transaction mode): planning each was most of the server's time for a batch
# of one. Big batches are left to the planner each time, which sees their arrays' sizes.

# The largest claim whose limit is written into its statement (PostgresStore.fetch_sent): at 64, the generic plan of
# a new domain's claim, or one under stale statistics, sorted a bitmap scan's rows (tests/timers/test_query_plans.py).
SMALL_CLAIM = 8

_ENDPOINTS = ("SELECT id, brand_id, livemode, enabled_events FROM timers_webhookendpoint "
              "WHERE brand_id = ANY(%b::varchar[]) AND status = 'enabled'")


def _json(value: str | bytes | dict[str, Any] | None) -> dict[str, Any]:
    if value is None:
        return {}
    got: dict[str, Any] = json.loads(value) if isinstance(value, str | bytes) else value
    return got


class PostgresStore:
    """Binary parameters and results on psycopg's own cursor, in Django's transaction.

    Django's cursors bind parameters client-side as SQL text, which spends more time quoting the batch's
    arrays element by element than the server spends writing them; binary arrays are sent as they are.
    """

    def _cursor(self) -> TickCursor:
        return new_cursor()

    def cursor(self) -> TickCursor:
        """The tick's own cursor (binary, server-side binding) in Django's transaction, for the batch's guard."""
        return self._cursor()

    def _items(self, rows: Iterable[Sequence[Any]]) -> list[Item]:
        # A row's columns are TIMER_FIELDS, Item's first fields in the same order: positional, without a dict a
        # row. Binary jsonb comes decoded (timers/prepared.py's loader).
        out = []
        for row in rows:
            item = Item(*row)
            if type(item.data) is not dict:
                item.data = _json(item.data)
            out.append(item)
        return out

    def fetch(self, domain: str, to: datetime, after: After | None, limit: int) -> list[Item]:
        return self.fetch_sent(domain, to, after, limit)()

    def fetch_sent(self, domain: str, to: datetime, after: After | None, limit: int) -> Callable[[], list[Item]]:
        """The claim's read sent (in the caller's pipeline, where it goes with the batch's guard), its rows read
        by the function it returns. On the kept cursor the guard's statement did not use (the other's answer is
        read after this one's)."""
        sql = f"SELECT {_COLUMNS} FROM timers_timer WHERE domain = %b AND status = 'armed' AND owed_at <= %b"
        params: list[Any] = [domain, to]
        if after is not None:
            sql += " AND (owed_at, place, opened_at, key) > (%b, %b, %b, %b)"
            params.extend(after)
        sql += " ORDER BY owed_at, place, opened_at, key LIMIT "
        # A live clock's read is prepared whatever its limit: a live turn reads what came due since the last, a
        # timer or a few at each fire, and planning it again was most of the server's time for the read (issue 39).
        if limit > PIPELINED_UP_TO and not is_live(domain):
            sql += "%b"
            params.append(limit)
            cur = self._cursor()
            cur.execute(sql, params, binary=True)

            def rows() -> list[Item]:
                with cur:
                    return self._items(cur.fetchall())

            return rows
        # A small limit written in: the prepared statement's generic plan then knows how few rows it stops at, and
        # is used (planned once); with the limit a parameter, the planner costed the generic plan at a tenth of the
        # armed rows, worse than any custom one, and planned the read anew at every batch, a batch of one timer's
        # most server time for it (issue 39). One statement for each such limit. A larger one stays a parameter:
        # a generic plan for thousands of rows sorts what a bitmap scan found (tests/timers/test_query_plans.py).
        if limit <= SMALL_CLAIM:
            sql += str(int(limit))
        else:
            sql += "%b"
            params.append(limit)
        _, read, prepare = kept_cursors()
        read.execute(sql, params, binary=True, prepare=prepare)
        return lambda: self._items(read.fetchall())

    def pipelined(self) -> contextlib.AbstractContextManager[object]:
        """The statements sent inside go in one round trip (psycopg's pipeline on this thread's connection), each
        answered in turn when read after it."""
        cur, _, _ = kept_cursors()
        return cur.connection.pipeline()

    def load(self, domain: str, key: str) -> Item | None:
        with self._cursor() as cur:
            cur.execute(f"SELECT {_COLUMNS} FROM timers_timer WHERE domain = {_DOMAIN} AND key = %b", [domain, key],
                        binary=True)
            rows = self._items(cur.fetchall())
        return rows[0] if rows else None

    def load_owners(self, domain: str, owners: list[str], limit: int) -> list[Item]:
        # Up to ``limit`` timers of each owner, in one statement (a lateral scan of timer_domain_owner each).
        cols = ", ".join(f't."{c}"' for c in TIMER_FIELDS)
        with self._cursor() as cur:
            cur.execute(f"SELECT {cols} FROM unnest(%b::varchar[]) AS o(owner) CROSS JOIN LATERAL "
                        f"(SELECT {_COLUMNS} FROM timers_timer WHERE domain = %b AND owner = o.owner LIMIT %b) t",
                        [owners, domain, limit], binary=True)
            return self._items(cur.fetchall())

    def load_many(self, domain: str, keys: list[str]) -> list[Item]:
        with self._cursor() as cur:
            cur.execute(f"SELECT {_COLUMNS} FROM timers_timer WHERE domain = {_DOMAIN} AND key = ANY(%b::varchar[])",
                        [domain, keys], binary=True)
            return self._items(cur.fetchall())

    def write(self, *, domain: str, new: list[Item], changed: list[Item], commits: list[CommitRow],
              events: list[EventRow], sends: list[SendRow], tallies: Sequence[TallyRow] = (),
              versions: Sequence[VersionRow] = (), also: Callable[[], None] | None = None,
              claim_sends: bool = False) -> outbox.Taken | None:
        """The batch's rows. ``claim_sends``: its sends are written claimed by this session's sender, which sends
        them once the batch commits (the Taken returned, for outbox.deliver); else they are owed to any."""
        small = max(len(new), len(commits), len(events), len(changed)) <= PIPELINED_UP_TO
        read: TickCursor | None  # the endpoints' read, a small batch's (only a small batch reads them here)
        run: Callable[[str, list[Any]], object]
        rows_in: RowsIn
        writing: contextlib.AbstractContextManager[object]
        if small:
            # One statement for the rows (each table's write a data-modifying WITH of it), sent with the rest in
            # one pipeline: a batch of one paid the client's and the server's cost of a statement four times.
            cur, read, prepare = kept_cursors()
            parts: list[tuple[str, list[Any]]] = []
            rows_in = _values_into(parts)
            run = lambda sql, params: parts.append((sql, params))  # noqa: E731
            writing = cur.connection.pipeline()
        else:
            cur, read, prepare, rows_in = self._cursor(), None, False, copy_in
            run = lambda sql, params: cur.execute(sql, params, binary=True)  # noqa: E731
            writing = cur
        brands = sorted({e[2] for e in events if e[2]}) if small else []
        with writing:
            if new:
                cols = [c for c in TIMER_FIELDS if c != "data"]
                rows_in(cur, "timers_timer", [*cols, "data", "domain"],
                        [*(_PG_TYPES[c] for c in cols), "jsonb", "varchar"],
                        [(*(getattr(i, c) for c in cols), i.data or {}, domain) for i in new])
            if changed:
                # A timer that fires or is superseded leaves the armed table in this statement, for its month of
                # history (timers/history.py). Only a refire (a wake) changes a row already in history: other
                # batches name the armed table alone, so the plan probes no month of history.
                armed_only = not any(i.was in LEFT for i in changed)
                params: list[Any]
                if small:
                    params = [v for i in changed for v in (i.id, *_changed_of(i))]
                    same: tuple[str, ...] = ()
                else:
                    # A column whose value is the same in every row (a batch of fires: status, attempt, wakes, the
                    # empty holds …) goes as one value, not an array: building each array element by element was
                    # a tenth of a fire's Python, and the server unnests what is left.
                    # Each row's values in one C call (attrgetter), the columns by transposing them: a getattr for
                    # each of a batch's values was the flush's largest share of Python after the COPYs.
                    columns: list[Sequence[Any]] = list(zip(*map(_changed_of, changed), strict=True))
                    n = len(changed)
                    same = tuple(c for c, col in zip(_CHANGED, columns, strict=True) if col.count(col[0]) == n)
                    params = [[i.id for i in changed],
                              *(list(col) for c, col in zip(_CHANGED, columns, strict=True) if c not in same),
                              *(col[0] for c, col in zip(_CHANGED, columns, strict=True) if c in same)]
                with probed_by_key(cur, len(changed)):
                    # The domain too: on tables distributed by it, one shard (docs/scaling.md).
                    run(_update_sql(len(changed) if small else 0, armed_only, same), [*params, domain])
            if commits:
                rows_in(cur, "timers_commit", ["id", "domain", "key", "timer_id", "outcome", "code", "at"],
                        ["varchar"] * 6 + ["timestamptz"], commits)
            if events:
                rows_in(cur, "timers_event", ["id", "domain", "brand_id", "type", "subject", "owed_at", "key", "data",
                                              "fired_at", "late_by"],
                        ["varchar"] * 5 + ["timestamptz", "varchar", "jsonb", "timestamptz", "interval"], events)
            if tallies:
                run(tally_sql(len(tallies), "%b"), [v for row in tallies for v in row])
            if small and also is not None:
                # The caller's writes (the clock's position) as more WITHs of the batch's one statement.
                with carrying(parts):
                    also()
                also = None
            if small and (parts or brands):
                # The webhook endpoints' read is the statement's own query, after the writes' WITHs (on the other
                # cursor, whose results are read after the pipeline).
                if brands:
                    parts.append((_ENDPOINTS, [brands]))
                # Brands are read only by a small batch, which has the read cursor (as the fetchall below).
                (read if brands else cur).execute(together(tuple(sql for sql, _ in parts)),  # type: ignore[union-attr]
                                                  [v for _, ps in parts for v in ps], binary=True, prepare=prepare)
            if versions:  # a repin's (rare): apart, so the batch's update of every changed timer stays as it is
                cur.execute("UPDATE timers_timer AS t SET version = v.version FROM unnest(%b::varchar[], %b::varchar[]) "
                            f"AS v(id, version) WHERE t.id = v.id AND t.domain = {_DOMAIN}",
                            [[i for i, _ in versions], [v for _, v in versions], domain], binary=True)
            if also is not None:
                # The caller's statements (the clock's position) on the kept cursor: a big batch's, after its COPYs.
                also()
        endpoints = read.fetchall() if brands else None  # type: ignore[union-attr]
        if events:
            fan_out(events, endpoints=endpoints)
            email_owners(events)
        if not sends:
            return None
        # Straight from the batch's tuples, as its events go: an Outbox instance a send (and its payload through
        # the model field) cost the process more than the COPY itself.
        claim = claim_sends and outbox.order_of(domain) is None  # an ordered domain's line is claimed in order
        with self._cursor() as cur:
            status, claimer, until, at = "pending", "", None, 0.0
            if claim:
                status = "sending"
                claimer, until, at = outbox.claim_ahead(cur)
            copy_in(cur, "timers_outbox", _SEND_COLUMNS, _SEND_TYPES,
                    ((*s, status, "", claimer, until) for s in sends))
        if not claim:
            return None
        return outbox.Taken([outbox.Claimed(s[0], s[5], s[6], False, s[1]) for s in sends], claimer, at)


# A batch's sends as Firing.send queued them (id, domain, brand, key, attempt, transport, payload, created_at,
# seq), then: owed (pending, claimed by nobody), or claimed already by the sender that sends them (claim_sends).
_SEND_COLUMNS = ["id", "domain", "brand_id", "key", "attempt", "transport", "payload", "created_at", "seq", "status",
                 "error", "claimed_by", "lease_until"]
_SEND_TYPES = (["varchar"] * 4 + ["integer", "varchar", "jsonb", "timestamptz", "smallint", "varchar", "text", "varchar",
                                  "timestamptz"])


# What the tick's update of changed timers sets, from its values.
_CHANGED = ("status", "owed_at", "fired_at", "late_by", "attempt", "wakes", "superseded_by", "by", "held_since",
            "held_by", "remaining", "tick_pass")
_changed_of = operator.attrgetter(*_CHANGED)  # an item's _CHANGED values, as a tuple


@functools.lru_cache(maxsize=256)
def _update_sql(rows: int, armed_only: bool, same: tuple[str, ...] = ()) -> str:
    """The update of changed timers from ``rows`` rows of VALUES (a small batch), or (0) from arrays. A small
    batch's VALUES tell a prepared statement's generic plan how many rows come: from arrays it was planned
    anew at every execution (its estimate of an unnest's rows is not one), most of the server's time for a
    batch of one. From arrays, the columns in ``same`` come as one value each (a one-row s), after the arrays."""
    if rows:
        names = ", ".join(f'"{c}"' for c in _CHANGED)
        one = "(%b::varchar, " + ", ".join(f"%b::{_PG_TYPES[c]}" for c in _CHANGED) + ")"
        source = f"(VALUES {', '.join([one] * rows)}) AS v(id, {names})"
    else:
        arrays = [c for c in _CHANGED if c not in same]
        source = ("unnest(%b::varchar[]" + "".join(f", %b::{_PG_TYPES[c]}[]" for c in arrays) + ") AS v(id"
                  + "".join(f', "{c}"' for c in arrays) + ")")
        if same:
            source += ", (SELECT " + ", ".join(f'%b::{_PG_TYPES[c]} AS "{c}"' for c in same) + ") AS s"
    col = {c: f's."{c}"' if c in same else f'v."{c}"' for c in _CHANGED}
    return ("UPDATE timers_timer AS t SET " + ", ".join(f'"{c}" = {col[c]}' for c in _CHANGED)
            + f", moved_at = CASE WHEN {col['status']} IN ('fired', 'superseded') AND t.status IN ('armed', 'held')"
            " THEN now() ELSE t.moved_at END"
            + f" FROM {source} WHERE t.id = v.id AND t.domain = {_DOMAIN}"
            + (" AND t.status IN ('armed', 'held')" if armed_only else ""))


# The domain beside a key, as a value the planner cannot see: a domain newer than the statistics (every new
# test clock's, until the next ANALYZE) is estimated at one row, and a statement naming it as a constant was
# planned as a walk of all its rows (timer_domain_owner), once per key for a join. Seen as a parameter, a
# domain is estimated as an average one, and the key's own index wins (tests/timers/test_query_plans.py, "new").
_DOMAIN = "(SELECT %b::varchar)"


# How a batch's rows go in: a binary COPY (rows.copy_in), or a pipeline's INSERT … VALUES (_values_into).
RowsIn = Callable[[TickCursor, str, Sequence[str], Sequence[str], Sequence[Sequence[Any]]], None]


def _values_into(parts: list[tuple[str, list[Any]]]) -> RowsIn:
    """copy_in's rows as an INSERT … VALUES added to ``parts``, in the rows' order: a statement a pipeline can
    carry (a COPY waits for the server twice), its parameters plain values (each array of an unnest costs
    Python more to build than a few rows' values), prepared once for each number of rows."""

    def rows_in(cur: TickCursor, table: str, columns: Sequence[str], types: Sequence[str],
                rows: Sequence[Sequence[Any]]) -> None:
        jsonb = [t == "jsonb" for t in types]
        parts.append((_values_sql(table, tuple(columns), tuple(types), len(rows)),
                      [Jsonb(v) if j and v is not None else v for row in rows for v, j in zip(row, jsonb, strict=True)]))

    return rows_in


@functools.lru_cache(maxsize=256)
def _values_sql(table: str, columns: tuple[str, ...], types: tuple[str, ...], rows: int) -> str:
    one = "(" + ", ".join(f"%b::{t}" for t in types) + ")"
    cols = ", ".join(f'"{c}"' for c in columns)
    return f"INSERT INTO {table} ({cols}) VALUES {', '.join([one] * rows)}"


_PG_TYPES = {
    "id": "varchar", "key": "varchar", "owner": "varchar", "kind": "varchar", "place": "smallint",
    "handler": "varchar", "status": "varchar", "owed_at": "timestamptz", "opened_at": "timestamptz",
    "armed_at": "timestamptz", "fired_at": "timestamptz", "late_by": "interval", "attempt": "integer",
    "wakes": "integer", "version": "varchar", "superseded_by": "varchar", "by": "varchar",
    "held_since": "timestamptz", "held_by": "varchar", "remaining": "interval", "armed_by": "varchar",
    "brand_id": "varchar", "tick_pass": "smallint",
}  # fmt: skip


def _write_sends(sends: list[SendRow]) -> None:
    insert_rows([Outbox(id=s[0], domain=s[1], brand_id=s[2], key=s[3], attempt=s[4], transport=s[5], payload=s[6],
                        created_at=s[7], seq=s[8]) for s in sends])


class OrmStore:
    """Portable reads and writes for the embedded default; the same contract, row by row where needed."""

    def fetch_sent(self, domain: str, to: datetime, after: After | None, limit: int) -> Callable[[], list[Item]]:
        # No pipeline here: read when asked, after the guard's answer, as a statement of its own.
        return lambda: self._fetch(domain, to, after, limit)

    def pipelined(self) -> contextlib.AbstractContextManager[object]:
        return contextlib.nullcontext()

    def fetch(self, domain: str, to: datetime, after: After | None, limit: int) -> list[Item]:
        return self.fetch_sent(domain, to, after, limit)()

    def _fetch(self, domain: str, to: datetime, after: After | None, limit: int) -> list[Item]:
        qs = Timer.objects.filter(domain=domain, status="armed", owed_at__lte=to)
        if after is not None:
            o, p, op, k = after
            qs = qs.filter(
                Q(owed_at__gt=o)
                | Q(owed_at=o, place__gt=p)
                | Q(owed_at=o, place=p, opened_at__gt=op)
                | Q(owed_at=o, place=p, opened_at=op, key__gt=k)
            )
        rows = qs.order_by("owed_at", "place", "opened_at", "key").values_list(*TIMER_FIELDS)[:limit]
        return [Item(**dict(zip(TIMER_FIELDS, row, strict=True))) for row in rows]

    def load(self, domain: str, key: str) -> Item | None:
        row = Timer.objects.filter(domain=domain, key=key).values_list(*TIMER_FIELDS).first()
        return None if row is None else Item(**dict(zip(TIMER_FIELDS, row, strict=True)))

    def load_owners(self, domain: str, owners: list[str], limit: int) -> list[Item]:
        out: list[Item] = []
        for owner in owners:  # the embedded default: a query per owner keeps each owner's limit
            rows = Timer.objects.filter(domain=domain, owner=owner).values_list(*TIMER_FIELDS)[:limit]
            out.extend(Item(**dict(zip(TIMER_FIELDS, row, strict=True))) for row in rows)
        return out

    def load_many(self, domain: str, keys: list[str]) -> list[Item]:
        out: list[Item] = []
        for at in range(0, len(keys), 500):  # SQLite caps the variables of one statement
            rows = Timer.objects.filter(domain=domain, key__in=keys[at:at + 500]).values_list(*TIMER_FIELDS)
            out.extend(Item(**dict(zip(TIMER_FIELDS, row, strict=True))) for row in rows)
        return out

    def write(self, *, domain: str, new: list[Item], changed: list[Item], commits: list[CommitRow],
              events: list[EventRow], sends: list[SendRow], tallies: Sequence[TallyRow] = (),
              versions: Sequence[VersionRow] = (), also: Callable[[], None] | None = None,
              claim_sends: bool = False) -> None:
        # claim_sends: PostgreSQL's (a sender is a database session); here the sends are owed to any sender.
        if new:
            Timer.objects.bulk_create(
                [Timer(domain=domain, **{f: getattr(i, f) for f in TIMER_FIELDS}) for i in new]
            )
        for i in changed:
            moved = {"moved_at": Now()} if i.status in LEFT and i.was not in LEFT else {}
            Timer.objects.filter(pk=i.id).update(
                **moved, status=i.status, owed_at=i.owed_at, fired_at=i.fired_at, late_by=i.late_by, attempt=i.attempt,
                wakes=i.wakes, superseded_by=i.superseded_by or "", by=i.by or "", held_since=i.held_since,
                held_by=i.held_by or "", remaining=i.remaining, tick_pass=i.tick_pass or 1,
            )
        for timer_id, version in versions:
            Timer.objects.filter(pk=timer_id).update(version=version)
        if commits:
            Commit.objects.bulk_create(
                [Commit(id=c[0], domain=c[1], key=c[2], timer_id=c[3], outcome=c[4], code=c[5], at=c[6])
                 for c in commits]
            )
        if events:
            Event.objects.bulk_create(
                [Event(id=e[0], domain=e[1], brand_id=e[2], type=e[3], subject=e[4], owed_at=e[5], key=e[6],
                       data=e[7], fired_at=e[8], late_by=e[9]) for e in events]
            )
            fan_out(events)
            email_owners(events)
        if tallies:
            with connection.cursor() as cur:
                cur.execute(tally_sql(len(tallies), "%s"), [v for row in tallies for v in row])
        if sends:
            _write_sends(sends)
        if also is not None:
            also()


def get_store() -> PostgresStore | OrmStore:
    return PostgresStore() if connection.vendor == "postgresql" else OrmStore()


__all__ = ["OrmStore", "PostgresStore", "get_store"]
