"""The log's rows as its readers replay them (controlplane.runtime.log_rows): exactly the rows
and data the ORM reads, in offset order, page after page, within the bounds asked for."""

from __future__ import annotations

from typing import Any

import pytest

from controlplane.models import MetadataRecord
from controlplane.runtime.controller import get_runtime
from controlplane.runtime.log_rows import log_rows
from tests.api.test_standby import some_writes

pytestmark = pytest.mark.django_db

COLUMNS = ("offset", "controller_epoch", "record_type", "data")


def through_the_orm(after: int, through: int | None = None) -> list[tuple[Any, ...]]:
    rows = MetadataRecord.objects.filter(offset__gt=after).order_by("offset")
    if through is not None:
        rows = rows.filter(offset__lte=through)
    return [tuple(row) for row in rows.values_list(*COLUMNS)]


@pytest.fixture
def log() -> list[tuple[Any, ...]]:
    runtime = get_runtime()
    some_writes(runtime, 1, "rows-a")
    some_writes(runtime, 4, "rows-b")
    rows = through_the_orm(-1)
    assert len(rows) > 20  # enough for several small pages
    return rows


def test_every_row_in_offset_order_with_its_data_decoded_as_the_orm_does(
    log: list[tuple[Any, ...]],
) -> None:
    assert list(log_rows(COLUMNS, after=-1)) == log
    assert [row[0] for row in log] == list(range(len(log)))


@pytest.mark.parametrize("page_rows", [1, 3, 7, 1000])
def test_pages_go_on_where_the_last_one_stopped(log: list[tuple[Any, ...]], page_rows: int) -> None:
    assert list(log_rows(COLUMNS, after=-1, page_rows=page_rows)) == log


def test_bounds_and_limit(log: list[tuple[Any, ...]]) -> None:
    assert list(log_rows(COLUMNS, after=4, through=12, page_rows=3)) == through_the_orm(4, 12)
    assert list(log_rows(COLUMNS, after=4, limit=5, page_rows=2)) == log[5:10]
    assert list(log_rows(COLUMNS, after=4, limit=0)) == []
    assert list(log_rows(COLUMNS, after=len(log) + 10)) == []


def test_the_columns_start_with_the_offset_and_end_with_the_data(
    log: list[tuple[Any, ...]],
) -> None:
    with pytest.raises(ValueError, match="start with offset"):
        list(log_rows(("record_type", "data"), after=-1))
    with pytest.raises(ValueError, match="end with data"):
        list(log_rows(("offset", "data", "record_type"), after=-1))
