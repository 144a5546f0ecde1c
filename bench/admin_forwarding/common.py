"""What every phase shares: the setup's constants, the benchmark's write and the latency
statistics."""

from __future__ import annotations

import math
import statistics
import sys
from pathlib import Path
from typing import Any

RESULTS = Path(__file__).resolve().parent.parent / "results"
TOPIC = "bench-configs"
DIRECT_PATH = "/api/v1/incremental-alter-configs"
ENVELOPE_PATH = "/internal/v1/envelope"
CLIENT_HOST = "10.20.30.40"  # the address the forwarding broker saw the client at
ADMIN_CLIENT_ID = "bench-admin"
FORWARDING_BROKER = 0  # the lean client's envelopes name this (registered) broker
SIMULATOR_BROKER = 100  # the broker simulator's own broker
RECYCLE_AFTER = 100  # requests per connection (keep-alive connections stick to one worker)


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def set_retention(value: int) -> dict[str, Any]:
    """The benchmark's write: IncrementalAlterConfigs SET retention.ms on the topic."""
    return {
        "resources": [
            {
                "resource_type": "TOPIC",
                "resource_name": TOPIC,
                "configs": [
                    {"name": "retention.ms", "config_operation": "SET", "value": str(value)}
                ],
            }
        ]
    }


def percentile(values: list[float], p: float) -> float:
    """Nearest-rank percentile (p in 0..100); NaN without samples."""
    if not values:
        return math.nan
    ordered = sorted(values)
    rank = max(1, math.ceil(p / 100 * len(ordered)))
    return ordered[min(rank, len(ordered)) - 1]


def latency_summary(values: list[float]) -> dict[str, float | int]:
    if not values:
        return {"count": 0}
    return {
        "count": len(values),
        "p50_ms": round(percentile(values, 50), 3),
        "p90_ms": round(percentile(values, 90), 3),
        "p99_ms": round(percentile(values, 99), 3),
        "mean_ms": round(statistics.fmean(values), 3),
        "max_ms": round(max(values), 3),
    }
