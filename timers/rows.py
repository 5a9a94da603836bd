"""Inserting rows that a unique constraint may already hold, in one statement and without a savepoint."""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterable, Iterator, Sequence
from typing import Any, TypeAlias, TypeVar

import psycopg
from django.db import DEFAULT_DB_ALIAS, connection, connections
from django.db.backends.utils import CursorWrapper
from django.db.models import Field, JSONField, Model, QuerySet
from django.db.models.base import ModelState
from django.db.models.options import Options

from .sql import one_row

M = TypeVar("M", bound=Model)
AnyField: TypeAlias = "Field[Any, Any]"  # the stubs' Field is generic (in what it is set to and reads back)
# (attname, field or None) per concrete field, None where the attribute goes as it is (_plan).
Plan: TypeAlias = "list[tuple[str, AnyField | None]]"


# A concrete field has a column and a column type: the stubs allow None for both, as a relation's reverse has.
def column_name(f: AnyField) -> str:
    return f.column  # type: ignore[return-value]


def db_type(f: AnyField) -> str:
    return f.db_type(connection)  # type: ignore[return-value]


def concrete_field(meta: Options[Any], name: str) -> AnyField:
    """The concrete field ``name`` names (the stubs' get_field also answers a reverse relation)."""
    return meta.get_field(name)  # type: ignore[return-value]


def column(f: AnyField) -> str:
    """A concrete field's column, quoted."""
    return connection.ops.quote_name(column_name(f))


def columns(fields: Iterable[AnyField]) -> str:
    """The fields' columns, quoted, comma-separated: an INSERT's column list."""
    return ", ".join(column(f) for f in fields)


def _insert_sql(rows: Sequence[Model], *, tail: str, with_pk: bool = True) -> tuple[str, list[Any]]:
    meta = rows[0]._meta
    fields = [f for f in meta.concrete_fields
              if (with_pk or f is not meta.pk)
              and not (f.null and all(getattr(row, f.attname) is None for row in rows))]  # NULL by default
    qn = connection.ops.quote_name
    one = "(" + ", ".join(["%s"] * len(fields)) + ")"
    params = [f.get_db_prep_save(f.pre_save(row, add=True), connection) for row in rows for f in fields]
    return (f"INSERT INTO {qn(meta.db_table)} ({columns(fields)}) "
            f"VALUES {', '.join([one] * len(rows))} {tail} RETURNING {column(meta.pk)}", params)


PROBED_FROM = 100  # rows: fewer, and a hash join would scan only a table smaller than their probes


@contextlib.contextmanager
def probed_by_key(cur: CursorWrapper | psycopg.Cursor[Any], rows: int) -> Iterator[None]:
    """Plan the statement inside, an update of ``rows`` rows by primary key, as one probe of the key per row:
    hash and merge joins off, for this transaction, until the block ends (as they were before, then).
    Otherwise an ``UPDATE … FROM unnest(ids)`` of a few thousand rows is planned as a hash join over every
    row it could match (a clock domain's timers, above about 2,000 ids on this machine's costs): a batch's
    write then costs what the whole domain holds, and a year of batches grows with the square of its
    subscribers. A failure inside leaves the settings to the rollback, which undoes them with the rest."""
    if rows < PROBED_FROM:
        yield
        return
    cur.execute("SELECT current_setting('enable_hashjoin'), current_setting('enable_mergejoin'), "
                "set_config('enable_hashjoin', 'off', true), set_config('enable_mergejoin', 'off', true)")
    hashjoin, mergejoin = one_row(cur)[:2]
    yield
    cur.execute("SELECT set_config('enable_hashjoin', %s, true), set_config('enable_mergejoin', %s, true)",
                [hashjoin, mergejoin])


def insert(rows: list[Model]) -> None:
    """One INSERT for new rows of one model whose primary key the database numbers (bulk_create's work,
    for a few rows at a time, without its per-call cost); each row gets its key, in order."""
    if not rows:
        return
    sql, params = _insert_sql(rows, tail="", with_pk=False)
    with connection.cursor() as cur:
        cur.execute(sql, params)
        keys = [r[0] for r in cur.fetchall()]
    for row, key in zip(rows, keys, strict=True):
        row.pk = key
        row._state.adding = False
        row._state.db = connection.alias


def insert_rows(rows: list[Model], *, skip_taken: bool = False) -> None:
    """One INSERT for rows of one model whose primary keys are set (with ``skip_taken``, ON CONFLICT DO
    NOTHING: a row a unique constraint holds already is skipped). On PostgreSQL the rows go as one binary
    COPY, as the tick writes its timers; with ``skip_taken`` (COPY cannot skip) as one binary array per
    column (INSERT … SELECT FROM unnest … ON CONFLICT DO NOTHING)."""
    if not rows:
        return
    tail = "ON CONFLICT DO NOTHING" if skip_taken else ""
    if connection.vendor == "postgresql":
        if skip_taken:
            _insert_unnest(rows, tail)
        else:
            _copy_rows(rows)
    else:
        per = max(1, 30_000 // len(rows[0]._meta.concrete_fields))  # under SQLite's limit on parameters
        for start in range(0, len(rows), per):
            sql, params = _insert_sql(rows[start:start + per], tail=tail)
            with connection.cursor() as cur:
                cur.execute(sql, params)
    alias = connection.alias  # once: each read through the proxy is a lookup in asgiref's Local
    for row in rows:
        row._state.adding = False
        row._state.db = alias


def insert_new(rows: list[Model]) -> list[Model]:
    """INSERT … ON CONFLICT DO NOTHING RETURNING the primary key, for rows of one model whose primary keys are
    set before saving. Returns the rows inserted now, in order; a row that any unique constraint already holds
    is skipped, where a plain create would raise IntegrityError and need a savepoint to go on."""
    if not rows:
        return []
    sql, params = _insert_sql(rows, tail="ON CONFLICT DO NOTHING")
    with connection.cursor() as cur:
        cur.execute(sql, params)
        inserted = {r[0] for r in cur.fetchall()}
    alias = connection.alias
    for row in rows:
        row._state.adding = row.pk not in inserted
        row._state.db = alias
    return [row for row in rows if row.pk in inserted]


# Fields whose Python value psycopg takes as it is: their get_db_prep_save (a third of a kept insert's cost)
# returns the value unchanged for the values our code sets (aware datetimes, ints, strs).
_AS_IS = frozenset({"AutoField", "BigAutoField", "BigIntegerField", "BooleanField", "CharField", "DateField",
                    "DateTimeField", "DurationField", "ForeignKey", "IntegerField", "PositiveIntegerField",
                    "PositiveSmallIntegerField", "SmallIntegerField", "TextField"})
_PLANS: dict[type[Model], Plan] = {}


def _plan(model: type[Model]) -> Plan:
    """(attname, field or None) per concrete field: None where the attribute goes as it is."""
    found = _PLANS.get(model)
    if found is None:
        found = _PLANS[model] = [
            (f.attname, None if f.get_internal_type() in _AS_IS and not getattr(f, "auto_now", False)
             and not getattr(f, "auto_now_add", False) else f)
            for f in model._meta.concrete_fields]
    return found


def _value(row: Model, attname: str, field: AnyField | None, db: Any = connection) -> Any:
    return getattr(row, attname) if field is None else field.get_db_prep_save(field.pre_save(row, add=True), db)


def _connection() -> Any:
    # The connection itself, not ``connection``, the proxy: a field's get_db_prep_save reads its features and ops,
    # and every read through the proxy looks the connection up in asgiref's Local (py-spy put 7% of a schedule's
    # year in those lookups, per row here and in insert_rows).
    return connections[DEFAULT_DB_ALIAS]


def insert_one_sql(model: type[Model], *, omit: frozenset[str] = frozenset()) -> tuple[str, Plan]:
    """The INSERT of one row of ``model``, every concrete field but those in ``omit`` (attnames: their column's
    default applies), with ``%s`` placeholders; and the plan ``values_of`` takes. Fixed text per model: one
    statement to prepare (timers/prepared.py)."""
    qn = connection.ops.quote_name
    fields = [f for f in model._meta.concrete_fields if f.attname not in omit]
    # psycopg takes most values as they are; elsewhere each goes through its field (SQLite keeps datetimes as
    # naive UTC text, which string comparison orders).
    plan: Plan = ([p for p in _plan(model) if p[0] not in omit] if connection.vendor == "postgresql"
                  else [(f.attname, f) for f in fields])
    return (f"INSERT INTO {qn(model._meta.db_table)} ({columns(fields)}) "
            f"VALUES ({', '.join(['%s'] * len(fields))})"), plan


def values_of(row: Model, plan: Plan) -> list[Any]:
    """``row``'s values for its INSERT, in the order of ``plan`` (``insert_one_sql``'s)."""
    db = _connection()
    return [_value(row, attname, field, db) for attname, field in plan]


def _copy_rows(rows: list[Model]) -> None:
    meta = rows[0]._meta
    fields = meta.concrete_fields
    types = [db_type(f).split("(")[0] for f in fields]  # the registry's names, no modifiers
    plan = _plan(rows[0].__class__)
    db = _connection()
    db.ensure_connection()
    with psycopg.Cursor(db.connection) as cur:
        copy_in(cur, meta.db_table, [column_name(f) for f in fields], types,
                ([_value(row, a, f, db) for a, f in plan] for row in rows))


def _insert_unnest(rows: list[Model], tail: str) -> None:
    meta = rows[0]._meta
    fields = meta.concrete_fields
    qn = connection.ops.quote_name
    arrays: list[list[Any]] = []
    casts: list[str] = []
    picks: list[str] = []
    for n, (f, (attname, prep)) in enumerate(zip(fields, _plan(rows[0].__class__), strict=True)):
        if isinstance(f, JSONField):  # as text, cast in the SELECT: jsonb arrays of adapted values are not
            values = [f.pre_save(row, add=True) for row in rows]
            arrays.append([None if v is None else json.dumps(v, cls=f.encoder) for v in values])
            casts.append("%b::text[]")
            picks.append(f"v{n}::jsonb")
        else:
            db = _connection()
            arrays.append([_value(row, attname, prep, db) for row in rows])
            casts.append(f"%b::{f.db_type(connection)}[]")
            picks.append(f"v{n}")
    sql = (f"INSERT INTO {qn(meta.db_table)} ({columns(fields)}) "
           f"SELECT {', '.join(picks)} FROM unnest({', '.join(casts)}) "
           f"AS v({', '.join(f'v{n}' for n in range(len(fields)))}) {tail}")
    connection.ensure_connection()
    with psycopg.Cursor(connection.connection) as cur:
        cur.execute(sql, arrays, binary=True)


def copy_in(cur: psycopg.Cursor[Any], table: str, columns: Sequence[str], types: Sequence[str],
            rows: Iterable[Sequence[Any]]) -> None:
    """Rows into ``table`` with one binary COPY on a psycopg cursor: the rows are formatted by psycopg's C
    code, where the binary arrays of INSERT … SELECT FROM unnest were built element by element in Python
    (a sixteenth of a domain fire). For rows no unique constraint can refuse but by a bug: COPY has no ON
    CONFLICT, and a refused row fails the statement (and its batch) as an INSERT would."""
    cols = ", ".join(f'"{c}"' for c in columns)
    with cur.copy(f"COPY {table} ({cols}) FROM STDIN (FORMAT BINARY)") as copy:
        copy.set_types(types)
        for row in rows:
            copy.write_row(row)


def read(qs: QuerySet[M], *, related: tuple[str, ...] = ()) -> list[M]:
    """``list(qs.select_related(*related))`` for a batch's caches, built from plain rows: what Django's
    Model.__init__ costs per instance (a setattr per field, the init signals) was a tenth of a domain fire.
    ``related`` names foreign keys of ``qs.model`` (one level), read in the same query; a null one is None.
    The instances are what the ORM gives (its converters run: JSON decoded, datetimes aware), loaded from
    ``qs.db``, with no deferred fields. For models no init signal is connected to (none of ours)."""
    model = qs.model
    own = [f.attname for f in model._meta.concrete_fields]
    parts = []
    names = list(own)
    for name in related:
        rel = model._meta.get_field(name).related_model
        assert isinstance(rel, type)  # a foreign key's model (None or "self" only on a field not yet set up)
        attnames = [f.attname for f in rel._meta.concrete_fields]
        parts.append((name, rel, attnames, rel._meta.pk.attname))
        names.extend(f"{name}__{a}" for a in attnames)
    db = qs.db
    out = []
    n = len(own)
    for row in qs.values_list(*names):
        obj = _built(model, own, row[:n], db)
        at = n
        for name, rel, attnames, pk in parts:
            values = row[at:at + len(attnames)]
            at += len(attnames)
            other = _built(rel, attnames, values, db)
            obj._state.fields_cache[name] = None if getattr(other, pk) is None else other
        out.append(obj)
    return out


# (name, attname, is a relation, field) per concrete field, and every name and attname it may be given.
_NEW: dict[type[Model], tuple[list[tuple[str, str, bool, AnyField]], frozenset[str]]] = {}


def new(model: type[M], **values: Any) -> M:
    """``model(**values)`` for a row about to be inserted (a schedule fire's Run and tick), built as ``read``
    builds rows: Model.__init__ (a setattr per field, a foreign key's checks on assignment) was a fifth of an
    HTTP schedule's fire in Python, for two rows a fire. Every concrete field not given takes its default; a
    related instance given under its field's name is cached on the new row as __init__ caches it. For models
    no init signal is connected to (none of ours)."""
    plan = _NEW.get(model)
    if plan is None:
        fields = [(f.name, f.attname, f.is_relation, f) for f in model._meta.concrete_fields]
        plan = _NEW[model] = (fields, frozenset(n for f in fields for n in f[:2]))
    fields, known = plan
    if not known.issuperset(values):
        raise TypeError(f"{model.__name__} has no field {sorted(set(values) - known)[0]!r}")
    obj = model.__new__(model)
    state = ModelState()
    row: dict[str, Any] = {"_state": state}
    for name, attname, relation, field in fields:
        if relation and name in values:
            other = values[name]
            row[attname] = None if other is None else other.pk
            state.fields_cache[name] = other
        elif attname in values:
            row[attname] = values[attname]
        else:
            row[attname] = field.get_default()
    obj.__dict__.update(row)
    return obj


def _built(model: type[M], attnames: list[str], values: Sequence[Any], db: str) -> M:
    obj = model.__new__(model)
    obj.__dict__.update(zip(attnames, values, strict=True))
    state = obj._state = ModelState()
    state.adding, state.db = False, db
    return obj
