"""devtools.kafka_view reads what Kafka's own DumpLogSegments prints: a segment of the records
this controller writes, dumped by the pinned jars with `--cluster-metadata-decoder`, replays to
the view our decoder gives of the same bytes (its topic ids are Kafka's base64 Uuids, its
default tagged fields left out), at a prefix that leaves brokers and partitions standing and
for the whole log."""

from __future__ import annotations

from pathlib import Path

import pytest

from controlplane.controller.kraft import BrokerDirectories, KafkaLogEncoder, LogEntry
from devtools.broker_views import dump_log
from devtools.kafka_view import view_of_dump_log, view_of_kafka_log
from tests.kafka.test_metadata_log_conformance import (
    METADATA_PARTITION_DIR,
    every_record_type,
    segment_file_name,
)

# The records that take a topic or a broker away: left out, the brokers and partitions stand.
REMOVALS = ("RemoveTopicRecord", "UnregisterBrokerRecord")


@pytest.mark.parametrize("removals", [False, True], ids=["standing", "whole"])
def test_a_dump_of_kafka_dump_log_replays_to_our_decoders_view(
    kafka_jars: None, tmp_path: Path, removals: bool
) -> None:
    records = every_record_type()
    if not removals:
        records = [r for r in records if type(r).__name__ not in REMOVALS]
    log = [LogEntry(offset, 3, 1000 + offset // 4, r) for offset, r in enumerate(records)]
    data = b"".join(b.data for b in KafkaLogEncoder(directories=BrokerDirectories()).batches(log))
    segment = tmp_path / METADATA_PARTITION_DIR / segment_file_name(0)
    segment.parent.mkdir()
    segment.write_bytes(data)
    ours = view_of_kafka_log(data)
    (printed,) = dump_log([segment]).values()
    assert view_of_dump_log(printed).differences(ours) == []
    if not removals:
        assert ours.brokers and ours.topics and ours.partitions  # something to compare
        (broker,) = ours.brokers.values()
        assert broker.in_controlled_shutdown  # the flag a change record set
