"""Prometheus metrics. Request counters are per process (multiprocess mode when
PROMETHEUS_MULTIPROC_DIR is set); cluster gauges are read from the metadata store at scrape."""

from __future__ import annotations

import os

from prometheus_client import (
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    generate_latest,
    multiprocess,
)
from prometheus_client.core import REGISTRY, GaugeMetricFamily
from prometheus_client.registry import Collector

from controlplane.runtime.plugins import add_once

REQUESTS = Counter("cp_http_requests_total", "HTTP requests served", ["method", "route", "status"])
LATENCY = Histogram(
    "cp_http_request_duration_seconds",
    "HTTP request latency",
    ["method", "route"],
    buckets=(0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 10, 30),
)


FORWARDING_BUCKETS = (
    0.0005,
    0.001,
    0.0025,
    0.005,
    0.0075,
    0.01,
    0.015,
    0.025,
    0.05,
    0.1,
    0.25,
    0.5,
    1,
    2.5,
    5,
    10,
    30,
)


class ForwardingMetrics:
    """KIP-590's forwarding metrics. Every admin write is forwarded to the active controller (over
    the controller queue); brokers redirect their clients' writes in an Envelope.

    Prometheus has no meters: a `_total` counter is Kafka's `-count`, and `rate()` of it is the
    `-rate`. Queue time (sent until the controller took the event) and remote time (sent until
    answered) are histograms: `histogram_quantile()` gives their percentiles."""

    def __init__(self) -> None:
        self.pending = Gauge(
            "kafka_server_forwarding_num_client_forwarding_to_controller_count",
            "Client requests waiting now for the controller's answer "
            "(num-client-forwarding-to-controller-count)",
            multiprocess_mode="livesum",
        )
        self.forwarded = Counter(
            "kafka_server_forwarding_num_client_forwarding_to_controller",
            "Client requests forwarded to the controller; rate() is "
            "num-client-forwarding-to-controller-rate",
            ["api"],
        )
        # No label: /metrics is served without login, and label values come from fixed sets,
        # never from who sent a request (the audit trail names the forwarding principal).
        self.redirected = Counter(
            "kafka_server_forwarding_num_messages_redirected",
            "Requests redirected by brokers in an Envelope (num-messages-redirected-count; "
            "rate() is num-messages-redirected-rate)",
        )
        self.authorization_failed = Counter(
            "kafka_server_forwarding_request_forwarding_to_controller_authorization_fail_count",
            "Envelopes refused because the sender lacks CLUSTER_ACTION on the cluster",
        )
        self.queue = Histogram(
            "kafka_server_forwardingmanager_queue_time_seconds",
            "Time a forwarded request waited before the controller took it (QueueTimeMs)",
            ["api"],
            buckets=FORWARDING_BUCKETS,
        )
        self.remote = Histogram(
            "kafka_server_forwardingmanager_remote_time_seconds",
            "Time from sending a request to the controller until its answer (RemoteTimeMs)",
            ["api"],
            buckets=FORWARDING_BUCKETS,
        )

    def started(self, api: str) -> None:
        self.pending.inc()
        self.forwarded.labels(api).inc()

    def finished(self, api: str) -> None:
        self.pending.dec()

    def queue_time(self, api: str, seconds: float) -> None:
        self.queue.labels(api).observe(seconds)

    def remote_time(self, api: str, seconds: float) -> None:
        self.remote.labels(api).observe(seconds)


FORWARDING = ForwardingMetrics()


# Label values come from fixed sets, never from what a client sent: any other method is
# counted as OTHER (routes are the URL confs' patterns, or "unmatched").
HTTP_METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS", "TRACE"})
OTHER_METHOD = "OTHER"


def method_label(method: str) -> str:
    return method if method in HTTP_METHODS else OTHER_METHOD


def status_label(status: int) -> str:
    return str(status) if 100 <= status <= 599 else "other"


def observe_request(method: str, route: str, status: int, seconds: float) -> None:
    method = method_label(method)
    REQUESTS.labels(method, route, status_label(status)).inc()
    LATENCY.labels(method, route).observe(seconds)


def gauge(name: str, documentation: str, value: float) -> GaugeMetricFamily:
    family = GaugeMetricFamily(name, documentation)
    family.add_metric([], value)
    return family


# Collectors that read state at scrape time; the apps that own the state register theirs.
SCRAPE_COLLECTORS: list[Collector] = []


def register_scrape_collector(collector: Collector) -> None:
    if not add_once(SCRAPE_COLLECTORS, collector):
        return  # prometheus refuses a second collector of the same series
    if "PROMETHEUS_MULTIPROC_DIR" not in os.environ:
        REGISTRY.register(collector)


def render() -> bytes:
    if "PROMETHEUS_MULTIPROC_DIR" in os.environ:
        registry = CollectorRegistry()
        multiprocess.MultiProcessCollector(registry)  # type: ignore[no-untyped-call]
        for collector in SCRAPE_COLLECTORS:
            registry.register(collector)
        return generate_latest(registry)
    return generate_latest(REGISTRY)
