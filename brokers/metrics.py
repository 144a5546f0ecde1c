"""The controller's cluster gauges (Kafka's KafkaController MBeans), read at scrape."""

from __future__ import annotations

from collections.abc import Iterator

from django.conf import settings
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

from brokers.selectors import cluster_summary
from controlplane.metrics import gauge
from controlplane.runtime.sessions import session_store
from controlplane.runtime.standby import standby_lag_records

# A standby reports its position every half second while it runs: one not heard for three
# leases has stopped (or is stalled) and is no standby to count on.
STANDBY_LIVE_LEASES = 3


class ClusterCollector(Collector):
    def describe(self) -> list[GaugeMetricFamily]:
        # Registration must not touch the database (it may not exist yet).
        return []

    def collect(self) -> Iterator[GaugeMetricFamily]:
        summary = cluster_summary()
        yield gauge(
            "kafka_controller_kafkacontroller_activecontrollercount",
            "1 while a controller holds a valid lease",
            1 if summary["controller_active"] else 0,
        )
        yield gauge(
            "kafka_controller_controller_epoch",
            "Current controller epoch",
            summary["controller_epoch"],
        )
        yield gauge(
            "kafka_controller_kafkacontroller_lastcommittedrecordoffset",
            "Offset of the newest committed metadata record",
            summary["metadata_offset"],
        )
        held_off, since_ms = session_store().fencing_hold_off()
        yield gauge(
            "kafka_controller_fencing_held_off_brokers",
            "Brokers whose session lapsed but whom the controller does not fence yet: it heard no "
            "broker at all (full disruption) or measured its own ingress overloaded; 0 when "
            "fencing as usual",
            len(held_off),
        )
        yield gauge(
            "kafka_controller_fencing_held_off_since_ms",
            "When the controller began holding off fencing (epoch ms); 0 when it does not",
            since_ms,
        )
        yield gauge(
            "kafka_controller_standby_lag_records",
            "Records the furthest-behind standby controller has yet to replay (the log's end "
            "minus its image's offset); -1 when no standby is following",
            standby_lag_records(live_ms=STANDBY_LIVE_LEASES * settings.CP_LEASE_MS),
        )
        states = summary["broker_states"]
        yield gauge(
            "kafka_controller_kafkacontroller_fencedbrokercount",
            "Fenced brokers",
            states.get("FENCED", 0),
        )
        yield gauge(
            "kafka_controller_kafkacontroller_activebrokercount",
            "Unfenced brokers (including those in controlled shutdown)",
            states.get("UNFENCED", 0) + states.get("CONTROLLED_SHUTDOWN", 0),
        )
