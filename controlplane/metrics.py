"""Prometheus metrics. Request counters are per process (multiprocess mode when
PROMETHEUS_MULTIPROC_DIR is set); cluster gauges are read from the metadata store at scrape."""

from __future__ import annotations

import os
from collections.abc import Iterator

from prometheus_client import (
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    generate_latest,
    multiprocess,
)
from prometheus_client.core import REGISTRY, CounterMetricFamily, GaugeMetricFamily
from prometheus_client.registry import Collector

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
        self.redirected = Counter(
            "kafka_server_forwarding_num_messages_redirected",
            "Requests redirected by brokers in an Envelope (num-messages-redirected-count; "
            "rate() is num-messages-redirected-rate)",
            ["forwarding_principal"],
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


def observe_request(method: str, route: str, status: int, seconds: float) -> None:
    REQUESTS.labels(method, route, str(status)).inc()
    LATENCY.labels(method, route).observe(seconds)


class ClusterCollector(Collector):
    def describe(self) -> list[GaugeMetricFamily]:
        # Registration must not touch the database (it may not exist yet).
        return []

    def collect(self) -> Iterator[GaugeMetricFamily]:
        from controlplane.selectors import cluster_summary

        summary = cluster_summary()
        yield _gauge(
            "kafka_controller_kafkacontroller_activecontrollercount",
            "1 while a controller holds a valid lease",
            1 if summary["controller_active"] else 0,
        )
        yield _gauge(
            "kafka_controller_controller_epoch",
            "Current controller epoch",
            summary["controller_epoch"],
        )
        yield _gauge(
            "kafka_controller_kafkacontroller_lastcommittedrecordoffset",
            "Offset of the newest committed metadata record",
            summary["metadata_offset"],
        )
        states = summary["broker_states"]
        yield _gauge(
            "kafka_controller_kafkacontroller_fencedbrokercount",
            "Fenced brokers",
            states.get("FENCED", 0),
        )
        yield _gauge(
            "kafka_controller_kafkacontroller_activebrokercount",
            "Unfenced brokers (including those in controlled shutdown)",
            states.get("UNFENCED", 0) + states.get("CONTROLLED_SHUTDOWN", 0),
        )


class ReplicationCollector(Collector):
    """Kafka's controller replication metrics, read from the partitions table at scrape."""

    def describe(self) -> list[GaugeMetricFamily]:
        return []

    def collect(self) -> Iterator[GaugeMetricFamily | CounterMetricFamily]:
        from replicas.selectors import replication_summary

        summary = replication_summary()
        yield _gauge(
            "kafka_controller_kafkacontroller_globaltopiccount", "Topics", summary["topics"]
        )
        yield _gauge(
            "kafka_controller_kafkacontroller_globalpartitioncount",
            "Partitions",
            summary["partitions"],
        )
        yield _gauge(
            "kafka_controller_kafkacontroller_offlinepartitionscount",
            "Partitions without a leader (leader -1), as Kafka's OfflinePartitionsCount",
            summary["leaderless_partitions"],
        )
        yield _gauge(
            "kafka_controller_leaderless_partitions",
            "Partitions without a leader (leader -1)",
            summary["leaderless_partitions"],
        )
        yield _gauge(
            "kafka_controller_offline_partitions_all_replicas",
            "Partitions every replica of which is offline (KIP-589 log dir failures)",
            summary["offline_partitions"],
        )
        yield _gauge(
            "kafka_controller_offline_replicas",
            "Replicas in OfflineReplica state after a log dir failure (KIP-589)",
            summary["offline_replicas"],
        )
        elections = CounterMetricFamily(
            "kafka_controller_controllerstats_leaderelections",
            "Leader elections committed (rate() gives elections per second)",
        )
        elections.add_metric([], summary["leader_elections_total"])
        yield elections
        unclean = CounterMetricFamily(
            "kafka_controller_controllerstats_uncleanleaderelections",
            "Unclean leader elections committed (UncleanLeaderElectionsPerSec)",
        )
        unclean.add_metric([], summary["unclean_leader_elections_total"])
        yield unclean


def _gauge(name: str, documentation: str, value: float) -> GaugeMetricFamily:
    family = GaugeMetricFamily(name, documentation)
    family.add_metric([], value)
    return family


_cluster_collector = ClusterCollector()
_replication_collector = ReplicationCollector()
if "PROMETHEUS_MULTIPROC_DIR" not in os.environ:
    REGISTRY.register(_cluster_collector)
    REGISTRY.register(_replication_collector)


def render() -> bytes:
    if "PROMETHEUS_MULTIPROC_DIR" in os.environ:
        registry = CollectorRegistry()
        multiprocess.MultiProcessCollector(registry)  # type: ignore[no-untyped-call]
        registry.register(_cluster_collector)
        registry.register(_replication_collector)
        return generate_latest(registry)
    return generate_latest(REGISTRY)
