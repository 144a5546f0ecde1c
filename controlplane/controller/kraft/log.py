"""The house metadata log as Kafka's `__cluster_metadata` log: batches, fetch answers, segments.

Offsets are the house log's own: record N of the house log is record N of Kafka's. A batch
holds consecutive records written by one controller epoch at one timestamp (what one commit
writes), at most `max_batch_records` of them, and is encoded once: serve the same bytes to every
broker that fetches them.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Iterator, Sequence

from controlplane.controller.kraft.batches import decode_batches, encode_batch
from controlplane.controller.kraft.codec import MalformedRecords
from controlplane.controller.kraft.directories import BrokerDirectories
from controlplane.controller.kraft.frames import (
    DecodedRecord,
    KafkaRecord,
    decode_control,
    decode_metadata_value,
)
from controlplane.controller.kraft.twins import kafka_record
from controlplane.controller.kraft.versions import (
    DEFAULT_METADATA_VERSION,
    METADATA_VERSION_FEATURE,
    metadata_version,
)
from controlplane.controller.records import FeatureLevelRecord, Record

METADATA_TOPIC = "__cluster_metadata"
METADATA_PARTITION_DIR = f"{METADATA_TOPIC}-0"
# One commit, one batch, as Kafka's QuorumController appends one operation's records
# (MAX_RECORDS_PER_BATCH, 10,000): a broker's MetadataLoader publishes an image per batch it
# loads, so a commit cut in two batches (a controlled shutdown moving 1,500 leaders) reached
# the brokers' Metadata in two images, the second only once the first had been applied (1.2 s
# later under three stock brokers).
DEFAULT_MAX_BATCH_RECORDS = 10_000
# A batch closes once its values hold this much (a record more): with the records' own framing
# it stays well under KafkaRaftClient.MAX_BATCH_SIZE_BYTES (8 MiB), the largest batch a broker's
# metadata log takes.
DEFAULT_MAX_BATCH_BYTES = 4 << 20


@dataclasses.dataclass(frozen=True, slots=True)
class LogEntry:
    """One record of the house log with what its batch needs: offset, epoch, timestamp."""

    offset: int
    epoch: int
    timestamp_ms: int
    record: Record


# A LogEntry's fields as a plain tuple: offset, epoch, timestamp_ms, record.
_Entry = tuple[int, int, int, Record]


@dataclasses.dataclass(frozen=True, slots=True)
class EncodedBatch:
    base_offset: int
    last_offset: int
    epoch: int
    data: bytes


def segment_file_name(base_offset: int) -> str:
    """Kafka's name for a log segment that starts at `base_offset`."""
    return f"{base_offset:020d}.log"


def kafka_batch(
    entries: Sequence[tuple[int, Record]],
    epoch: int,
    timestamp_ms: int,
    metadata_version_level: int = DEFAULT_METADATA_VERSION,
    directories: BrokerDirectories | None = None,
) -> bytes:
    """House records at consecutive offsets, each as its Kafka twin (or NoOp), in one batch (or
    more where control records, which Kafka batches alone, sit between data records).

    `directories` is advanced past the entries (see `BrokerDirectories`)."""
    if not entries:
        raise ValueError("a record batch holds one record at least")
    directories = directories if directories is not None else BrokerDirectories()
    records: list[KafkaRecord] = []
    for index, (offset, record) in enumerate(entries):
        if offset != entries[0][0] + index:
            raise ValueError(f"offset {offset} does not follow {entries[0][0] + index - 1}")
        records.append(kafka_record(record, metadata_version_level, directories))
        directories.observe(record)
    out = bytearray()
    start = 0
    for index in range(1, len(records) + 1):  # control records go in batches of their own
        if index == len(records) or records[index].is_control != records[start].is_control:
            base = entries[start][0]
            out += encode_batch(base, records[start:index], epoch=epoch, timestamp_ms=timestamp_ms)
            start = index
    return bytes(out)


class KafkaLogEncoder:
    """Turns the house log, read in offset order (across calls), into Kafka batches.

    Keeps what later records need: the registrations' log dirs (`directories`) and the
    metadata.version, `metadata_version_level` until the log's own FeatureLevelRecord for
    metadata.version names another (records after it are written at that level, as Kafka's)."""

    def __init__(
        self,
        metadata_version_level: int = DEFAULT_METADATA_VERSION,
        *,
        directories: BrokerDirectories | None = None,
        max_batch_records: int = DEFAULT_MAX_BATCH_RECORDS,
        max_batch_bytes: int = DEFAULT_MAX_BATCH_BYTES,
    ) -> None:
        metadata_version(metadata_version_level)  # refuses an unknown level now
        self.metadata_version_level = metadata_version_level
        self.directories = directories if directories is not None else BrokerDirectories()
        self.max_batch_records = max_batch_records
        self.max_batch_bytes = max_batch_bytes
        self.next_offset: int | None = None

    def batches(self, entries: Iterable[LogEntry]) -> Iterator[EncodedBatch]:
        return self._batches((e.offset, e.epoch, e.timestamp_ms, e.record) for e in entries)

    def commit_batches(
        self, records: Iterable[tuple[int, Record]], epoch: int, timestamp_ms: int
    ) -> Iterator[EncodedBatch]:
        """One commit's records, (offset, record) each, all at `epoch` and `timestamp_ms`: as
        `batches`, without a LogEntry per record (a large commit has 100,000)."""
        return self._batches((offset, epoch, timestamp_ms, r) for offset, r in records)

    def _batches(self, entries: Iterable[_Entry]) -> Iterator[EncodedBatch]:
        pending: list[KafkaRecord] = []
        size = 0
        first: _Entry | None = None
        for entry in entries:
            offset, epoch, timestamp_ms, house_record = entry
            if self.next_offset is not None and offset != self.next_offset:
                raise ValueError(f"offset {offset} where {self.next_offset} was next")
            record = kafka_record(house_record, self.metadata_version_level, self.directories)
            if first is not None and (
                epoch != first[1]
                or timestamp_ms != first[2]
                or len(pending) >= self.max_batch_records
                or size >= self.max_batch_bytes
                or record.is_control != pending[0].is_control  # control batches stand alone
            ):
                yield self._batch(first, pending)
                pending, size, first = [], 0, None
            self.observe(house_record)
            pending.append(record)
            size += len(record.value)
            first = first or entry
            self.next_offset = offset + 1
        if first is not None:
            yield self._batch(first, pending)

    def observe(self, record: Record) -> None:
        """Take in what a record changes for the records after it (registrations' log dirs,
        metadata.version), for a reader that skips encoding it."""
        self.directories.observe(record)
        if isinstance(record, FeatureLevelRecord) and record.name == METADATA_VERSION_FEATURE:
            metadata_version(record.feature_level)  # a level this module cannot write: refused
            self.metadata_version_level = record.feature_level

    @staticmethod
    def _batch(first: _Entry, records: list[KafkaRecord]) -> EncodedBatch:
        offset, epoch, timestamp_ms, _ = first
        data = encode_batch(offset, records, epoch=epoch, timestamp_ms=timestamp_ms)
        return EncodedBatch(offset, offset + len(records) - 1, epoch, data)


def records_within(batches: Iterable[EncodedBatch], max_bytes: int) -> bytes:
    """Whole batches, in order, while they fit in `max_bytes`, and the first one whatever its
    size (as Kafka's fetch answers at least one batch, so that a follower always progresses)."""
    out = bytearray()
    for batch in batches:
        if out and len(out) + len(batch.data) > max_bytes:
            break
        out += batch.data
        if len(out) >= max_bytes:
            break
    return bytes(out)


def decode_records(data: bytes) -> Iterator[tuple[int, DecodedRecord]]:
    """Every record of `data` (whole batches) with its offset, decoded: metadata records from
    their frame, control records from their key and value. MalformedRecords for anything a
    KRaft reader would refuse, a key on a metadata record included."""
    for batch in decode_batches(data):
        for record in batch.records:
            if batch.is_control:
                yield record.offset, decode_control(record.key, record.value)
                continue
            if record.key is not None:
                raise MalformedRecords(f"the metadata record at {record.offset} has a key")
            if record.value is None:
                raise MalformedRecords(f"the metadata record at {record.offset} has no value")
            yield record.offset, decode_metadata_value(record.value)
