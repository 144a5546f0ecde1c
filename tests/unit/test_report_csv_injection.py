"""Issue 34: report downloads never carry a formula a spreadsheet would run (OWASP CSV
injection): a client id is whatever the client sent."""

from __future__ import annotations

import csv
from pathlib import Path

from audit.spark.render import _csv_write, csv_safe


def test_cells_that_start_like_formulas_are_quoted_and_read_back_as_text(tmp_path: Path) -> None:
    hostile = ["=cmd|' /C calc'!A0", "+1+1", "-2+3", "@SUM(A1)", "\tx", "\rx"]
    rows = [{"client_id": text, "requests": 7} for text in hostile]
    rows.append({"client_id": "adminclient-1", "requests": -3})
    path = tmp_path / "report.csv"
    _csv_write(path, ["client_id", "requests"], rows)
    with path.open(newline="") as handle:
        read = list(csv.DictReader(handle))
    assert [r["client_id"] for r in read] == ["'" + text for text in hostile] + ["adminclient-1"]
    assert read[-1]["requests"] == "-3"  # a number stays a number


def test_only_text_is_changed() -> None:
    assert csv_safe(-1) == -1
    assert csv_safe(None) is None
    assert csv_safe("a=b") == "a=b"
