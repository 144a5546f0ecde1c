"""Setting a column's TOAST compression where PostgreSQL has lz4, for the migrations that do.

A large value (a commit's Kafka batch, a write's stored answer) is compressed as PostgreSQL
stores it, inside the log's transaction: lz4 costs a third of pglz's time for about the same
size. A server built without lz4 keeps pglz. Values stored before keep their compression,
readable either way."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

LZ4_AVAILABLE = (
    "SELECT 'lz4' = ANY(enumvals) FROM pg_settings WHERE name = 'default_toast_compression'"
)


def compress_with(method: str, table: str, column: str) -> Callable[[Any, Any], None]:
    """A RunPython operation's function: `table.column` compressed with `method` (lz4 or
    pglz) on a PostgreSQL server that has lz4; nothing elsewhere."""

    def change(apps: Any, schema_editor: Any) -> None:
        if schema_editor.connection.vendor != "postgresql":
            return
        with schema_editor.connection.cursor() as cursor:
            cursor.execute(LZ4_AVAILABLE)
            (available,) = cursor.fetchone()
            if available:
                cursor.execute(f"ALTER TABLE {table} ALTER COLUMN {column} SET COMPRESSION {method}")

    return change
