"""What one batch of the tick keeps for its handlers, and the savepoint a handler pays only when it writes.

A batch is one transaction in which thousands of timers fire. Domain code that reads the same rows for many
of them (a clock item and its calendar for each rung) asks a cache of the batch, filled with set queries,
instead of one query per fire. A cache lives for one batch only, and any write statement on a table it
reads drops what it holds (a single-row update by primary key drops that row; an insert drops only what
it said was missing; any other write drops the cache), so a handler never sees an older row than a fresh query would show it.

A handler registered ``atomic`` must leave nothing behind when it fails. It used to run in a savepoint of
its own (two statements a fire, most of a rung's cost). Now the savepoint opens just before the handler's
first statement to the database, so a handler served from the batch's caches and the engine's memory costs
no statement at all; its proposal is memory until the gate commits it either way.

A handler's own row writes can wait too (``save`` and ``create``): a write is kept in the batch, applied to
what its caches hold, and sent with the batch's other writes to the same table as one set statement, just
before the first statement that reads or writes that table, and at the latest when the batch ends. A
handler that fails loses what it kept. A kept write that fails when it is sent fails the batch: the run
stops (``KeptWriteFailed``) and its batch starts again with every write made in its firing's savepoint
(``Run(keep_writes=False)``), where a bad row is pushed out as ever.
"""

from __future__ import annotations

import contextlib
import copy
import re
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextvars import ContextVar
from typing import Any, Protocol

import psycopg
from django.db import DatabaseError, connection, transaction
from django.db.models import JSONField, Model
from django.db.models.base import ModelState

from . import kept_writes
from .kept_writes import Kept, unique_columns
from .rows import M, insert_new

# What a cached value's rows are, by primary key, in a table its cache reads: to drop just those rows on a write.
RowKeys = Callable[[Any, str], Iterable[Any]]


class _Run(Protocol):
    def holding(self, handler_names: tuple[str, ...]) -> Sequence[Any]: ...


class Reading(Protocol):
    """A firing as ``row`` reads ahead for it (timers.engine.Firing, whose module imports this one)."""

    @property
    def run(self) -> _Run: ...


_current: ContextVar[Batch | None] = ContextVar("keeping_time_batch", default=None)

# Django's save(update_fields=…) of one row: UPDATE "table" SET … WHERE "table"."id" = %s
_BY_PK = re.compile(r'^UPDATE "(\w+)" SET .* WHERE "\1"\."id" = %s$', re.S)
_INSERT = re.compile(r'\s*INSERT\s+INTO\s+"(\w+)"', re.I)
_TABLES = re.compile(r'(?:UPDATE|INTO|FROM|JOIN)\s+"(\w+)"', re.I)
_NO_TABLE = ("SAVEPOINT", "RELEASE", "ROLLBACK")  # a savepoint's own statements touch no table


class KeptWriteFailed(DatabaseError):
    """A write a batch kept failed when it was sent: the batch is rolled back whole; run it again with each
    write in its firing's savepoint (``Run(keep_writes=False)``)."""


class Cache(dict[Any, Any]):
    """Rows a batch read once, by whatever key its reader chose; ``loaded`` says the set query ran."""

    def __init__(self, tables: tuple[str, ...], pk: RowKeys | None = None, carry: bool = False):
        super().__init__()
        self.tables = tables
        self.pk = pk  # the primary keys (in a table it reads) a value was read from, to drop just those rows
        self.loaded = False
        # Kept for the run's next batch when nobody else writes to the domain (a test clock advancing): its
        # rows are the domain's own, which only the run writes then, through the batch that keeps them current.
        self.carry = carry
        self._by_pk: dict[tuple[str, Any], set[Any]] = {}  # (table, primary key) → the keys whose value holds it
        self._none: set[Any] = set()  # the keys that have no row

    def __setitem__(self, key: Any, value: Any) -> None:
        super().__setitem__(key, value)
        if value is None:
            self._none.add(key)
            return
        self._none.discard(key)
        if self.pk is not None:
            for table in self.tables:
                for pk in self.pk(value, table):
                    self._by_pk.setdefault((table, pk), set()).add(key)

    def __delitem__(self, key: Any) -> None:
        super().__delitem__(key)
        self._none.discard(key)

    def pop(self, key: Any, *default: Any) -> Any:
        self._none.discard(key)
        return super().pop(key, *default)

    def clear(self) -> None:
        super().clear()
        self._by_pk.clear()
        self._none.clear()

    def inserted(self) -> None:
        """Rows were inserted into a table it reads: a cache of rows by key keeps every row it holds (an
        insert changes none of them) and forgets only that a key had none; any other cache is dropped."""
        if self.pk is None:
            self.clear()
            return
        for key in list(self._none):
            del self[key]

    def fill(self, keys: set[Any], load: Callable[[set[Any]], Mapping[Any, Any]]) -> None:
        """Read ``keys`` with one call of ``load`` ({key: row}): a key it does not return has no row, and what it
        returns beyond them (a clock's other items) is kept too."""
        found = load(keys)
        for k in keys:
            self[k] = found.get(k)
        for k, v in found.items():
            if k not in self:  # not dict.setdefault: it would skip the index of rows by primary key
                self[k] = v

    def drop(self, table: str, pk: Any | None) -> None:
        if pk is None or self.pk is None:
            self.clear()
            return
        for key in self._by_pk.pop((table, pk), ()):
            self.pop(key, None)


def _json(v: Any) -> Any:
    # A JSON field's value copied (dicts and lists all the way down; anything else is immutable).
    if isinstance(v, dict):
        return {k: _json(x) for k, x in v.items()}
    if isinstance(v, list):
        return [_json(x) for x in v]
    return v


_MUTABLE: dict[type[Model], tuple[str, ...]] = {}
_FIELD_ATTRS: dict[type[Model], set[str]] = {}


def _mutable(cls: type[Model]) -> tuple[str, ...]:
    """The attributes of a model's instances that can hold a dict or a list: its JSON fields."""
    found = _MUTABLE.get(cls)
    if found is None:
        found = _MUTABLE[cls] = tuple(f.attname for f in cls._meta.concrete_fields if isinstance(f, JSONField))
    return found


def clone(obj: M) -> M:
    """A model instance as a fresh instance with its related instances cloned too, sharing nothing a
    handler might change: immutable field values are shared, dicts and lists (JSON fields) copied."""
    cls = obj.__class__
    new = cls.__new__(cls)
    values = obj.__dict__.copy()
    for name in _mutable(cls):
        v = values.get(name)
        if isinstance(v, dict | list):
            values[name] = _json(v)
    fields = _FIELD_ATTRS.get(cls)
    if fields is None:
        fields = _FIELD_ATTRS[cls] = {f.attname for f in cls._meta.concrete_fields} | {"_state"}
    for name in values.keys() - fields:  # set on the instance, not a field: copied if a dict or a list
        if isinstance(values[name], dict | list):
            values[name] = _json(values[name])
    old = obj._state
    state = values["_state"] = ModelState()
    state.db, state.adding = old.db, old.adding
    related = old.__dict__.get("fields_cache")
    if related:
        state.fields_cache = {k: None if v is None else clone(v) for k, v in related.items()}
    new.__dict__ = values
    return new


def _find(value: Model | None, table: str, pk: Any, depth: int = 0) -> Model | None:
    """The instance of ``table`` with ``pk`` in a cached value (the value or one of its related instances)."""
    if value is None or depth > 4:
        return None
    if value._meta.db_table == table and value.pk == pk:
        return value
    for rel in value._state.fields_cache.values():
        hit = _find(rel, table, pk, depth + 1)
        if hit is not None:
            return hit
    return None


class Batch:
    def __init__(self, *, keep_writes: bool = False) -> None:
        self.caches: dict[str, Cache] = {}
        self.keep_writes = keep_writes
        self.kept: list[Kept] = []
        self._kept_tables: dict[str, int] = {}  # table → kept writes to it
        self._kept_seen_by_insert: dict[str, int] = {}  # table → kept inserts and updates of unique fields
        self._quiet = 0
        self._blind = 0  # inside quiet(sees_kept=False): reads that need not send the kept writes first
        self._handler = False
        self._sid: str | None = None
        self._fire = 0  # the handler running (its number in the batch), 0 outside one
        self._sending = False
        self._replay: list[Kept] = []  # earlier handlers' writes sent inside this handler's savepoint
        self._fresh: tuple[str, ...] = ()  # caches the rows being inserted cannot be missing from (fresh())
        self.keys: dict[type[Model], list[int]] = {}  # keys taken from sequences, not used yet (new_keys)

    # -- caches ------------------------------------------------------------------------------------
    def cache(self, name: str, *, tables: tuple[str, ...], pk: RowKeys | None = None, carry: bool = False) -> Cache:
        found = self.caches.get(name)
        if found is None:
            found = self.caches[name] = Cache(tables, pk, carry)
        elif carry:
            found.carry = True
        return found

    def carried(self) -> dict[str, Cache]:
        """The caches to hand to the run's next batch (``take``), once this one's writes are sent."""
        return {name: c for name, c in self.caches.items() if c.carry}

    def take(self, caches: dict[str, Cache]) -> None:
        """The last batch's caches (``carried``), given only when nothing but the run has written to the domain
        since: a test clock advancing, whose objects refuse outside writes."""
        for name, c in caches.items():
            c.loaded = False  # a first miss reads ahead for this batch's timers again
            self.caches[name] = c


    @contextlib.contextmanager
    def quiet(self, *, sees_kept: bool = True) -> Iterator[None]:
        """A cache's own reads: they neither open the handler's savepoint nor drop anything. ``sees_kept=False``:
        nor do they send the kept writes first, for a reader whose cache already holds every kept write its
        reads could see (a read of what the cache lacks cannot find them)."""
        self._quiet += 1
        self._blind += not sees_kept
        try:
            yield
        finally:
            self._quiet -= 1
            self._blind -= not sees_kept

    # -- the handler's savepoint -------------------------------------------------------------------
    @contextlib.contextmanager
    def handler(self) -> Iterator[None]:
        """Run an atomic handler: a failure after any statement of its own rolls back to the savepoint
        opened before that statement; a failure before any leaves nothing to roll back."""
        self._handler, self._sid = True, None
        self._fire += 1
        mine, before = self._fire, len(self.kept)
        try:
            yield
        except BaseException as exc:
            sid, self._sid, self._handler = self._sid, None, False
            kept_any = len(self.kept) != before or any(k.owner == mine for k in self.kept)
            self._forget(mine)
            replay, self._replay = self._replay, []
            if sid is not None:
                # As Django's atomic does: a failed ORM write marked the transaction for rollback, and the
                # ROLLBACK TO SAVEPOINT is refused until that mark is lifted.
                transaction.set_rollback(False)
                transaction.savepoint_rollback(sid)
                # Earlier handlers' writes sent inside the savepoint are gone with it: kept again, in order.
                for k in reversed(replay):
                    self._keep(k, front=True)
                for cache in self.caches.values():
                    cache.clear()  # what the handler wrote is gone: what a cache re-read since may be too
            elif kept_any:
                for cache in self.caches.values():
                    cache.clear()  # its kept writes reached the caches
            elif isinstance(exc, DatabaseError):
                raise  # only a cache's own read can fail here, and the transaction is lost with it
            raise
        else:
            sid, self._sid, self._handler = self._sid, None, False
            self._replay = []
            if sid is not None:
                transaction.savepoint_commit(sid)

    def watch(self, execute: Callable[..., Any], sql: str, params: Any, many: bool, context: dict[str, Any]) -> Any:
        """Django's execute wrapper for the batch's statements (the store's own cursors do not pass here)."""
        if self._sending:
            return execute(sql, params, many, context)
        if self._kept_tables and not self._blind:
            self._before(sql)
        if not self._quiet:
            if self._handler and self._sid is None:
                self._open()
            if not sql.lstrip()[:6].upper() == "SELECT" and self.caches:
                self._written(sql, params)
        return execute(sql, params, many, context)

    def _open(self) -> None:
        self._sending = True  # the SAVEPOINT statement itself passes the wrapper too
        try:
            self._sid = transaction.savepoint()
        finally:
            self._sending = False

    # -- kept writes -------------------------------------------------------------------------------
    def keep_save(self, obj: Model, fields: tuple[str, ...]) -> None:
        model = obj.__class__
        snap = model.__new__(model)
        snap.__dict__ = {"_state": copy.copy(obj._state), model._meta.pk.attname: obj.pk}
        # Each of ``fields`` is a concrete field, never a reverse relation (which the stubs' get_field allows).
        for name in fields:
            attname = model._meta.get_field(name).attname  # type: ignore[union-attr]
            v = getattr(obj, attname)
            snap.__dict__[attname] = copy.deepcopy(v) if isinstance(v, dict | list) else v
        self._keep(Kept(model, snap, fields, self._owner()))
        table = model._meta.db_table
        for cache in self.caches.values():
            if table not in cache.tables:
                continue
            keys = cache._by_pk.get((table, obj.pk), ())
            for key in list(keys):
                hit = _find(cache.get(key), table, obj.pk)
                if hit is None:
                    cache.pop(key, None)
                    continue
                for name in fields:
                    attname = model._meta.get_field(name).attname  # type: ignore[union-attr]  # as above
                    setattr(hit, attname, copy.deepcopy(snap.__dict__[attname]))

    def keep_create(self, obj: Model, *, skip_taken: bool = False, kept_by: tuple[str, ...] = ()) -> None:
        self._keep(Kept(obj.__class__, obj, None, self._owner(), skip_taken))
        table = obj._meta.db_table
        for name, cache in self.caches.items():
            if table in cache.tables and name not in kept_by:
                cache.inserted()

    def _owner(self) -> int:
        return self._fire if self._handler else 0

    def _keep(self, k: Kept, *, front: bool = False) -> None:
        if front:
            self.kept.insert(0, k)
        else:
            self.kept.append(k)
        self._count(k)

    def _count(self, k: Kept, step: int = 1) -> None:
        table = k.table
        counts = [self._kept_tables]
        if k.fields is None or unique_columns(k.model).intersection(k.fields):
            counts.append(self._kept_seen_by_insert)
        for count in counts:
            n = count.get(table, 0) + step
            if n:
                count[table] = n
            else:
                del count[table]

    def _forget(self, owner: int) -> None:
        if any(k.owner == owner for k in self.kept):
            self.kept = [k for k in self.kept if k.owner != owner]
            self._recount()

    def _recount(self) -> None:
        self._kept_tables, self._kept_seen_by_insert = {}, {}
        for k in self.kept:
            self._count(k)

    def _before(self, sql: str) -> None:
        """Send the kept writes a statement could see: those to the tables it names (every kept write when it
        names none that we can read); an insert sees only kept inserts and kept updates of unique fields."""
        head = sql.lstrip()[:9].upper()
        if head.startswith(_NO_TABLE):
            return
        tables = set(_TABLES.findall(sql))
        if not tables:
            self.send()
            return
        into = _INSERT.match(sql)
        if into and tables == {into.group(1)}:
            # An insert conflicts or not by unique fields only: kept updates of other fields wait.
            wanted = tables.intersection(self._kept_seen_by_insert)
        else:
            wanted = tables.intersection(self._kept_tables)
        if wanted:
            self.send(lambda k: k.table in wanted)

    def send(self, which: Callable[[Kept], bool] | None = None) -> None:
        """Send kept writes (``which`` of them, else all), as one statement per table and kind: those of
        earlier handlers outside the running handler's savepoint when it has none yet, its own inside it."""
        if not self.kept:
            return
        todo = self.kept if which is None else [k for k in self.kept if which(k)]
        if not todo:
            return
        if which is None:
            self.kept, self._kept_tables, self._kept_seen_by_insert = [], {}, {}
        else:
            self.kept = [k for k in self.kept if not which(k)]
            for k in todo:
                self._count(k, -1)
        mine = self._owner()
        others = [k for k in todo if not mine or k.owner != mine]
        own = [k for k in todo if mine and k.owner == mine]
        if others:
            if self._sid:
                self._replay.extend(others)
            self._write(others)
        if own:
            if self._handler and self._sid is None:
                self._open()
            self._write(own)

    def _write(self, kept: list[Kept]) -> None:
        self._sending = True
        try:
            kept_writes.write(kept)
        except (DatabaseError, psycopg.Error) as exc:  # the latter from a cursor of its own (insert_rows)
            raise KeptWriteFailed(f"a write the batch kept failed: {exc}") from exc
        finally:
            self._sending = False

    def _written(self, sql: str, params: Any) -> None:
        into = _INSERT.match(sql)
        if into and "DO UPDATE" not in sql.upper():
            for name, cache in self.caches.items():
                if into.group(1) in cache.tables and name not in self._fresh:
                    cache.inserted()
            return
        tables = set(_TABLES.findall(sql))
        by_pk = _BY_PK.match(sql)
        pk = params[-1] if by_pk and params else None
        for cache in self.caches.values():
            for table in tables.intersection(cache.tables):
                cache.drop(table, pk)


def current() -> Batch | None:
    return _current.get()


def taken(name: str, *, tables: tuple[str, ...], owner: Any, ahead: Callable[[], set[Any]],
          load: Callable[[set[Any]], set[Any]]) -> set[Any] | None:
    """The keys already taken (a period minted, a Run started) for ``owner`` and the owners ``ahead`` names,
    read once a batch and re-read for an owner outside them; the caller adds what it keeps, and a unique
    constraint backs the set (a kept row it missed fails its batch, which runs again carefully). None outside
    a batch that keeps writes: insert and let the constraint answer. Another write to ``tables`` drops it."""
    b = current()
    if b is None or not b.keep_writes:
        return None
    cache = b.cache(name, tables=tables)
    if "taken" in cache and owner in cache["owners"]:
        kept: set[Any] = cache["taken"]
        return kept
    owners = {owner} | ahead()
    with b.quiet():
        found = load(owners)
    cache["taken"], cache["owners"] = found, owners
    return found


KEY_BLOCK = 512  # keys a batch takes from a table's sequence at once (new_keys)


def new_keys(model: type[Model], n: int) -> list[int] | None:
    """``n`` primary keys from ``model``'s sequence, for rows a batch keeps (PostgreSQL, in a batch that keeps
    writes; None elsewhere: insert the rows, and the database numbers them). Taken a block at a time through
    a cursor of its own, so the statement neither sends kept writes nor opens a handler's savepoint; a key
    left at the batch's end is a gap in the sequence, as a rolled-back insert leaves."""
    b = current()
    if b is None or not b.keep_writes or connection.vendor != "postgresql":
        return None
    pool = b.keys.setdefault(model, [])
    if len(pool) < n:
        connection.ensure_connection()
        with psycopg.Cursor(connection.connection) as cur:
            cur.execute("SELECT nextval(pg_get_serial_sequence(%s, %s)) FROM generate_series(1, %s)",
                        [model._meta.db_table, model._meta.pk.column, max(n, KEY_BLOCK)])
            pool.extend(r[0] for r in cur.fetchall())
    out = pool[:n]
    del pool[:n]
    return out


def save(obj: Model, *, fields: list[str] | tuple[str, ...]) -> None:
    """``obj.save(update_fields=fields)``; in a batch that keeps writes, kept and sent with the batch's other
    updates of the table as one statement (the caches see the new values at once)."""
    b = current()
    if b is None or not b.keep_writes or obj.pk is None:
        obj.save(update_fields=list(fields))
        return
    b.keep_save(obj, tuple(fields))


def create(obj: Model, *, skip_taken: bool = False, kept_by: tuple[str, ...] = ()) -> None:
    """``obj.save(force_insert=True)`` (with ``skip_taken``, a row a unique constraint holds already is
    skipped); in a batch that keeps writes, sent with the batch's other inserts into the table. ``kept_by``
    names caches the caller keeps up to date with this row itself (they are not dropped)."""
    b = current()
    if b is None or not b.keep_writes:
        if skip_taken:
            insert_new([obj])
        else:
            obj.save(force_insert=True)
        return
    b.keep_create(obj, skip_taken=skip_taken, kept_by=kept_by)


def row(f: Reading, key: Any, *, name: str, load: Callable[[set[Any]], Mapping[Any, M]], ahead: tuple[str, ...],
        key_of: Callable[[Any], Any], tables: tuple[str, ...], pk: RowKeys,
        read_ahead: bool = True, carry: bool = False) -> M | None:
    """The row ``load`` finds for ``key``, read for a firing ``f``. In a batch, the first ask reads the rows of
    every timer the batch holds whose handler is in ``ahead`` (``key_of`` a timer) in one query, and a row a
    write has dropped since is read alone; a handler gets a copy, so what it changes without saving never
    reaches the next. ``load`` maps a set of keys to {key: row} (it may add rows it was not asked for); a key
    it does not return has no row; ``key_of`` may return None (a held timer that leads to no row).
    ``read_ahead=False`` is for a row no held timer leads to (a sibling of the row a firing is about): a miss
    reads that row alone. ``carry``: the rows are the domain's own (``Cache.carry``)."""
    b = current()
    if b is None:
        return load({key}).get(key)
    cache = b.cache(name, tables=tables, pk=pk, carry=carry)
    if key not in cache:
        # The first ask reads ahead for every timer the batch holds; a later miss (a row a write dropped, a
        # timer armed since) for every held timer whose row is not in the cache, so misses stay few.
        keys = {key}
        if read_ahead:
            cache.loaded = True
            keys.update(k for k in map(key_of, f.run.holding(ahead)) if k is not None and k not in cache)
        with b.quiet():
            cache.fill(keys, load)
    value = cache[key]
    return None if value is None else clone(value)


@contextlib.contextmanager
def fresh(*names: str) -> Iterator[None]:
    """Inserts made inside are of rows no key of the named caches can have asked for (the items of a clock
    opened just now): they keep what those caches know is missing."""
    b = current()
    if b is None:
        yield
        return
    before, b._fresh = b._fresh, names
    try:
        yield
    finally:
        b._fresh = before


@contextlib.contextmanager
def batch(*, keep_writes: bool = False) -> Iterator[Batch]:
    """One batch of the tick: inside its transaction, with every Django statement watched; what it kept is
    sent before the transaction ends (a failure then is ``KeptWriteFailed``)."""
    b = Batch(keep_writes=keep_writes)
    token = _current.set(b)
    try:
        with connection.execute_wrapper(b.watch):
            yield b
            b.send()
    finally:
        _current.reset(token)


# Checks of what the domain's carried rows hold but its refusal of outside writes does not cover (a brand's
# calendars): each maps a domain to a token; a changed token drops what a run carried (Run.carry).
_carry_checks: list[Callable[[str], Any]] = []


def on_carry_check(check: Callable[[str], Any]) -> None:
    if check not in _carry_checks:
        _carry_checks.append(check)


def carry_token(domain: str) -> tuple[Any, ...]:
    return tuple(check(domain) for check in _carry_checks)
