"""Kafka's controller replication and cluster health metrics, read at scrape from the counts the
controller keeps (cp_cluster_health), never from the partitions."""

from __future__ import annotations

from collections.abc import Iterator

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily
from prometheus_client.registry import Collector

from controlplane.metrics import gauge
from replicas.selectors import replication_summary

HEALTH_GAUGES = (
    (
        "kafka_server_replicamanager_underreplicatedpartitions",
        "Partitions whose ISR is smaller than their replicas (UnderReplicatedPartitions)",
        "under_replicated_partitions",
    ),
    (
        "kafka_server_replicamanager_underminisrpartitioncount",
        "Partitions whose ISR is smaller than the topic's min.insync.replicas "
        "(UnderMinIsrPartitionCount)",
        "under_min_isr_partitions",
    ),
    (
        "kafka_server_replicamanager_atminisrpartitioncount",
        "Partitions whose ISR equals the topic's min.insync.replicas (AtMinIsrPartitionCount)",
        "at_min_isr_partitions",
    ),
    (
        "kafka_controller_kafkacontroller_preferredreplicaimbalancecount",
        "Partitions whose leader is not their first replica (PreferredReplicaImbalanceCount)",
        "preferred_replica_imbalance",
    ),
    (
        "kafka_log_logmanager_offlinelogdirectorycount",
        "Offline log directories: those the brokers' latest heartbeats name "
        "(OfflineLogDirectoryCount)",
        "offline_log_dirs",
    ),
)


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
            "Partitions every replica of which is offline (a failed log dir or a fenced broker)",
            summary["offline_partitions"],
        )
        yield gauge(
            "kafka_controller_offline_replicas",
            "Offline replicas: on a failed log dir (KIP-589) or a fenced broker",
            summary["offline_replicas"],
        )
        # Cluster health, named as jmx_exporter names Kafka's MBeans (docs/reference/metrics.md).
        for name, help_text, key in HEALTH_GAUGES:
            yield gauge(name, help_text, summary[key])
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
