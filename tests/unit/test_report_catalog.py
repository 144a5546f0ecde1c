"""The reports' catalogue (audit.spark.catalog): one descriptor per report carries its columns
and charts, and each report's builder registers against it (`@builds`). No Spark session."""

from __future__ import annotations

import pytest

from audit.spark.builders import builds
from audit.spark.catalog import CATALOG
from audit.spark.reports import REPORTS, admin_activity


def test_every_catalogued_report_has_its_builder_and_columns() -> None:
    assert list(REPORTS) == list(CATALOG)
    for name, report in REPORTS.items():
        assert report.info is CATALOG[name]
        assert report.columns and len(set(report.columns)) == len(report.columns), name


def test_each_chart_draws_columns_of_its_report() -> None:
    for info in CATALOG.values():
        for chart in info.charts:
            drawn = {value for value in chart.values if value is not None}
            assert drawn <= set(info.columns), (info.name, chart.title)
            row: dict[str, object] = dict.fromkeys(info.columns, 1)
            row.update(log_dir="d", forwarding_principal="")
            assert isinstance(chart.label(row), str)


def test_a_builder_registers_once_and_only_for_a_catalogued_report() -> None:
    assert builds("admin-activity")(admin_activity) is admin_activity  # again: no change
    with pytest.raises(ValueError, match="already has a builder"):
        builds("admin-activity")(lambda export, params: admin_activity(export, params))
    with pytest.raises(LookupError, match="not in the catalogue"):
        builds("no-such-report")
