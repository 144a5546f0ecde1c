"""Bulk writes in one statement whatever the number of rows.

On PostgreSQL each column travels as one array parameter and `unnest` turns the arrays back into
rows: one round trip, one plan, no per-row parameters. Elsewhere (the embedded SQLite) one
prepared statement is run for every row with `executemany`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

from django.db import connection


@dataclasses.dataclass(frozen=True, slots=True)
class Column:
    name: str
    pg_type: str  # the element type of its array on PostgreSQL ("int", "bigint", "text", ...)
    json: bool = False  # stored as JSON: values are JSON text, cast on the way in


def bulk_upsert(
    *,
    table: str,
    columns: Sequence[Column],
    rows: Sequence[Sequence[Any]],
    conflict: Sequence[str] = (),
    update: Sequence[str] = (),
) -> None:
    """INSERT rows (values in `columns` order; JSON columns as JSON text). With `conflict`, rows
    whose key exists update the `update` columns instead."""
    if not rows:
        return
    q = connection.ops.quote_name
    names = ", ".join(q(c.name) for c in columns)
    on_conflict = ""
    if conflict:
        sets = ", ".join(f"{q(name)} = EXCLUDED.{q(name)}" for name in update)
        action = f"DO UPDATE SET {sets}" if update else "DO NOTHING"
        on_conflict = f" ON CONFLICT ({', '.join(q(c) for c in conflict)}) {action}"
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            arrays = ", ".join(f"%s::{'text' if c.json else c.pg_type}[]" for c in columns)
            selected = ", ".join(f"v.{c.name}::jsonb" if c.json else f"v.{c.name}" for c in columns)
            sql = (
                f"INSERT INTO {table} ({names}) SELECT {selected} FROM unnest({arrays}) "
                f"AS v({names}){on_conflict}"
            )
            cursor.execute(sql, [list(column) for column in zip(*rows, strict=True)])
        else:
            placeholders = ", ".join("%s" for _ in columns)
            sql = f"INSERT INTO {table} ({names}) VALUES ({placeholders}){on_conflict}"
            cursor.executemany(sql, [tuple(row) for row in rows])


def bulk_delete(*, table: str, column: str, pg_type: str, values: Sequence[Any]) -> None:
    if not values:
        return
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            cursor.execute(
                f"DELETE FROM {table} WHERE {column} = ANY(%s::{pg_type}[])", [list(values)]
            )
        else:
            cursor.executemany(f"DELETE FROM {table} WHERE {column} = %s", [(v,) for v in values])
