"""The metadata log as Kafka brokers fetch it: `__cluster_metadata`-0 in Kafka's record batches
(controlplane.controller.kraft), encoded once per process and served to every broker from the
same bytes, extended as the log grows.

Offsets are the log's own. A batch is what one controller epoch wrote at one timestamp (at most
DEFAULT_MAX_BATCH_RECORDS records, 10,000: a commit is one batch, as Kafka's controller appends
one operation). A broker appends whole batches whose base offset is its log
end, so a fetch from an offset inside a cached batch (a broker that fetched batches cut
elsewhere before this process started) is answered from that offset: the rest of that batch,
cut there and encoded again, then whole batches.
"""

from __future__ import annotations

import bisect
import dataclasses
import logging
import threading
import time
from collections.abc import Iterator

from controlplane.controller.kraft import (
    DEFAULT_METADATA_VERSION,
    BrokerDirectories,
    EncodedBatch,
    KafkaLogEncoder,
    LogEntry,
)
from controlplane.controller.kraft.batches import decode_batches, encode_batch
from controlplane.controller.kraft.frames import KafkaRecord
from controlplane.controller.kraft.snapshot import kafka_snapshot
from controlplane.controller.records import Record, UnknownRecordType, record_from_data
from controlplane.models import MetadataSnapshot
from controlplane.runtime.log_rows import log_rows
from controlplane.runtime.snapshot_format import SnapshotDamaged
from controlplane.runtime.snapshot_reads import metadata_snapshot_get, metadata_snapshot_load

READ_CHUNK = 5000
# An extension this large is logged with its time (INFO): read, decoded and encoded, it is the
# listener's part of how long a large change takes to reach the brokers.
LOGGED_EXTENSION_RECORDS = 1000

logger = logging.getLogger(__name__)


@dataclasses.dataclass(frozen=True, slots=True)
class EpochStart:
    epoch: int
    start_offset: int


def log_entries(first: int, last: int | None = None) -> Iterator[tuple[LogEntry, str | None]]:
    """The log's records from `first` (through `last`), each with the type it was stored as
    when no record type of this version knows it (served as a NoOpRecord)."""
    values = log_rows(
        ("offset", "controller_epoch", "timestamp_ms", "record_type", "data"),
        after=first - 1,
        through=last,
        page_rows=READ_CHUNK,
    )
    for offset, epoch, timestamp_ms, record_type, data in values:
        try:
            record = record_from_data(record_type, data)
            unknown = None
        except UnknownRecordType:
            record, unknown = Record(), record_type
        yield LogEntry(offset, epoch, timestamp_ms, record), unknown


def encoder_state_at(first: int) -> tuple[BrokerDirectories, int, str | None]:
    """The registrations and metadata.version where the log starts (nothing before offset 0;
    after retention, the snapshot the log goes on from), and why they are unknown if they
    are."""
    if first == 0:
        return BrokerDirectories(), DEFAULT_METADATA_VERSION, None
    snapshot = metadata_snapshot_get(end_offset=first)
    if snapshot is None:
        why = f"no snapshot ends at offset {first}, where the log starts"
        return BrokerDirectories(), DEFAULT_METADATA_VERSION, why
    try:
        image = metadata_snapshot_load(snapshot=snapshot).image()
    except SnapshotDamaged as error:
        return BrokerDirectories(), DEFAULT_METADATA_VERSION, f"the snapshot is damaged: {error}"
    directories = BrokerDirectories(
        {b.broker_id: (b.epoch, b.log_dirs) for b in image.brokers.values()}
    )
    return directories, image.metadata_version or DEFAULT_METADATA_VERSION, None


class KraftLog:
    """Encoded batches from the log's start to the committed end this process has seen."""

    def __init__(self, start_offset: int = 0, cluster_id: str = "") -> None:
        self._lock = threading.Lock()
        self.start_offset = start_offset
        self.cluster_id = cluster_id
        directories, level, _ = encoder_state_at(start_offset)
        self._encoder = KafkaLogEncoder(level, directories=directories)
        self._batches: list[EncodedBatch] = []
        self._bases: list[int] = []
        self._epochs: list[EpochStart] = []
        self.end_offset = start_offset  # exclusive: the next offset to encode

    def extend_to(self, last_offset: int) -> None:
        """Encode what the log holds through `last_offset` (committed), once."""
        if last_offset < self.end_offset:
            return
        with self._lock:
            if last_offset < self.end_offset:
                return
            began, first = time.perf_counter(), self.end_offset
            entries = (entry for entry, _ in log_entries(self.end_offset, last_offset))
            for batch in self._encoder.batches(entries):
                self._append(batch)
            if self.end_offset - first >= LOGGED_EXTENSION_RECORDS:
                logger.info(
                    "read and encoded offsets %d-%d (%d records) for the brokers' fetches in %d ms",
                    first,
                    self.end_offset - 1,
                    self.end_offset - first,
                    (time.perf_counter() - began) * 1000,
                )

    def _append(self, batch: EncodedBatch) -> None:
        if not self._epochs or self._epochs[-1].epoch != batch.epoch:
            self._epochs.append(EpochStart(batch.epoch, batch.base_offset))
        self._batches.append(batch)
        self._bases.append(batch.base_offset)
        self.end_offset = batch.last_offset + 1

    def read(self, fetch_offset: int, max_bytes: int) -> bytes:
        """Batches from `fetch_offset` while they fit in `max_bytes` (the first one always, as
        Kafka answers at least one batch); empty at the end."""
        index = bisect.bisect_right(self._bases, fetch_offset) - 1
        if index < 0 or fetch_offset >= self.end_offset:
            return b""
        out = bytearray()
        first = self._batches[index]
        out += first.data if first.base_offset == fetch_offset else _cut(first, fetch_offset)
        for batch in self._batches[index + 1 :]:
            if len(out) >= max_bytes or len(out) + len(batch.data) > max_bytes:
                break
            out += batch.data
        return bytes(out)

    def end_offset_for_epoch(self, epoch: int) -> tuple[int, int]:
        """Kafka's LeaderEpochFileCache.endOffsetFor: the largest epoch at most `epoch` and the
        offset its records end at (the next epoch's start, or the log end); (-1, -1) when the
        log holds no epoch that old."""
        starts = [e.epoch for e in self._epochs]
        index = bisect.bisect_right(starts, epoch) - 1
        if index < 0:
            return -1, -1
        end = (
            self._epochs[index + 1].start_offset
            if index + 1 < len(self._epochs)
            else self.end_offset
        )
        return self._epochs[index].epoch, end

    @property
    def size_bytes(self) -> int:
        return sum(len(b.data) for b in self._batches)


def _cut(batch: EncodedBatch, offset: int) -> bytes:
    """The records of `batch` from `offset` on, as a batch of their own."""
    (decoded,) = decode_batches(batch.data)
    records = [
        KafkaRecord("", 0, 0, record.value or b"", record.key)
        for record in decoded.records
        if record.offset >= offset
    ]
    return encode_batch(offset, records, epoch=batch.epoch, timestamp_ms=decoded.base_timestamp_ms)


_log: KraftLog | None = None
_log_lock = threading.Lock()


def kraft_log(start_offset: int, cluster_id: str) -> KraftLog:
    """This process's encoded log, begun again when the log's start moved (retention) or the
    database holds another cluster's log."""
    global _log
    with _log_lock:
        if _log is None or (_log.start_offset, _log.cluster_id) != (start_offset, cluster_id):
            _log = KraftLog(start_offset, cluster_id)
        return _log


def reset_kraft_log() -> None:
    global _log
    with _log_lock:
        _log = None
    with _snapshot_lock:
        _snapshot_bytes.clear()


_snapshot_bytes: dict[tuple[str, int, int], bytes] = {}
_snapshot_lock = threading.Lock()


def kafka_snapshot_bytes(snapshot: MetadataSnapshot, cluster_id: str) -> bytes:
    """`snapshot` in Kafka's checkpoint format, encoded once per process (the latest one kept:
    brokers behind the log's start fetch the newest snapshot)."""
    key = (cluster_id, snapshot.end_offset, snapshot.epoch)
    with _snapshot_lock:
        cached = _snapshot_bytes.get(key)
        if cached is not None:
            return cached
        decoded = metadata_snapshot_load(snapshot=snapshot)
        data = kafka_snapshot(
            decoded.records,
            epoch=snapshot.epoch,
            last_contained_timestamp_ms=snapshot.created_ms,
        )
        _snapshot_bytes.clear()
        _snapshot_bytes[key] = data
        return data
