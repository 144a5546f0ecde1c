"""A report's chart colours an outcome or a state by what it means, whatever order the rows
come in (issue 25: FAILED was drawn blue and SUCCESS orange, by order of first appearance)."""

from __future__ import annotations

from audit.spark.charts import Chart
from audit.spark.render import chart_config

GREEN, RED, ORANGE = "#3a9a5b", "#c23b3b", "#d9822b"


def test_outcomes_are_coloured_by_meaning_in_any_order() -> None:
    chart = Chart(
        "Requests per day by outcome",
        label=lambda row: row["day"],
        values=("count",),
        series=lambda row: row["outcome"],
        stacked=True,
    )
    rows = [
        {"day": "2026-11-25", "outcome": "FAILED", "count": 2},
        {"day": "2026-11-25", "outcome": "SUCCESS", "count": 9},
        {"day": "2026-11-26", "outcome": "PARTIAL", "count": 1},
        {"day": "2026-11-26", "outcome": "DENIED", "count": 3},
    ]
    colours = {
        d["label"]: d["backgroundColor"] for d in chart_config(chart, rows)["data"]["datasets"]
    }
    assert colours == {"FAILED": RED, "SUCCESS": GREEN, "PARTIAL": ORANGE, "DENIED": RED}


def test_a_doughnut_of_outcomes_too() -> None:
    chart = Chart("Outcomes", label=lambda row: row["outcome"], kind="doughnut")
    rows = [{"outcome": "DENIED"}, {"outcome": "SUCCESS"}]
    (dataset,) = chart_config(chart, rows)["data"]["datasets"]
    assert dataset["backgroundColor"] == [RED, GREEN]
