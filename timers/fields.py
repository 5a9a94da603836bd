"""The runtime's own column types: keys that sort byte by byte, and ids without a LIKE index."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from django.db import models
from django.db.backends.base.base import BaseDatabaseWrapper

if TYPE_CHECKING:
    # The stubs' CharField is generic in what it is set to and what it reads back (Django's is not).
    _CharField = models.CharField[str, str]
else:
    _CharField = models.CharField


class ByteOrderCharField(_CharField):
    """A CharField that sorts byte by byte: collation "C" on PostgreSQL (SQLite's BINARY already does).

    Timer keys break the tick's last tie, so they must never sort by the database's locale.
    """

    def db_parameters(self, connection: BaseDatabaseWrapper) -> dict[str, Any]:
        params = super().db_parameters(connection)
        if connection.vendor == "postgresql":
            params["collation"] = "C"
        return params


class IdField(_CharField):
    """An opaque prefixed id (tmr_…, evt_…). Ids are compared whole, never searched with LIKE, so on
    PostgreSQL the column skips Django's varchar_pattern_ops twin index, which every write would pay for
    (Django adds it to any indexed column whose type it spells "varchar")."""

    def db_type(self, connection: BaseDatabaseWrapper) -> str | None:
        if connection.vendor == "postgresql":
            return f"character varying({self.max_length})"
        return super().db_type(connection)
