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
