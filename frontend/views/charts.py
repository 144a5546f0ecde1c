"""The charts: leaders and replicas per broker, and the health trends (under-replicated, under
min ISR, leaderless, elections per minute) over the last hour, six hours or day."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse

from brokers.selectors import broker_list, broker_sessions
from controlplane.runtime.lease import now_ms
from frontend.tables.charts import broker_bars, broker_figure_table, trends_chart
from frontend.tables.cluster import broker_rows
from frontend.views.base import principal_required, render_page
from replicas.selectors import broker_loads, health_samples

WINDOWS = {"1h": 60, "6h": 360, "24h": 1440}
DEFAULT_WINDOW = "1h"


@principal_required
def charts_view(request: HttpRequest) -> HttpResponse:
    window = request.GET.get("window", DEFAULT_WINDOW)
    if window not in WINDOWS:
        window = DEFAULT_WINDOW
    minutes = WINDOWS[window]
    now = now_ms()
    rows = broker_rows(broker_list(), broker_sessions(), now, broker_loads())
    return render_page(
        request,
        title="Charts",
        section="charts",
        fragment="frontend/partials/charts.html",
        context={
            "bars": broker_bars(rows),
            "brokers": broker_figure_table(rows),
            "trends": trends_chart(
                health_samples(since_ms=now - minutes * 60_000), now_ms=now, minutes=minutes
            ),
            "window": window,
            "windows": list(WINDOWS),
        },
    )
