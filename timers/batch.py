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
"""

from __future__ import annotations

import contextlib
import copy
import re
from collections.abc import Callable, Iterator
from contextvars import ContextVar
from typing import Any

from django.db import DatabaseError, connection, transaction

_current: ContextVar[Batch | None] = ContextVar("keeping_time_batch", default=None)

# Django's save(update_fields=…) of one row: UPDATE "table" SET … WHERE "table"."id" = %s
_BY_PK = re.compile(r'^UPDATE "(\w+)" SET .* WHERE "\1"\."id" = %s$', re.S)
_INSERT = re.compile(r'\s*INSERT\s+INTO\s+"(\w+)"', re.I)
_TABLES = re.compile(r'(?:UPDATE|INTO|FROM|JOIN)\s+"(\w+)"', re.I)


class Cache(dict):
    """Rows a batch read once, by whatever key its reader chose; ``loaded`` says the set query ran."""

    def __init__(self, tables: tuple[str, ...], pk: Callable[[Any, str], tuple] | None = None):
        super().__init__()
        self.tables = tables
        self.pk = pk  # the primary keys (in a table it reads) a value was read from, to drop just those rows
        self.loaded = False
        self._by_pk: dict[tuple[str, Any], set] = {}

    def __setitem__(self, key: Any, value: Any) -> None:
        super().__setitem__(key, value)
        if value is not None and self.pk is not None:
            for table in self.tables:
                for pk in self.pk(value, table):
                    self._by_pk.setdefault((table, pk), set()).add(key)

    def clear(self) -> None:
        super().clear()
        self._by_pk.clear()

    def inserted(self) -> None:
        """Rows were inserted into a table it reads: a cache of rows by key keeps every row it holds (an
        insert changes none of them) and forgets only that a key had none; any other cache is dropped."""
        if self.pk is None:
            self.clear()
            return
        for key in [k for k, v in self.items() if v is None]:
            del self[key]

    def drop(self, table: str, pk: Any | None) -> None:
        if pk is None or self.pk is None:
            self.clear()
            return
        for key in self._by_pk.pop((table, pk), ()):
            self.pop(key, None)


def clone(obj: Any) -> Any:
    """A model instance as a fresh instance with its related instances cloned too, sharing nothing a
    handler might change: immutable field values are shared, dicts and lists (JSON fields) copied."""
    new = obj.__class__.__new__(obj.__class__)
    new.__dict__ = {k: copy.deepcopy(v) if isinstance(v, dict | list) else v for k, v in obj.__dict__.items()}
    state = new._state = copy.copy(obj._state)
    state.fields_cache = {k: None if v is None else clone(v) for k, v in obj._state.fields_cache.items()}
    return new


class Batch:
    def __init__(self) -> None:
        self.caches: dict[str, Cache] = {}
        self._quiet = 0
        self._handler = False
        self._sid: str | None = None

    # -- caches ------------------------------------------------------------------------------------
    def cache(self, name: str, *, tables: tuple[str, ...], pk: Callable[[Any, str], tuple] | None = None) -> Cache:
        found = self.caches.get(name)
        if found is None:
            found = self.caches[name] = Cache(tables, pk)
        return found

    @contextlib.contextmanager
    def quiet(self) -> Iterator[None]:
        """A cache's own reads: they neither open the handler's savepoint nor drop anything."""
        self._quiet += 1
        try:
            yield
        finally:
            self._quiet -= 1

    # -- the handler's savepoint -------------------------------------------------------------------
    @contextlib.contextmanager
    def handler(self) -> Iterator[None]:
        """Run an atomic handler: a failure after any statement of its own rolls back to the savepoint
        opened before that statement; a failure before any leaves nothing to roll back."""
        self._handler, self._sid = True, None
        try:
            yield
        except BaseException as exc:
            sid, self._sid, self._handler = self._sid, None, False
            if sid is not None:
                transaction.savepoint_rollback(sid)
                transaction.set_rollback(False)
                for cache in self.caches.values():
                    cache.clear()  # what the handler wrote is gone: what a cache re-read since may be too
            elif isinstance(exc, DatabaseError):
                raise  # only a cache's own read can fail here, and the transaction is lost with it
            raise
        else:
            sid, self._sid, self._handler = self._sid, None, False
            if sid is not None:
                transaction.savepoint_commit(sid)

    def watch(self, execute, sql, params, many, context):
        """Django's execute wrapper for the batch's statements (the store's own cursors do not pass here)."""
        if not self._quiet:
            if self._handler and self._sid is None:
                self._sid = ""  # the SAVEPOINT statement itself passes here too
                self._sid = transaction.savepoint()
            if not sql.lstrip()[:6].upper() == "SELECT" and self.caches:
                self._written(sql, params)
        return execute(sql, params, many, context)

    def _written(self, sql: str, params: Any) -> None:
        into = _INSERT.match(sql)
        if into and "DO UPDATE" not in sql.upper():
            for cache in self.caches.values():
                if into.group(1) in cache.tables:
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


def _fill(cache: Cache, keys: set, load: Callable[[set], dict]) -> None:
    found = load(keys)
    for k in keys:
        cache[k] = found.get(k)
    for k, v in found.items():  # a loader may return more than it was asked for (a clock's other items)
        cache.setdefault(k, v)


def row(f: Any, key: Any, *, name: str, load: Callable[[set], dict], ahead: tuple[str, ...],
        key_of: Callable[[Any], Any], tables: tuple[str, ...], pk: Callable[[Any, str], tuple]) -> Any:
    """The row ``load`` finds for ``key``, read for a firing ``f``. In a batch, the first ask reads the rows of
    every timer the batch holds whose handler is in ``ahead`` (``key_of`` a timer) in one query, and a row a
    write has dropped since is read alone; a handler gets a copy, so what it changes without saving never
    reaches the next. ``load`` maps a set of keys to {key: row} (it may add rows it was not asked for); a key
    it does not return has no row."""
    b = current()
    if b is None:
        return load({key}).get(key)
    cache = b.cache(name, tables=tables, pk=pk)
    with b.quiet():
        if not cache.loaded:
            cache.loaded = True
            _fill(cache, {key} | {key_of(t) for t in f.run.holding(ahead)}, load)
        if key not in cache:
            _fill(cache, {key}, load)
    value = cache[key]
    return None if value is None else clone(value)


@contextlib.contextmanager
def batch() -> Iterator[Batch]:
    """One batch of the tick: inside its transaction, with every Django statement watched."""
    b = Batch()
    token = _current.set(b)
    try:
        with connection.execute_wrapper(b.watch):
            yield b
    finally:
        _current.reset(token)
