"""Whether the operator's views stay usable at this size: the API's lists (paged, filtered), the
UI's pages and `/metrics`, each timed over a few requests once the cluster is created."""

from __future__ import annotations

from typing import Any

import httpx

from bench.replica_state import log
from bench.scale.common import Layout, goal
from bench.ui_pages import timed, ui_session
from devtools.stack import Http, Stack

RUNS = 5  # requests per path, after three to warm up
USABLE_P95_MS = 1000.0  # a page or list an operator waits on for no more than a second


def probe_paths(layout: Layout) -> dict[str, list[str]]:
    """The paths, by client: a topic in the middle of the cluster, a broker with replicas."""
    topics = layout.topics()
    middle = topics[len(topics) // 2][0]
    api = [
        "/api/v1/cluster",
        "/api/v1/brokers",
        "/api/v1/topics?limit=50",
        f"/api/v1/topics?q={middle}",
        f"/api/v1/topics/{middle}",
        "/api/v1/partitions?limit=50",
        f"/api/v1/partitions?topic={middle}&limit=50",
        "/api/v1/partitions?broker=7&limit=50",
        "/api/v1/partitions?under_replicated=true&limit=50",
        "/api/v1/partitions?leaderless=true&limit=50",
        "/api/v1/metadata-log?limit=50",
    ]
    ui = [
        "/ui/",
        "/ui/brokers/",
        "/ui/topics/",
        f"/ui/topics/{middle}/",
        "/ui/partitions/?under_replicated=true",
        "/ui/partitions/?preferred_leader=false",
        "/ui/timeline/",
    ]
    return {"api": api, "ui": ui, "metrics": ["/metrics"]}


def probes(stack: Stack, admin: httpx.Client, http: Http, layout: Layout) -> dict[str, Any]:
    """p50/p95/max per path, and whether every one answered within USABLE_P95_MS at p95."""
    paths = probe_paths(layout)
    ui = ui_session(http.base, stack.tokens["admin"])
    try:
        clients = {"api": admin, "ui": ui, "metrics": admin}
        figures = {
            kind: {path: timed(clients[kind], path, RUNS) for path in kind_paths}
            for kind, kind_paths in paths.items()
        }
    finally:
        ui.close()
    slowest = max((f["p95_ms"], path) for kind in figures.values() for path, f in kind.items())
    log(f"  slowest view: {slowest[1]} p95 {slowest[0]} ms")
    return {
        **figures,
        "slowest_p95_ms": slowest[0],
        "slowest_path": slowest[1],
        "goals": {"views_p95_ms": goal(slowest[0], USABLE_P95_MS)},
    }
