from django.db import models


class ByteOrderCharField(models.CharField):
    """A CharField that sorts byte by byte: collation "C" on PostgreSQL (SQLite's BINARY already does).

    Timer keys break the tick's last tie, so they must never sort by the database's locale.
    """

    def db_parameters(self, connection):
        params = super().db_parameters(connection)
        if connection.vendor == "postgresql":
            params["collation"] = "C"
        return params


class IdField(models.CharField):
    """An opaque prefixed id (tmr_…, evt_…). Ids are compared whole, never searched with LIKE, so on
    PostgreSQL the column skips Django's varchar_pattern_ops twin index, which every write would pay for
    (Django adds it to any indexed column whose type it spells "varchar")."""

    def db_type(self, connection):
        if connection.vendor == "postgresql":
            return f"character varying({self.max_length})"
        return super().db_type(connection)
