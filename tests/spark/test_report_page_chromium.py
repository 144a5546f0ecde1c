"""The HTML report in a real Chromium, offline: Chart.js (inlined) draws every chart, nothing is
fetched from the network, and the page logs no error."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from audit.spark.params import Params
from audit.spark.reader import Export
from audit.spark.render import report_write
from audit.spark.reports import REPORTS, report_build
from tests.browser.conftest import chromium_page, require_chromium
from tests.spark.conftest import Day

pytestmark = [pytest.mark.spark, pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.mark.parametrize("name", ["forwarding", "canary", "state-at"])
def test_the_html_report_draws_its_charts_offline(
    name: str, day: Day, export: Export, spark: Any, tmp_path: Path
) -> None:
    executable = require_chromium()
    params = Params(to_ms=day.last_ms)
    out = tmp_path / f"{name}.html"
    rows = report_write(
        report_build(name, export, params),
        report=REPORTS[name],
        params=params,
        fmt="html",
        out=str(out),
        source=str(day.export),
        spark=spark,
    )
    requested: list[str] = []
    problems: list[str] = []
    with chromium_page(executable) as page:
        page.route("http*://**", lambda route: (requested.append(route.request.url), route.abort()))
        page.on("pageerror", lambda error: problems.append(str(error)))
        page.on("console", lambda m: problems.append(m.text) if m.type == "error" else None)
        page.goto(out.as_uri())
        page.wait_for_function("Object.keys(Chart.instances).length > 0")
        drawn = page.evaluate(
            """() => Object.values(Chart.instances).map(c => ({
                type: c.config.type, points: c.data.datasets.reduce((n, d) => n + d.data.length, 0),
                width: c.canvas.width, height: c.canvas.height}))"""
        )
        shown = page.locator("table.rows tbody tr").count()
    assert requested == [] and problems == []
    assert len(drawn) == len(REPORTS[name].info.charts)
    assert all(c["points"] > 0 and c["width"] > 0 and c["height"] > 0 for c in drawn)
    assert shown == rows > 0
