"""Reading an export back without Spark (pyarrow), for the tests: the committed rows of a
dataset, and every string in every file."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow.parquet as pq

from audit.spark import storage as store


def committed_rows(root: Path, dataset: str) -> list[dict[str, Any]]:
    """The rows of `dataset` in the files the export's commits name (what readers see)."""
    storage = store.open_storage(str(root))
    committed = store.verify_files(storage, dataset)
    rows: list[dict[str, Any]] = []
    for path in sorted(committed.files):
        table = pq.read_table(root / path)
        day = path.split("/")[1].removeprefix("date=")
        rows += [{**row, "date": day} for row in table.to_pylist()]
    return rows


def every_string(root: Path) -> list[str]:
    """Every string value in every Parquet file under the export (committed or not)."""
    found: list[str] = []
    for file in root.rglob("*.parquet"):
        table = pq.read_table(file)
        for column in table.columns:
            found += [v for v in column.to_pylist() if isinstance(v, str)]
    return found
