"""A metadata snapshot's bytes (Kafka's `.checkpoint` file): encoded, checked, decoded.

No Django here: the broker simulator decodes the snapshots it fetches with these functions.

The payload is a sequence of frames, each a 4-byte big-endian length and a MessagePack value: a
header map (`format_version`, `cluster_id`, `end_offset`), then one `[type, data]` array per
record (the data the log stores, `Record.to_data()`, read back by `record_from_data`), then a
trailer map (`record_count`). The stored bytes are the payload compressed with zstd (its own
content checksum on), cut in chunks of CHUNK_BYTES. The snapshot's checksum is the SHA-256 (hex)
of the payload before compression.

Only what the image determines is in the payload: the same image always encodes to the same
bytes and checksum (`image_checksum`: a standby compares its image with a snapshot this way).
The snapshot's epoch (Kafka's SnapshotId: the controller epoch of its last record) and its
creation time are kept beside it, as Kafka keeps the epoch in the file's name.
"""

from __future__ import annotations

import contextlib
import dataclasses
import gc
import hashlib
import struct
import threading
from collections.abc import Iterable, Iterator
from typing import Any, Literal

import msgspec
import zstandard

from controlplane.controller.image import MetadataImage, image_from_records
from controlplane.controller.records import (
    RECORD_TYPES,
    PartitionRecord,
    Record,
    record_from_data,
)

FORMAT_VERSION = 1
CHUNK_BYTES = 1024 * 1024  # stored and fetched in pieces of this size (the last one shorter)
ZSTD_LEVEL = 3  # as the metadata fetch: little CPU, most of the bytes saved
_LENGTH = struct.Struct(">I")
_BATCH_RECORDS = 1000  # records per write to the hash and the compressor: fewer, larger writes

_encoder = msgspec.msgpack.Encoder()
_decoder = msgspec.msgpack.Decoder()
_frame_decoder = msgspec.msgpack.Decoder(tuple[str, msgspec.Raw])
# Records decode straight into their dataclass (msgspec, typed: twice as fast as decoding to
# dicts and building each record from one), unless their type decodes itself (`from_data`).
_typed_decoders: dict[str, msgspec.msgpack.Decoder[Any] | None] = {}


class SnapshotDamaged(ValueError):
    """The bytes are not a whole, intact snapshot: refused."""


@dataclasses.dataclass(frozen=True, slots=True)
class EncodedSnapshot:
    cluster_id: str
    end_offset: int  # exclusive: the image's last offset + 1, where the log goes on
    chunks: list[bytes]  # the compressed payload, CHUNK_BYTES each but the last
    checksum: str  # SHA-256 hex of the uncompressed payload
    record_count: int

    @property
    def size_bytes(self) -> int:
        return sum(len(chunk) for chunk in self.chunks)

    @property
    def data(self) -> bytes:
        return b"".join(self.chunks)


@dataclasses.dataclass(frozen=True, slots=True)
class DecodedSnapshot:
    cluster_id: str
    end_offset: int
    records: list[Record]

    def image(self) -> MetadataImage:
        """The image the snapshot describes, at offset `end_offset - 1`. SnapshotDamaged when
        its records do not make one (a snapshot no image wrote): no image then, not a part."""
        try:
            with _gc_paused():
                return image_from_records(
                    cluster_id=self.cluster_id,
                    records=self.records,
                    last_offset=self.end_offset - 1,
                )
        except (ValueError, TypeError, KeyError) as error:
            raise SnapshotDamaged(f"the snapshot's records do not replay: {error}") from None


# The collector paused while a snapshot is decoded and loaded: a million records make millions
# of objects, none of them garbage, and the collections they set off (each older generation's
# scanning them all again) took half the time. Paused once however many threads load.
_gc_lock = threading.Lock()
_gc_pauses = 0
_gc_was_enabled = False


@contextlib.contextmanager
def _gc_paused() -> Iterator[None]:
    global _gc_pauses, _gc_was_enabled
    with _gc_lock:
        if _gc_pauses == 0:
            _gc_was_enabled = gc.isenabled()
            gc.disable()
        _gc_pauses += 1
    try:
        yield
    finally:
        with _gc_lock:
            _gc_pauses -= 1
            if _gc_pauses == 0 and _gc_was_enabled:
                gc.enable()


def _frame(value: Any) -> bytes:
    body = _encoder.encode(value)
    return _LENGTH.pack(len(body)) + body


class _Payload:
    """The payload's frames, in pieces of many frames, counting the records as they pass."""

    def __init__(self, cluster_id: str, end_offset: int, records: Iterable[Record]) -> None:
        self.header = {
            "format_version": FORMAT_VERSION,
            "cluster_id": cluster_id,
            "end_offset": end_offset,
        }
        self.records = records
        self.count = 0

    def __iter__(self) -> Iterator[bytes]:
        yield _frame(self.header)
        batch: list[bytes] = []
        for record in self.records:
            # msgspec encodes the record's fields straight (as `Record.to_json` does for the
            # log): the same data as `to_data()`, with no dict built per record.
            batch.append(_frame((record.TYPE, record)))
            if len(batch) == _BATCH_RECORDS:
                self.count += len(batch)
                yield b"".join(batch)
                batch.clear()
        self.count += len(batch)
        yield b"".join(batch) + _frame({"record_count": self.count})


def records_encode(
    *,
    cluster_id: str,
    end_offset: int,
    records: Iterable[Record],
    chunk_bytes: int | None = None,
) -> EncodedSnapshot:
    """Encode `records` as the snapshot of an image at `end_offset - 1`, streaming: the
    payload is never held whole, only its compressed chunks (of CHUNK_BYTES by default)."""
    size = chunk_bytes or CHUNK_BYTES
    digest = hashlib.sha256()
    compressor = zstandard.ZstdCompressor(level=ZSTD_LEVEL, write_checksum=True).compressobj()
    payload = _Payload(cluster_id, end_offset, records)
    chunks: list[bytes] = []
    pending = bytearray()
    for piece in payload:
        digest.update(piece)
        pending += compressor.compress(piece)
        _cut(pending, chunks, size, whole_only=True)
    pending += compressor.flush()
    _cut(pending, chunks, size, whole_only=False)
    return EncodedSnapshot(
        cluster_id=cluster_id,
        end_offset=end_offset,
        chunks=chunks,
        checksum=digest.hexdigest(),
        record_count=payload.count,
    )


def _cut(pending: bytearray, chunks: list[bytes], size: int, *, whole_only: bool) -> None:
    while len(pending) >= size or (pending and not whole_only):
        chunks.append(bytes(pending[:size]))
        del pending[:size]


def snapshot_encode(image: MetadataImage) -> EncodedSnapshot:
    """The snapshot of `image` (its `snapshot_records`), at `image.last_offset + 1`."""
    return records_encode(
        cluster_id=image.cluster_id,
        end_offset=image.last_offset + 1,
        records=image.snapshot_records(),
    )


def image_checksum(image: MetadataImage) -> str:
    """The checksum a snapshot of `image` has: equal images, equal checksums. The payload is
    hashed as it is made, never compressed or kept."""
    digest = hashlib.sha256()
    for piece in _Payload(image.cluster_id, image.last_offset + 1, image.snapshot_records()):
        digest.update(piece)
    return digest.hexdigest()


def snapshot_decode(chunks: bytes | Iterable[bytes], *, checksum: str) -> DecodedSnapshot:
    """The snapshot in `chunks` (the stored bytes, whole or in order), checked: SnapshotDamaged
    when they do not decompress, frame or decode, or their payload is not `checksum`'s."""
    pieces = [chunks] if isinstance(chunks, bytes | bytearray | memoryview) else chunks
    digest = hashlib.sha256()
    decompressor = zstandard.ZstdDecompressor().decompressobj()
    reader = _FrameReader()
    try:
        with _gc_paused():
            for piece in pieces:
                payload = decompressor.decompress(bytes(piece))
                digest.update(payload)
                reader.feed(payload)
        if not decompressor.eof:
            raise SnapshotDamaged("the compressed snapshot ends before its last frame")
    except zstandard.ZstdError as error:
        raise SnapshotDamaged(f"the snapshot does not decompress: {error}") from None
    if digest.hexdigest() != checksum:
        raise SnapshotDamaged(
            f"the snapshot's checksum is {digest.hexdigest()}, not {checksum} as recorded"
        )
    return reader.snapshot()


def snapshot_verify(chunks: Iterable[bytes], *, checksum: str) -> None:
    """Check the stored bytes whole (they decompress, and to `checksum`'s payload) without
    decoding a record: SnapshotDamaged when they do not."""
    digest = hashlib.sha256()
    decompressor = zstandard.ZstdDecompressor().decompressobj()
    try:
        for piece in chunks:
            digest.update(decompressor.decompress(bytes(piece)))
    except zstandard.ZstdError as error:
        raise SnapshotDamaged(f"the snapshot does not decompress: {error}") from None
    if not decompressor.eof:
        raise SnapshotDamaged("the compressed snapshot ends before its last frame")
    if digest.hexdigest() != checksum:
        raise SnapshotDamaged(
            f"the snapshot's checksum is {digest.hexdigest()}, not {checksum} as recorded"
        )


class _FrameReader:
    """Frames from a payload arriving in pieces, decoded as they complete."""

    def __init__(self) -> None:
        self.buffer = bytearray()
        self.header: dict[str, Any] | None = None
        self.records: list[Record] = []
        self.trailer: dict[str, Any] | None = None

    def feed(self, data: bytes) -> None:
        self.buffer += data
        buffer = bytes(self.buffer)
        size = len(buffer)
        unpack_from = _LENGTH.unpack_from
        partition_frames: list[bytes] = []  # consecutive PartitionRecord frames, decoded at once
        take_partition = partition_frames.append
        is_partition = buffer.startswith
        open_ = self.trailer is None  # frames after the trailer: refused by `_take`
        prefix = _LENGTH.size
        position = 0
        while size - position >= prefix:
            (length,) = unpack_from(buffer, position)
            start = position + prefix
            end = start + length
            if end > size:
                break
            if open_ and is_partition(_PARTITION_FRAME, start, end):
                take_partition(buffer[start:end])
            else:
                if partition_frames:
                    self._take_partitions(partition_frames)
                    partition_frames.clear()
                self._take(buffer[start:end])
                open_ = self.trailer is None
            position = end
        if partition_frames:
            self._take_partitions(partition_frames)
        del self.buffer[:position]

    def _take_partitions(self, bodies: list[bytes]) -> None:
        """PartitionRecord frames (nine in ten of a large snapshot's), decoded in one call: their
        bodies made one MessagePack array. Any that does not decode as the type says: each
        frame is taken alone, as `_take` reads it, or refuses it. (The array does not see the
        frames' bounds; the payload's checksum, checked before the image is made, is what
        holds a snapshot to the bytes its writer framed.)"""
        if self.header is None:
            for body in bodies:
                self._take(body)
            return
        try:
            decoded = _partition_frames_decoder.decode(
                _ARRAY32 + _COUNT.pack(len(bodies)) + b"".join(bodies)
            )
        except (msgspec.DecodeError, msgspec.ValidationError):
            for body in bodies:
                self._take(body)
            return
        self.records.extend([record for _, record in decoded])

    def _take(self, body: bytes) -> None:
        if self.trailer is not None:
            raise SnapshotDamaged("a frame follows the snapshot's trailer")
        try:
            if self.header is not None and body[:1] == _RECORD_FRAME:
                self.records.append(_record(body))
                return
            value = _decoder.decode(body)
            if self.header is None:
                self.header = _header(value)
            elif isinstance(value, dict):
                self.trailer = value
            else:
                raise SnapshotDamaged(f"a frame of the snapshot is a {type(value).__name__}")
        except SnapshotDamaged:
            raise
        except (msgspec.DecodeError, ValueError, TypeError, KeyError) as error:
            raise SnapshotDamaged(f"a frame of the snapshot does not decode: {error}") from None

    def snapshot(self) -> DecodedSnapshot:
        if self.buffer or self.header is None or self.trailer is None:
            raise SnapshotDamaged("the snapshot is cut short")
        if self.trailer.get("record_count") != len(self.records):
            raise SnapshotDamaged(
                f"the snapshot holds {len(self.records)} records, its trailer says "
                f"{self.trailer.get('record_count')}"
            )
        return DecodedSnapshot(
            cluster_id=str(self.header["cluster_id"]),
            end_offset=int(self.header["end_offset"]),
            records=self.records,
        )


_RECORD_FRAME = b"\x92"  # MessagePack's two-element array: `[type, data]`
# A PartitionRecord's frame begins so: `[`, then its type as a string of 15 bytes.
_PARTITION_FRAME = _RECORD_FRAME + b"\xaf" + PartitionRecord.TYPE.encode()
_ARRAY32 = b"\xdd"  # MessagePack's array of a 32-bit count (any count may use it)
_COUNT = struct.Struct(">I")
_partition_frames_decoder = msgspec.msgpack.Decoder(
    list[tuple[Literal["PartitionRecord"], PartitionRecord]]
)


def _record(body: bytes) -> Record:
    record_type, data = _frame_decoder.decode(body)
    if record_type not in _typed_decoders:
        cls = RECORD_TYPES.get(record_type)
        typed = cls is not None and getattr(cls, "from_data", None) is None
        _typed_decoders[record_type] = msgspec.msgpack.Decoder(cls) if typed else None
    decoder = _typed_decoders[record_type]
    if decoder is not None:
        try:
            record: Record = decoder.decode(data)
            return record
        except msgspec.ValidationError:
            pass  # as `record_from_data` reads it, or its error
    return record_from_data(record_type, _decoder.decode(data))


def _header(value: Any) -> dict[str, Any]:
    if not isinstance(value, dict) or value.get("format_version") != FORMAT_VERSION:
        version = value.get("format_version") if isinstance(value, dict) else None
        raise SnapshotDamaged(
            f"not a snapshot of format version {FORMAT_VERSION} (found {version!r})"
        )
    return value
