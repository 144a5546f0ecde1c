"""IN lists that any database takes, however many values a request names.

SQLite refuses a statement of more than 32,766 parameters or an expression tree deeper than
1,000 (one OR per resource was: describe-configs naming 997 resources answered 500). A long list
becomes `IN (...) OR IN (...)` of `IN_CHUNK` values each: few, flat terms.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from django.db.models import Q

IN_CHUNK = 500


def chunks(values: Iterable[Any], size: int = IN_CHUNK) -> Iterable[list[Any]]:
    batch: list[Any] = []
    for value in values:
        batch.append(value)
        if len(batch) >= size:
            yield batch
            batch = []
    if batch:
        yield batch


def in_chunks(field: str, values: Iterable[Any]) -> Q:
    """`field IN values`, as a few IN lists; matches nothing when `values` is empty."""
    query = Q(pk__in=[])
    for batch in chunks(values):
        query |= Q(**{f"{field}__in": batch})
    return query
