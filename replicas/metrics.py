"""Kafka's controller replication metrics, read from the partitions table at scrape."""

from __future__ import annotations

from collections.abc import Iterator

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily
from prometheus_client.registry import Collector

from controlplane.metrics import gauge
from replicas.selectors import replication_summary


class ReplicationCollector(Collector):
    """Kafka's controller replication metrics, read from the partitions table at scrape."""

    def describe(self) -> list[GaugeMetricFamily]:
        return []

    def collect(self) -> Iterator[GaugeMetricFamily | CounterMetricFamily]:
        summary = replication_summary()
        yield gauge(
            "kafka_controller_kafkacontroller_globaltopiccount", "Topics", summary["topics"]
        )
        yield gauge(
            "kafka_controller_kafkacontroller_globalpartitioncount",
            "Partitions",
            summary["partitions"],
        )
        yield gauge(
            "kafka_controller_kafkacontroller_offlinepartitionscount",
            "Partitions without a leader (leader -1), as Kafka's OfflinePartitionsCount",
            summary["leaderless_partitions"],
        )
        yield gauge(
            "kafka_controller_leaderless_partitions",
            "Partitions without a leader (leader -1)",
            summary["leaderless_partitions"],
        )
        yield gauge(
            "kafka_controller_offline_partitions_all_replicas",
            "Partitions every replica of which is offline (KIP-589 log dir failures)",
            summary["offline_partitions"],
        )
        yield gauge(
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
