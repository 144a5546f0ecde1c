"""Record batches, magic 2 (Kafka's DefaultRecordBatch and DefaultRecord), as KRaft writes them.

    baseOffset int64 | length int32 | partitionLeaderEpoch int32 | magic int8 = 2 |
    crc uint32 (CRC-32C of everything after it) | attributes int16 | lastOffsetDelta int32 |
    baseTimestamp int64 | maxTimestamp int64 | producerId int64 | producerEpoch int16 |
    baseSequence int32 | records count int32 | records

and each record: varint length | attributes int8 | varlong timestampDelta | varint offsetDelta |
varint key length (-1 null) + key | varint value length + value | varint headers count.

As Kafka's Raft BatchBuilder: no compression, create time, not transactional (the attributes of
a metadata batch are 0; a control batch sets 0x20 alone), no producer (-1, -1, -1), one
timestamp per batch (every record's delta is 0: a broker refuses any other), a null key on data
records, no headers.
"""

from __future__ import annotations

import dataclasses
import struct
from collections.abc import Sequence

import crc32c

from controlplane.controller.kraft.codec import (
    MalformedRecords,
    Reader,
    write_varint,
)
from controlplane.controller.kraft.frames import KafkaRecord

MAGIC = 2
NO_PRODUCER_ID = -1
NO_PRODUCER_EPOCH = -1
NO_SEQUENCE = -1
COMPRESSION_MASK = 0x07
TIMESTAMP_TYPE_MASK = 0x08
TRANSACTIONAL_FLAG = 0x10
CONTROL_FLAG = 0x20

# baseOffset, length, partitionLeaderEpoch, magic, crc: the part the CRC does not cover.
_PREFIX = struct.Struct(">qiibI")
# attributes .. records count: what the CRC covers besides the records.
_HEADER = struct.Struct(">hiqqqhii")
BATCH_OVERHEAD = _PREFIX.size + _HEADER.size  # 61: Kafka's RECORD_BATCH_OVERHEAD
LOG_OVERHEAD = 12  # baseOffset and length: the bytes `length` does not count
_CRC_START = _PREFIX.size


@dataclasses.dataclass(frozen=True, slots=True)
class BatchRecord:
    offset: int
    timestamp_ms: int
    key: bytes | None
    value: bytes | None
    headers: tuple[tuple[str, bytes | None], ...] = ()


@dataclasses.dataclass(frozen=True, slots=True)
class RecordBatch:
    """A batch read back, its CRC checked."""

    base_offset: int
    partition_leader_epoch: int
    attributes: int
    last_offset_delta: int
    base_timestamp_ms: int
    max_timestamp_ms: int
    producer_id: int
    producer_epoch: int
    base_sequence: int
    records: tuple[BatchRecord, ...]
    size_bytes: int

    @property
    def is_control(self) -> bool:
        return bool(self.attributes & CONTROL_FLAG)

    @property
    def is_transactional(self) -> bool:
        return bool(self.attributes & TRANSACTIONAL_FLAG)

    @property
    def last_offset(self) -> int:
        return self.base_offset + self.last_offset_delta


def encode_batch(
    base_offset: int,
    records: Sequence[KafkaRecord],
    *,
    epoch: int,
    timestamp_ms: int,
) -> bytes:
    """One batch of `records` at consecutive offsets from `base_offset`, with the controller
    `epoch` as its partitionLeaderEpoch. Control records go in a control batch of their own
    (Kafka never mixes them with data records)."""
    if not records:
        raise ValueError("a record batch holds one record at least")
    control = {record.is_control for record in records}
    if len(control) != 1:
        raise ValueError("control records and metadata records go in separate batches")
    body = b"".join([_encode_record(delta, record) for delta, record in enumerate(records)])
    attributes = CONTROL_FLAG if control == {True} else 0
    header = _HEADER.pack(
        attributes,
        len(records) - 1,
        timestamp_ms,
        timestamp_ms,
        NO_PRODUCER_ID,
        NO_PRODUCER_EPOCH,
        NO_SEQUENCE,
        len(records),
    )
    checksum = crc32c.crc32c(body, crc32c.crc32c(header))
    length = BATCH_OVERHEAD - LOG_OVERHEAD + len(body)
    return _PREFIX.pack(base_offset, length, epoch, MAGIC, checksum) + header + bytes(body)


def _encode_record(offset_delta: int, record: KafkaRecord) -> bytes:
    key = record.key
    inner = b"".join(
        (
            b"\x00\x00",  # attributes: unused; timestampDelta 0: every record has the batch's
            _varint(offset_delta),
            b"\x01" if key is None else _varint(len(key)) + key,  # a null key is -1
            _varint(len(record.value)),
            record.value,
            b"\x00",  # no headers
        )
    )
    return _varint(len(inner)) + inner


_SMALL_ZIGZAGS = tuple(bytes([raw]) for raw in range(0x80))


def _varint(value: int) -> bytes:
    """`write_varint` as bytes, quick for the small values a record's framing holds."""
    raw = (value << 1) ^ (value >> 31)
    if 0 <= raw < 0x80:
        return _SMALL_ZIGZAGS[raw]
    if 0 <= raw < 0x4000:
        return bytes(((raw & 0x7F) | 0x80, raw >> 7))
    out = bytearray()
    write_varint(out, value)
    return bytes(out)


def decode_batches(data: bytes) -> list[RecordBatch]:
    """Every batch of `data` (a segment file, a fetch answer's records), CRCs checked.

    MalformedRecords, and no other exception, for anything that is not whole magic 2 batches:
    a truncated or corrupted batch, a bad CRC, a compressed batch (KRaft writes none)."""
    batches = []
    reader = Reader(bytes(data))
    while reader.remaining():
        batches.append(_decode_batch(reader))
    return batches


def _decode_batch(reader: Reader) -> RecordBatch:
    start = reader.pos
    if reader.remaining() < LOG_OVERHEAD:
        raise MalformedRecords(f"a batch header is cut short at position {start}")
    base_offset = reader.int64()
    length = reader.int32()
    if length < BATCH_OVERHEAD - LOG_OVERHEAD:
        raise MalformedRecords(f"a batch at {base_offset} claims {length} bytes, too few")
    batch = reader.sub(length)
    epoch = batch.int32()
    magic = batch.int8()
    if magic != MAGIC:
        raise MalformedRecords(f"the batch at {base_offset} has magic {magic}, not {MAGIC}")
    expected = batch.uint32()
    actual = crc32c.crc32c(batch.data[batch.pos : batch.end])
    if actual != expected:
        raise MalformedRecords(
            f"the batch at {base_offset} fails its CRC (stored {expected}, computed {actual})"
        )
    attributes = batch.int16()
    if attributes & COMPRESSION_MASK:
        raise MalformedRecords(f"the batch at {base_offset} is compressed; KRaft writes none")
    last_delta = batch.int32()
    base_ts, max_ts = batch.int64(), batch.int64()
    producer_id, producer_epoch, base_sequence = batch.int64(), batch.int16(), batch.int32()
    count = batch.int32()
    if count < 0 or count > batch.remaining():
        raise MalformedRecords(f"the batch at {base_offset} claims {count} records")
    records = tuple(_decode_record(batch, base_offset, base_ts) for _ in range(count))
    if batch.remaining():
        raise MalformedRecords(f"{batch.remaining()} byte(s) left in the batch at {base_offset}")
    return RecordBatch(
        base_offset,
        epoch,
        attributes,
        last_delta,
        base_ts,
        max_ts,
        producer_id,
        producer_epoch,
        base_sequence,
        records,
        reader.pos - start,
    )


def _decode_record(batch: Reader, base_offset: int, base_timestamp: int) -> BatchRecord:
    length = batch.varint()
    if length < 0:
        raise MalformedRecords(f"a record in the batch at {base_offset} has length {length}")
    record = batch.sub(length)
    record.int8()  # attributes
    timestamp_delta = record.varlong()
    offset_delta = record.varint()
    key = _optional_bytes(record)
    value = _optional_bytes(record)
    header_count = record.varint()
    if header_count < 0 or header_count > record.remaining():
        raise MalformedRecords(f"a record claims {header_count} headers")
    headers = []
    for _ in range(header_count):
        name = _optional_bytes(record)
        if name is None:
            raise MalformedRecords("a record header has a null key")
        try:
            headers.append((name.decode(), _optional_bytes(record)))
        except UnicodeDecodeError:
            raise MalformedRecords("a record header key is not UTF-8") from None
    if record.remaining():
        raise MalformedRecords(f"{record.remaining()} byte(s) left in a record")
    return BatchRecord(
        base_offset + offset_delta, base_timestamp + timestamp_delta, key, value, tuple(headers)
    )


def _optional_bytes(reader: Reader) -> bytes | None:
    size = reader.varint()
    if size < -1:
        raise MalformedRecords(f"a length of {size}")
    return None if size == -1 else reader.take(size)
