"""The listener's metrics, named as jmx_exporter names Kafka's `kafka.network:type=RequestMetrics`
and `kafka.server:type=socket-server-metrics` MBeans. Prometheus has no meters: a `_total`
counter is Kafka's `-count`, and `rate()` of it the `-rate`; TotalTimeMs is a histogram in ms.
They live in the process's registry (multiprocess mode when PROMETHEUS_MULTIPROC_DIR is set),
so a listener process's figures join the web node's `/metrics`."""

from __future__ import annotations

import dataclasses
import os
from typing import Any

from prometheus_client import REGISTRY, CollectorRegistry, Counter, Gauge, Histogram, multiprocess

REQUESTS = Counter(
    "kafka_network_requestmetrics_requests",
    "Kafka protocol requests served, by API and version (RequestsPerSec)",
    ["request", "version"],
)
ERRORS = Counter(
    "kafka_network_requestmetrics_errors",
    "Error codes in Kafka protocol responses, by API and error (ErrorsPerSec)",
    ["request", "error"],
)
TOTAL_TIME_MS = Histogram(
    "kafka_network_requestmetrics_totaltimems",
    "Kafka protocol request time from the whole frame read to the response written (ms)",
    ["request"],
    buckets=(0.5, 1, 2.5, 5, 10, 25, 50, 100, 250, 500, 1000, 2500, 5000, 10000, 30000),
)
CONNECTIONS = Gauge(
    "kafka_server_socketservermetrics_connection_count",
    "Open Kafka protocol connections, by listener",
    ["listener"],
    multiprocess_mode="livesum",
)
CONNECTIONS_REFUSED = Counter(
    "kafka_server_socketservermetrics_connections_refused",
    "Kafka protocol connections closed by a limit or a malformed frame, by reason",
    ["listener", "reason"],
)
AUTHENTICATIONS = Counter(
    "kafka_server_socketservermetrics_authentications",
    "SASL authentications, by listener and result (successful-authentication / failed-)",
    ["listener", "result"],
)


def error_names(entity: Any, depth: int = 2) -> list[str]:
    """The error codes a response carries at its top and its items' level (a topic's, a
    resource's: not every partition's), as names; Kafka counts each one, NONE included."""
    from kio.schema.errors import ErrorCode

    found: list[str] = []

    def walk(value: Any, level: int) -> None:
        if isinstance(value, tuple):
            for item in value:
                walk(item, level)
            return
        if not dataclasses.is_dataclass(value) or level > depth:
            return
        for field in dataclasses.fields(value):
            item = getattr(value, field.name)
            if isinstance(item, ErrorCode):
                found.append(item.name.upper())
            elif isinstance(item, tuple) and item and dataclasses.is_dataclass(item[0]):
                walk(item, level + 1)

    walk(entity, 0)
    return found


def scraped_registry() -> CollectorRegistry:
    """What `serve_kafka --metrics-port` serves: this process's registry, or in multiprocess
    mode every process's files in PROMETHEUS_MULTIPROC_DIR (the listener's, in a container)."""
    if "PROMETHEUS_MULTIPROC_DIR" not in os.environ:
        return REGISTRY
    registry = CollectorRegistry()
    multiprocess.MultiProcessCollector(registry)  # type: ignore[no-untyped-call]
    return registry


THROTTLED = Counter(
    "kafka_server_socketservermetrics_throttled_requests",
    "Kafka protocol requests held back by the request rate per principal (CP_API_RATE_LIMIT)",
    ["listener"],
)
HEARTBEATS_THROTTLED = Counter(
    "kafka_controller_heartbeats_throttled",
    "BrokerHeartbeats and BrokerRegistrations answered with throttle_time_ms (a broker past "
    "CP_HEARTBEAT_RATE_LIMIT), their connection muted for it",
    ["listener"],
)
LONG_POLLS_ANSWERED_AT_ONCE = Counter(
    "kafka_controller_long_polls_answered_at_once",
    "Raft Fetches answered at once rather than parked: their principal and address had "
    "CP_LONG_POLL_MAX_PER_PEER parked",
    ["listener"],
)
MEMORY_POOL_USED = Gauge(
    "kafka_network_socketserver_memorypoolused",
    "Bytes of Kafka protocol requests read and not yet answered (queued.max.request.bytes)",
    multiprocess_mode="livesum",
)
MEMORY_POOL_WAITS = Counter(
    "kafka_network_socketserver_memory_pool_waits",
    "Requests whose connection stayed muted until the request memory pool had room",
    ["listener"],
)
