"""What the charts draw, as JSON the page carries (`json_script`) and ui.js hands to Chart.js:
`{"kind", "title", "labels", "series": [{"label", "data", "color"}]}`. A refresh replaces the
JSON; ui.js updates the chart in place (no new canvas, no animation: no flicker)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from django.urls import reverse

from frontend.tables.columns import Column, Table, link
from frontend.tables.common import format_ms

MINUTE_MS = 60_000
# Colour-blind-safe (Okabe-Ito), each at least 3:1 against white as a graphic.
# Every series at 3:1 or more against both the light card (#fff) and the dark one (#182029),
# as WCAG asks of graphics: the same colours serve both schemes.
COLORS = {
    "leaders": "#0072b2",
    "replicas": "#7a7a7a",
    "under_replicated_partitions": "#d55e00",
    "under_min_isr_partitions": "#d6338a",
    "leaderless_partitions": "#e0443a",
    "leader_elections": "#0072b2",
}
TRENDS = (
    ("under_replicated_partitions", "Under-replicated"),
    ("under_min_isr_partitions", "Under min ISR"),
    ("leaderless_partitions", "Leaderless"),
    ("leader_elections", "Elections per minute"),
)


def chart(
    kind: str, title: str, labels: Sequence[Any], series: list[dict[str, Any]]
) -> dict[str, Any]:
    return {"kind": kind, "title": title, "labels": list(labels), "series": series}


def broker_bars(rows: Iterable[Any]) -> dict[str, Any]:
    """Leaders and replicas per broker (rows with broker_id and load: BrokerLoad)."""
    rows = list(rows)
    return chart(
        "bars",
        "Leaders and replicas per broker",
        [f"broker {r.broker_id}" for r in rows],
        [
            {
                "label": "Leaders",
                "data": [r.load.leaders for r in rows],
                "color": COLORS["leaders"],
            },
            {
                "label": "Replicas",
                "data": [r.load.replicas for r in rows],
                "color": COLORS["replicas"],
            },
        ],
    )


def minute_series(samples: Sequence[Any], *, now_ms: int, minutes: int) -> dict[str, list[int]]:
    """Per minute of the last `minutes` (oldest first): each gauge as it stood at the end of
    the minute (carried over from the last sample before it), and the elections the minute
    counted."""
    start = now_ms - now_ms % MINUTE_MS - (minutes - 1) * MINUTE_MS
    by_minute = {s.minute_ms: s for s in samples}
    carried = next((s for s in reversed(samples) if s.minute_ms < start), None)
    series: dict[str, list[int]] = {key: [] for key, _ in TRENDS}
    series["minute_ms"] = []
    for i in range(minutes):
        minute = start + i * MINUTE_MS
        sample = by_minute.get(minute)
        if sample is not None:
            carried = sample
        series["minute_ms"].append(minute)
        for key, _ in TRENDS:
            if key == "leader_elections":
                series[key].append(sample.leader_elections if sample is not None else 0)
            else:
                series[key].append(getattr(carried, key, 0) if carried is not None else 0)
    return series


def trend_charts(
    samples: Sequence[Any], *, now_ms: int, minutes: int, kind: str
) -> list[dict[str, Any]]:
    """One chart per trend (sparklines on the overview), over the last `minutes`."""
    series = minute_series(samples, now_ms=now_ms, minutes=minutes)
    labels = [format_ms(m)[11:16] for m in series["minute_ms"]]
    return [
        {
            **chart(
                kind, label, labels, [{"label": label, "data": series[key], "color": COLORS[key]}]
            ),
            "key": key,
            "now": series[key][-1] if series[key] else 0,
            "peak": max(series[key], default=0),
        }
        for key, label in TRENDS
    ]


def trends_chart(samples: Sequence[Any], *, now_ms: int, minutes: int) -> dict[str, Any]:
    """The four trends on one chart (the timeline's, the charts page's)."""
    series = minute_series(samples, now_ms=now_ms, minutes=minutes)
    labels = [format_ms(m)[11:16] for m in series["minute_ms"]]
    return chart(
        "trend",
        f"Health over the last {minutes} minutes (UTC)",
        labels,
        [{"label": label, "data": series[key], "color": COLORS[key]} for key, label in TRENDS],
    )


# The figures behind the bars, as a table (rows with broker_id and load: BrokerLoad).
BROKER_FIGURE_COLUMNS = (
    Column(
        "broker",
        "Broker",
        lambda r: link(reverse("frontend:broker-detail", args=[r.broker_id]), r.broker_id),
    ),
    Column("leaders", "Leaders", lambda r: r.load.leaders, num=True),
    Column("replicas", "Replicas", lambda r: r.load.replicas, num=True),
    Column(
        "preferred_leaders", "Preferred leader of", lambda r: r.load.preferred_leaders, num=True
    ),
)


def broker_figure_table(rows: Sequence[Any]) -> Table:
    return Table(BROKER_FIGURE_COLUMNS, rows, css="table compact")
