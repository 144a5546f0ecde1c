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
from collections.abc import Collection, Iterator

from django.conf import settings
from django.db import connection

from controlplane.controller.image.metadata import MetadataImage
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


def log_entries(
    first: int, last: int | None = None, record_types: Collection[str] = ()
) -> Iterator[tuple[LogEntry, str | None]]:
    """The log's records from `first` (through `last`; only of `record_types` when named),
    each with the type it was stored as when no record type of this version knows it (served
    as a NoOpRecord)."""
    values = log_rows(
        ("offset", "controller_epoch", "timestamp_ms", "record_type", "data"),
        after=first - 1,
        through=last,
        page_rows=READ_CHUNK,
        record_types=record_types,
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
    directories, level = encoder_state_of(image)
    return directories, level, None


def encoder_state_of(image: MetadataImage) -> tuple[BrokerDirectories, int]:
    """What encoding the records after `image` needs: its registrations' log dirs and its
    metadata.version (O(brokers))."""
    directories = BrokerDirectories(
        {b.broker_id: (b.epoch, b.log_dirs) for b in image.brokers.values()}
    )
    return directories, image.metadata_version or DEFAULT_METADATA_VERSION


def commit_encoder(image: MetadataImage) -> KafkaLogEncoder | None:
    """The encoder of the next commit's Kafka batches (`image` is the state before it), or None
    when batches are not kept (CP_STORE_KAFKA_BATCHES)."""
    if not settings.CP_STORE_KAFKA_BATCHES:
        return None
    directories, level = encoder_state_of(image)
    return KafkaLogEncoder(level, directories=directories)


# What the encoder keeps from the records it does not encode (KafkaLogEncoder.observe).
STATE_RECORDS = ("RegisterBrokerRecord", "UnregisterBrokerRecord", "FeatureLevelRecord")
STORED_PAGE = 64  # batches per read: a commit is one to a few


def stored_batches(first: int, last: int) -> tuple[list[EncodedBatch], int | None]:
    """The controller's stored batches that follow one another from offset `first` and end by
    `last`, and, when none starts at `first`, where the next one within `last` starts (None:
    no batch is stored there)."""
    q = connection.ops.quote_name
    sql = (
        f"SELECT base_offset, last_offset, epoch, data FROM {q('cp_kafka_batch')} "
        "WHERE base_offset >= %s AND last_offset <= %s ORDER BY base_offset LIMIT %s"
    )
    found: list[EncodedBatch] = []
    while True:
        with connection.cursor() as cursor:
            cursor.execute(sql, [first, last, STORED_PAGE])
            page = cursor.fetchall()
        for base, end, epoch, data in page:
            if base != first:
                return found, (None if found else base)
            found.append(EncodedBatch(base, end, epoch, bytes(data)))
            first = end + 1
        if len(page) < STORED_PAGE:
            return found, None


class KraftLog:
    """Encoded batches from the log's start to the committed end this process has seen."""

    def __init__(self, start_offset: int = 0, cluster_id: str = "") -> None:
        self._lock = threading.Lock()
        self.start_offset = start_offset
        self.cluster_id = cluster_id
        directories, level, _ = encoder_state_at(start_offset)
        self._encoder = KafkaLogEncoder(level, directories=directories)
        self._encoder_at = start_offset  # the encoder's state is the log's before this offset
        self._batches: list[EncodedBatch] = []
        self._bases: list[int] = []
        self._epochs: list[EpochStart] = []
        self.end_offset = start_offset  # exclusive: the next offset to encode
        self.stored_records = 0  # how many records were served from the controller's batches

    def extend_to(self, last_offset: int) -> None:
        """Take in what the log holds through `last_offset` (committed), once: the batches the
        controller stored with its commits, and the rows of any range without them encoded
        here."""
        if last_offset < self.end_offset:
            return
        with self._lock:
            if last_offset < self.end_offset:
                return
            began, first = time.perf_counter(), self.end_offset
            encoded = 0
            while self.end_offset <= last_offset:
                stored, next_base = stored_batches(self.end_offset, last_offset)
                if stored:
                    for batch in stored:
                        self._append(batch)
                    self.stored_records += stored[-1].last_offset + 1 - stored[0].base_offset
                    continue
                through = last_offset if next_base is None else next_base - 1
                before = self.end_offset
                self._encode_rows(through)
                encoded += self.end_offset - before
                if self.end_offset <= through:
                    break  # rows gone under the read (retention moved the start): read again
            if self.end_offset - first >= LOGGED_EXTENSION_RECORDS:
                logger.info(
                    "took in offsets %d-%d (%d records, %d of them encoded from the rows) for "
                    "the brokers' fetches in %d ms",
                    first,
                    self.end_offset - 1,
                    self.end_offset - first,
                    encoded,
                    (time.perf_counter() - began) * 1000,
                )

    def _encode_rows(self, through: int) -> None:
        """Encode the rows from the log end through `through`, the encoder first brought to
        the log end past the stored batches (their registrations and metadata.version)."""
        if self._encoder_at < self.end_offset:
            for entry, _ in log_entries(self._encoder_at, self.end_offset - 1, STATE_RECORDS):
                self._encoder.observe(entry.record)
            self._encoder.next_offset = self.end_offset
        entries = (entry for entry, _ in log_entries(self.end_offset, through))
        for batch in self._encoder.batches(entries):
            self._append(batch)
        self._encoder_at = self.end_offset

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
