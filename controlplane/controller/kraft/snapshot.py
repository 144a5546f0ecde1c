"""A metadata snapshot in Kafka's checkpoint format (KIP-630), what a broker behind the log's
start loads with FetchSnapshot: a control batch holding the SnapshotHeader (and the quorum's
KRaftVersion and Voters records, KIP-853), the image's records as their Kafka twins in batches,
then a control batch holding the SnapshotFooter. Offsets are
the snapshot's own, from 0, and every batch carries the snapshot's epoch, as Kafka's
RecordsSnapshotWriter writes them. The file Kafka would keep it in is named by the snapshot id:
`<end offset, 20 digits>-<epoch, 10 digits>.checkpoint`."""

from __future__ import annotations

from collections.abc import Iterable

from controlplane.controller.kraft.batches import encode_batch
from controlplane.controller.kraft.directories import BrokerDirectories
from controlplane.controller.kraft.frames import KafkaRecord, control_record
from controlplane.controller.kraft.twins import kafka_record
from controlplane.controller.kraft.versions import (
    DEFAULT_METADATA_VERSION,
    METADATA_VERSION_FEATURE,
)
from controlplane.controller.records import FeatureLevelRecord, Record

SNAPSHOT_HEADER = 3  # ControlRecordType.SNAPSHOT_HEADER
SNAPSHOT_FOOTER = 4
SNAPSHOT_BATCH_RECORDS = 1000


def checkpoint_file_name(end_offset: int, epoch: int) -> str:
    return f"{end_offset:020d}-{epoch:010d}.checkpoint"


def kafka_snapshot(
    records: Iterable[Record],
    *,
    epoch: int,
    last_contained_timestamp_ms: int,
    metadata_version_level: int = DEFAULT_METADATA_VERSION,
    max_batch_records: int = SNAPSHOT_BATCH_RECORDS,
) -> bytes:
    """The snapshot of an image whose records (`MetadataImage.snapshot_records`: the features
    first, then the brokers, whose log dirs decide their replicas' directories) are `records`."""
    stamp = last_contained_timestamp_ms
    header = control_record(SNAPSHOT_HEADER, {"Version": 0, "LastContainedLogTimestamp": stamp})
    out = bytearray()
    offset, level = 0, metadata_version_level
    directories = BrokerDirectories()
    # The header's control batch also carries the quorum's KRaftVersion and Voters records,
    # which the image yields first, as Kafka's RecordsSnapshotWriter writes them.
    pending: list[KafkaRecord] = [header]
    for record in records:
        twin = kafka_record(record, level, directories)
        directories.observe(record)
        if isinstance(record, FeatureLevelRecord) and record.name == METADATA_VERSION_FEATURE:
            level = record.feature_level
        if pending and (
            len(pending) >= max_batch_records or twin.is_control != pending[0].is_control
        ):
            out += encode_batch(offset, pending, epoch=epoch, timestamp_ms=stamp)
            offset, pending = offset + len(pending), []
        pending.append(twin)
    if pending:
        out += encode_batch(offset, pending, epoch=epoch, timestamp_ms=stamp)
        offset += len(pending)
    footer = control_record(SNAPSHOT_FOOTER, {"Version": 0})
    out += encode_batch(offset, [footer], epoch=epoch, timestamp_ms=stamp)
    return bytes(out)
