"""What a report's HTML page draws: its charts, each over the report's rows. Plain Python (no
PySpark): the catalogue (audit.spark.catalog) names each report's charts beside its columns."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

Row = dict[str, Any]


@dataclasses.dataclass(frozen=True, slots=True)
class Chart:
    """A chart of the rows: one bar (or slice) per label, one dataset per value column (or per
    `series` of the rows); a value column None counts rows."""

    title: str
    label: Callable[[Row], str]
    values: tuple[str | None, ...] = (None,)
    kind: str = "bar"
    series: Callable[[Row], str] | None = None
    stacked: bool = False


def cell_text(value: Any) -> str:
    """A value as a table cell or a chart label shows it."""
    if value is None:
        return ""
    if isinstance(value, float):
        return f"{value:.6g}" if abs(value) < 1e15 else repr(value)
    return str(value)


def by_column(name: str) -> Callable[[Row], str]:
    """A label (or series) that is the row's value of column `name`."""
    return lambda row: cell_text(row.get(name))


def forwarded_by(row: Row) -> str:
    """Who forwarded an admin write: `direct`, `broker 1`, or the forwarding principal."""
    if row.get("forwarding_broker_id") is None and not row.get("forwarding_principal"):
        return "direct"
    broker = row.get("forwarding_broker_id")
    return f"broker {broker}" if broker is not None else str(row.get("forwarding_principal"))


def broker_log_dir(row: Row) -> str:
    return f"broker {row['broker_id']} · {str(row['log_dir'])[:8]}"


def broker(row: Row) -> str:
    return f"broker {row['broker_id']}"
