"""Bulk writes in one statement whatever the number of rows.

On PostgreSQL each column travels as one array parameter, bound on the server in binary (Django's
default client-side binding would quote every element in Python, about twenty times slower), and
`unnest` turns the arrays back into rows: one round trip, one plan, no per-row parameters.
From `COPY_MIN_ROWS` rows on, rows travel by binary `COPY` instead: psycopg writes them in C
(its array dumper walks lists in Python), and the server neither unpacks arrays nor grows
superlinearly with them (100,000 log records: 534 ms by COPY, 846 ms by `unnest`). A plain
insert copies into the table itself; an upsert or an update copies into a temporary staging
table of the connection (emptied at commit) and runs one statement from it: 100,000 partition
updates took 362-411 ms that way against 613-688 ms with `unnest`.
Elsewhere (the embedded SQLite) one prepared statement runs for every row with `executemany`.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import time
from collections.abc import Callable, Sequence
from typing import Any

from django.db import connection
from django.db.backends.utils import CursorDebugWrapper, CursorWrapper


@dataclasses.dataclass(frozen=True, slots=True)
class Column:
    name: str
    # The element type of its array on PostgreSQL ("int", "bigint", "text", ...); "json": the
    # value is JSON text, stored as it is (a json column: copied as its text, checked once).
    pg_type: str
    json: bool = False  # stored as jsonb: values are JSON text, cast on the way in


Write = Callable[[], None]
# Below this many rows a bulk write binds arrays (one statement); from it on, rows are copied.
COPY_MIN_ROWS = 500
# Column element types as COPY's binary format names them (psycopg's type names).
# A json value's binary form is its text.
_COPY_TYPES = {"int": "int4", "bigint": "int8", "text": "text", "boolean": "bool", "json": "text"}


def _nothing() -> None:
    return None


def bulk_upsert(**kwargs: Any) -> None:
    prepared_upsert(**kwargs)()


def prepared_upsert(
    *,
    table: str,
    columns: Sequence[Column],
    rows: Sequence[Sequence[Any]],
    conflict: Sequence[str] = (),
    update: Sequence[str] = (),
) -> Write:
    """INSERT rows (values in `columns` order; JSON columns as JSON text). With `conflict`, rows
    whose key exists update the `update` columns instead. Answers the write, ready to run: the
    SQL and its parameters are built now (outside any lock), executed when it is called."""
    if not rows:
        return _nothing
    q = connection.ops.quote_name
    names = ", ".join(q(c.name) for c in columns)
    on_conflict = ""
    if conflict:
        sets = ", ".join(f"{q(name)} = EXCLUDED.{q(name)}" for name in update)
        action = f"DO UPDATE SET {sets}" if update else "DO NOTHING"
        on_conflict = f" ON CONFLICT ({', '.join(q(c) for c in conflict)}) {action}"
    if connection.vendor == "postgresql":
        if len(rows) >= COPY_MIN_ROWS and not conflict:
            return _copy_write(table, columns, rows)
        selected = ", ".join(
            f"v.{q(c.name)}::jsonb" if c.json else f"v.{q(c.name)}" for c in columns
        )
        if len(rows) >= COPY_MIN_ROWS:
            stage = _staged(columns, rows)
            sql = f"INSERT INTO {table} ({names}) SELECT {selected} FROM {stage.table} AS v"
            return stage.then(sql + on_conflict)
        source, params = _unnest_source(columns, rows)
        sql = f"INSERT INTO {table} ({names}) SELECT {selected} FROM {source}{on_conflict}"
        return lambda: _server_bound(sql, params)
    placeholders = ", ".join("%s" for _ in columns)
    sql = f"INSERT INTO {table} ({names}) VALUES ({placeholders}){on_conflict}"
    return _executemany(sql, [tuple(row) for row in rows])


def prepared_update(
    *,
    table: str,
    columns: Sequence[Column],
    rows: Sequence[Sequence[Any]],
    key: Sequence[str],
    where_null: Sequence[str] = (),
) -> Write:
    """UPDATE existing rows, matched on the `key` columns (and, with `where_null`, only those
    whose named columns are still NULL). An index must lead with the `key` columns: each row
    is looked up by it (a large update costs its rows, not the table's)."""
    if not rows:
        return _nothing
    q = connection.ops.quote_name
    values = [c for c in columns if c.name not in key]
    if connection.vendor == "postgresql":
        sets = ", ".join(
            f"{q(c.name)} = v.{q(c.name)}" + ("::jsonb" if c.json else "") for c in values
        )
        match = " AND ".join(
            [*(f"t.{q(k)} = v.{q(k)}" for k in key), *(f"t.{q(n)} IS NULL" for n in where_null)]
        )
        if len(rows) >= COPY_MIN_ROWS:
            stage = _staged(columns, rows)
            return stage.then(
                f"UPDATE {table} AS t SET {sets} FROM {stage.table} AS v WHERE {match}",
                by_index=True,
            )
        source, params = _unnest_source(columns, rows)
        sql = f"UPDATE {table} AS t SET {sets} FROM {source} WHERE {match}"
        return lambda: _server_bound(sql, params)
    positions = {c.name: i for i, c in enumerate(columns)}
    sets = ", ".join(f"{q(c.name)} = %s" for c in values)
    match = " AND ".join([*(f"{q(k)} = %s" for k in key), *(f"{q(n)} IS NULL" for n in where_null)])
    order = [positions[c.name] for c in values] + [positions[k] for k in key]
    return _executemany(
        f"UPDATE {table} SET {sets} WHERE {match}", [[row[i] for i in order] for row in rows]
    )


def prepared_delete(*, table: str, column: str, pg_type: str, values: Sequence[Any]) -> Write:
    if not values:
        return _nothing
    name = connection.ops.quote_name(column)
    if connection.vendor == "postgresql":
        sql = f"DELETE FROM {table} WHERE {name} = ANY(%b::{pg_type}[])"
        return lambda: _server_bound(sql, [list(values)])
    return _executemany(f"DELETE FROM {table} WHERE {name} = %s", [(v,) for v in values])


def _executemany(sql: str, rows: list[Any]) -> Write:
    def write() -> None:
        with connection.cursor() as cursor:
            cursor.executemany(sql, rows)

    return write


def _unnest_source(
    columns: Sequence[Column], rows: Sequence[Sequence[Any]]
) -> tuple[str, list[Any]]:
    """`(SELECT ... FROM unnest(arrays)) AS v(columns)`: a column whose value is the same in
    every row travels once, as a scalar, instead of as an array."""
    selected: list[str] = []
    scalars: list[Any] = []
    array_types: list[str] = []
    arrays: list[Any] = []
    aliases: list[str] = []
    for column, values in zip(columns, map(list, zip(*rows, strict=True)), strict=True):
        index = len(selected)
        element = "text" if column.json else column.pg_type
        first = values[0]
        if values.count(first) == len(values):  # None too: one NULL instead of an array
            selected.append(f"%b::{element}")
            scalars.append(first)
        else:
            selected.append(f"u.c{index}")
            aliases.append(f"c{index}")
            array_types.append(f"%b::{element}[]")
            arrays.append(values)
    if not aliases:  # every column constant: an index array still yields one row per row
        aliases, array_types, arrays = ["c_"], ["%b::int[]"], [list(range(len(rows)))]
    names = ", ".join(connection.ops.quote_name(c.name) for c in columns)
    source = (
        f"(SELECT {', '.join(selected)} FROM unnest({', '.join(array_types)}) "
        f"AS u({', '.join(aliases)})) AS v({names})"
    )
    return source, scalars + arrays


def _copy_types(columns: Sequence[Column]) -> list[str]:
    return ["text" if c.json else _COPY_TYPES.get(c.pg_type, c.pg_type) for c in columns]


def _copy_write(table: str, columns: Sequence[Column], rows: Sequence[Sequence[Any]]) -> Write:
    """Rows copied straight into `table`. A JSON column's text goes as jsonb's binary form
    (a version byte, then the text): the server parses it once, as it would a cast."""
    q = connection.ops.quote_name
    types = ["bytea" if c.json else t for c, t in zip(columns, _copy_types(columns), strict=True)]
    json_at = [i for i, c in enumerate(columns) if c.json]
    if json_at:
        rows = [_as_jsonb(row, json_at) for row in rows]
    sql = f"COPY {table} ({', '.join(q(c.name) for c in columns)}) FROM STDIN (FORMAT BINARY)"
    return lambda: _server_copy(sql, types, rows)


def _as_jsonb(row: Sequence[Any], json_at: list[int]) -> list[Any]:
    converted = list(row)
    for i in json_at:
        value = converted[i]
        if value is not None:
            converted[i] = b"\x01" + (value if isinstance(value, bytes) else value.encode())
    return converted


@dataclasses.dataclass(frozen=True, slots=True)
class _Stage:
    """Rows copied into a temporary table of the connection (created once, emptied before each
    use and at each commit), for one statement to read them: `then(sql)` is the write."""

    table: str
    create: str
    copy: str
    types: list[str]
    rows: Sequence[Sequence[Any]]

    def then(self, sql: str, *, by_index: bool = False) -> Write:
        """`by_index`: `sql` joins the stage to its target on an indexed key, and must look
        each staged row up by that index. A temporary table has no statistics (autovacuum never
        analyzes it), so the planner would hash or sort the whole target instead: a scan of a
        million partitions to update the 40,000 a controlled shutdown changed, a cost of the
        cluster's size rather than of the change (ANALYZE of the stage costs more than it
        saves). Hash and merge joins are off for that one statement only.

        Two round trips and the COPY: the statements before the COPY go as one query, and those
        after it too (parameterless, they take the simple protocol, which runs several). Each
        round trip waits for the server, and a commit's transactions wait for their
        statements: on a machine whose cores the brokers share, each wait is a wake-up behind
        them."""
        # Emptied at each commit, and before each use too: two writes of the same shape in one
        # transaction (a partition inserted, then updated) must not read each other's. A DELETE
        # of the (nearly always empty) table, where TRUNCATE would give it a new file each time.
        prepare = f"{self.create}; DELETE FROM {self.table}"
        write_sql = f"{_NESTED_LOOP_ONLY}; {sql}; {_JOINS_RESTORED}" if by_index else sql

        def write() -> None:
            _server_bound(prepare, [])
            _server_copy(self.copy, self.types, self.rows)
            _server_bound(write_sql, [])

        return write


# SET LOCAL and back (to what RESET gives) around one statement, in the statement's round trip.
_JOIN_SETTINGS = "('enable_hashjoin', 'enable_mergejoin')"
_NESTED_LOOP_ONLY = (
    f"SELECT set_config(name, 'off', true) FROM pg_settings WHERE name IN {_JOIN_SETTINGS}"
)
_JOINS_RESTORED = (
    f"SELECT set_config(name, reset_val, true) FROM pg_settings WHERE name IN {_JOIN_SETTINGS}"
)
_STAGE_HELPERS = ("CREATE TEMP TABLE", "DELETE FROM cp_stage_", _NESTED_LOOP_ONLY, _JOINS_RESTORED)


def statement_label(sql: str) -> str:
    """A statement's name in the commit's timings: its first words, and for several sent as
    one query, those of the one that writes (not the stage's helpers around it)."""
    parts = sql.split("; ")
    main = next((p for p in parts if not p.startswith(_STAGE_HELPERS)), parts[0])
    return main.split(" (")[0][:40]


def _staged(columns: Sequence[Column], rows: Sequence[Sequence[Any]]) -> _Stage:
    q = connection.ops.quote_name
    types = _copy_types(columns)
    shape = ",".join(f"{c.name}:{t}" for c, t in zip(columns, types, strict=True))
    table = "cp_stage_" + hashlib.sha1(shape.encode()).hexdigest()[:12]
    pg_types = ["text" if c.json else c.pg_type for c in columns]
    definition = ", ".join(f"{q(c.name)} {t}" for c, t in zip(columns, pg_types, strict=True))
    return _Stage(
        table=table,
        create=f"CREATE TEMP TABLE IF NOT EXISTS {table} ({definition}) ON COMMIT DELETE ROWS",
        copy=f"COPY {table} FROM STDIN (FORMAT BINARY)",
        types=types,
        rows=rows,
    )


def _server_copy(sql: str, types: list[str], rows: Sequence[Sequence[Any]]) -> None:
    """One binary COPY through Django's execute wrappers (statement counters, query logs see it
    as the one statement it is)."""
    import psycopg

    connection.ensure_connection()

    def copy(sql: str, params: Any, many: bool, context: Any) -> None:
        with psycopg.Cursor(connection.connection) as cursor, cursor.copy(sql) as copying:
            copying.set_types(types)
            for row in rows:
                copying.write_row(row)

    execute: Callable[..., None] = copy
    for wrapper in reversed(connection.execute_wrappers):
        execute = functools.partial(wrapper, execute)
    started = time.monotonic()
    execute(sql, None, False, {"connection": connection, "cursor": None})
    if connection.queries_logged:
        connection.queries_log.append(
            {"sql": f"{sql} -- {len(rows)} rows", "time": f"{time.monotonic() - started:.3f}"}
        )


def _server_bound(sql: str, params: list[Any]) -> None:
    """One statement with server-side binary binding, through Django's cursor wrapper (so
    execute wrappers and query logging still see it)."""
    import psycopg

    connection.ensure_connection()
    raw = psycopg.Cursor(connection.connection)
    # Django's own wrappers: execute wrappers always, the query log when it is on (tests).
    wrapped = (
        CursorDebugWrapper(raw, connection)
        if connection.queries_logged
        else CursorWrapper(raw, connection)
    )
    with wrapped as cursor:
        cursor.execute(sql, params)
