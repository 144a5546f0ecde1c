"""KIP-1095's metric, read from the partitions table at scrape."""

from __future__ import annotations

from collections.abc import Iterator

from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

from canary.selectors import canary_partitions_not_isolated
from controlplane.metrics import gauge


class CanaryCollector(Collector):
    def describe(self) -> list[GaugeMetricFamily]:
        return []

    def collect(self) -> Iterator[GaugeMetricFamily]:
        yield gauge(
            "kafka_controller_canary_partitions_not_isolated",
            "Canary partitions with a replica off the canary brokers (KIP-1095: too few "
            "unfenced canary brokers when they were placed, or a broker changed pod)",
            canary_partitions_not_isolated(),
        )
