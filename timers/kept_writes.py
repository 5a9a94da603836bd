"""How a batch's kept row writes (timers/batch.py: ``save`` and ``create`` in a batch that keeps writes) are
held and sent: each a ``Kept`` until its table is next touched, then the batch's writes to one table as one
set statement per kind (a COPY or an INSERT … ON CONFLICT DO NOTHING for inserts, one UPDATE … FROM (VALUES …)
per set of fields for updates; the ORM's bulk writes on SQLite). Which fields a unique constraint reads
(``unique_columns``) says which kept updates an insert must wait for.
"""

from __future__ import annotations

from typing import Any

from django.db import connection
from django.db.models import Model, Q

from . import rows as _rows  # called through the module: a test counts its inserts there


class Kept:
    """One write a batch keeps until its table is next touched: an insert (``fields`` None; the instance
    itself, so an autoincrement key lands on it) or an update of ``fields`` by primary key (the values as
    they were when it was saved)."""

    __slots__ = ("model", "obj", "fields", "owner", "skip_taken")

    def __init__(self, model: type[Model], obj: Model, fields: tuple[str, ...] | None, owner: int,
                 skip_taken: bool = False):
        self.model, self.obj, self.fields, self.owner, self.skip_taken = model, obj, fields, owner, skip_taken

    @property
    def table(self) -> str:
        return self.model._meta.db_table


_UNIQUE: dict[type[Model], frozenset[str]] = {}


def unique_columns(model: type[Model]) -> frozenset[str]:
    """The fields any unique constraint of ``model`` reads (a condition's fields too): an update of other
    fields cannot change whether an insert into the table conflicts."""
    found = _UNIQUE.get(model)
    if found is None:
        meta = model._meta
        names = {f.name for f in meta.concrete_fields if f.unique}
        for group in meta.unique_together:
            names.update(group)
        for c in meta.constraints:
            names.update(getattr(c, "fields", ()) or ())
            cond = getattr(c, "condition", None)
            if isinstance(cond, Q):
                names.update(_q_fields(cond))
        found = _UNIQUE[model] = frozenset(names)
    return found


def _q_fields(q: Q) -> set[str]:
    out: set[str] = set()
    for child in q.children:
        if isinstance(child, Q):
            out |= _q_fields(child)
        else:  # a (lookup, value) pair: the stubs type a Q's children as any tree node
            out.add(child[0].split("__", 1)[0])  # type: ignore[index]
    return out


def write(kept: list[Kept]) -> None:
    """Send kept writes: one statement per table and kind (inserts, then updates by each set of fields)."""
    # Table by table in the order first kept (a clock before its items), inserts before updates.
    tables: dict[str, list[Kept]] = {}
    for k in kept:
        tables.setdefault(k.table, []).append(k)
    for group in tables.values():
        model = group[0].model
        inserts = [k for k in group if k.fields is None]
        if inserts:
            # Kept rows carry their primary keys: one COPY (or INSERT … ON CONFLICT DO NOTHING) a kind.
            _rows.insert_rows([k.obj for k in inserts if not k.skip_taken])
            _rows.insert_rows([k.obj for k in inserts if k.skip_taken], skip_taken=True)
        updates = [k for k in group if k.fields is not None]
        if updates:
            update(model, updates)


def update(model: type[Model], updates: list[Kept]) -> None:
    """One UPDATE per set of fields: each row's latest value of each field it was saved with."""
    meta = model._meta
    rows: dict[Any, dict[str, Any]] = {}
    # Only updates come here (their fields set), each field a concrete one (never a reverse relation's, which
    # the stubs' get_field also allows).
    for k in updates:
        row = rows.setdefault(k.obj.pk, {})
        for name in k.fields:  # type: ignore[union-attr]
            attname = meta.get_field(name).attname  # type: ignore[union-attr]
            row[name] = k.obj.__dict__[attname]
    shapes: dict[tuple[str, ...], list[tuple[Any, dict[str, Any]]]] = {}
    for pk, values in rows.items():
        shapes.setdefault(tuple(sorted(values)), []).append((pk, values))
    for names, group in shapes.items():
        fields = [_rows.concrete_field(meta, n) for n in names]
        if connection.vendor == "postgresql":
            _update_values(model, fields, group)
        else:
            objs = []
            for pk, values in group:
                obj = model(**{meta.pk.attname: pk})
                for f in fields:
                    setattr(obj, f.attname, values[f.name])
                objs.append(obj)
            model._base_manager.bulk_update(objs, [f.name for f in fields])


def _update_values(model: type[Model], fields: list[_rows.AnyField], group: list[tuple[Any, dict[str, Any]]]) -> None:
    # UPDATE … FROM (VALUES …): one statement for any number of rows, every value cast to its column's type.
    meta = model._meta
    qn = connection.ops.quote_name
    cols = [meta.pk, *fields]
    one = "(" + ", ".join(f"%s::{_rows.db_type(c)}" for c in cols) + ")"
    params: list[Any] = []
    for pk, values in group:
        params.append(meta.pk.get_db_prep_save(pk, connection))
        params.extend(f.get_db_prep_save(values[f.name], connection) for f in fields)
    names = _rows.columns(cols)
    sets = ", ".join(f"{_rows.column(f)} = v.{_rows.column(f)}" for f in fields)
    with connection.cursor() as cur, _rows.probed_by_key(cur, len(group)):
        cur.execute(f"UPDATE {qn(meta.db_table)} AS t SET {sets} FROM (VALUES {', '.join([one] * len(group))}) "
                    f"AS v({names}) WHERE t.{_rows.column(meta.pk)} = v.{_rows.column(meta.pk)}", params)
