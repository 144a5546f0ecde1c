"""The metadata snapshots' gauge, read at scrape (controlplane.runtime.snapshots)."""

from __future__ import annotations

from collections.abc import Iterator

from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

from controlplane.metrics import gauge
from controlplane.runtime.snapshot_reads import metadata_snapshot_latest


class SnapshotCollector(Collector):
    def describe(self) -> list[GaugeMetricFamily]:
        return []  # registration must not touch the database (it may not exist yet)

    def collect(self) -> Iterator[GaugeMetricFamily]:
        latest = metadata_snapshot_latest()
        yield gauge(
            "kafka_controller_snapshot_end_offset",
            "End offset (exclusive) of the latest intact metadata snapshot; -1 when none",
            -1 if latest is None else latest.end_offset,
        )
