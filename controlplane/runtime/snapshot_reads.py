"""Reading the stored metadata snapshots, as every web node serves them to brokers.

The latest snapshot (checked whole once per process before it is first named to a broker), one
by its end offset, a range of its bytes (each chunk checked by its CRC) and the whole snapshot
loaded; one that is not intact is marked damaged, never served nor built on again. Writing
them, the log's retention and when one is due: controlplane.runtime.snapshots.
"""

from __future__ import annotations

import contextlib
import logging
import threading
import zlib
from collections.abc import Iterator
from typing import Any, NoReturn

from controlplane.models import MetadataSnapshot, MetadataSnapshotChunk
from controlplane.runtime import snapshot_format
from controlplane.runtime.snapshot_format import (
    DecodedSnapshot,
    SnapshotDamaged,
    snapshot_decode,
    snapshot_verify,
)

logger = logging.getLogger("controlplane.snapshots")

CHUNKS_PER_READ = 8  # chunks read per query while a whole snapshot is loaded


def metadata_snapshot_latest() -> MetadataSnapshot | None:
    """The latest snapshot not known to be damaged."""
    return MetadataSnapshot.objects.filter(damaged=False).order_by("-end_offset").first()


def metadata_snapshot_get(*, end_offset: int) -> MetadataSnapshot | None:
    return MetadataSnapshot.objects.filter(end_offset=end_offset, damaged=False).first()


def snapshot_id_of(snapshot: MetadataSnapshot) -> dict[str, int]:
    """Kafka's SnapshotId."""
    return {"end_offset": snapshot.end_offset, "epoch": snapshot.epoch}


def snapshot_as_dict(snapshot: MetadataSnapshot) -> dict[str, Any]:
    return {
        "end_offset": snapshot.end_offset,
        "epoch": snapshot.epoch,
        "size_bytes": snapshot.size_bytes,
        "checksum": snapshot.checksum,
        "created_ms": snapshot.created_ms,
    }


def metadata_snapshot_read(*, snapshot: MetadataSnapshot, position: int, max_bytes: int) -> bytes:
    """At most `max_bytes` of the snapshot's bytes from `position` (< its size), reading only
    the chunks they are in, each checked by its CRC: SnapshotDamaged (and the snapshot marked
    so) when one does not match or is missing."""
    chunk_bytes = snapshot_format.CHUNK_BYTES
    end = min(snapshot.size_bytes, position + max_bytes)
    first = position // chunk_bytes * chunk_bytes
    chunks = list(
        MetadataSnapshotChunk.objects.filter(
            end_offset=snapshot.end_offset, position__gte=first, position__lt=end
        )
        .order_by("position")
        .values_list("position", "crc32", "data")
    )
    expected = list(range(first, end, chunk_bytes))
    if [chunk[0] for chunk in chunks] != expected:
        _damaged(snapshot, "a chunk is missing")
    pieces = []
    for at, crc, data in chunks:
        data = bytes(data)
        if zlib.crc32(data) != crc:
            _damaged(snapshot, f"the chunk at {at} does not match its CRC")
        pieces.append(data)
    return b"".join(pieces)[position - first : end - first]


def metadata_snapshot_load(*, snapshot: MetadataSnapshot) -> DecodedSnapshot:
    """The whole snapshot, checked (chunks, decompression, checksum): SnapshotDamaged (and the
    snapshot marked so) when it is not intact."""
    try:
        decoded = snapshot_decode(_pieces(snapshot), checksum=snapshot.checksum)
    except SnapshotDamaged as error:
        _damaged(snapshot, str(error))
    if decoded.end_offset != snapshot.end_offset:
        _damaged(snapshot, f"its bytes are the snapshot at {decoded.end_offset}")
    return decoded


def _pieces(snapshot: MetadataSnapshot) -> Iterator[bytes]:
    position = 0
    while position < snapshot.size_bytes:
        size = min(CHUNKS_PER_READ * snapshot_format.CHUNK_BYTES, snapshot.size_bytes - position)
        yield metadata_snapshot_read(snapshot=snapshot, position=position, max_bytes=size)
        position += size


_verified: set[tuple[int, str]] = set()  # snapshots this process checked whole
_verify_lock = threading.Lock()


def metadata_snapshot_latest_intact() -> MetadataSnapshot | None:
    """The latest snapshot, checked whole once per process before it is first named to a
    broker (the bytes decompressed and hashed, no record decoded): one that is damaged is
    marked so and the one before it is named instead. Chunks served later are each checked by
    their CRC (`metadata_snapshot_read`)."""
    while True:
        latest = metadata_snapshot_latest()
        if latest is None or (latest.end_offset, latest.checksum) in _verified:
            return latest
        with _verify_lock:  # one check at a time: the others wait for its outcome
            if (latest.end_offset, latest.checksum) in _verified:
                return latest
            try:
                snapshot_verify(_pieces(latest), checksum=latest.checksum)
            except SnapshotDamaged as error:
                with contextlib.suppress(SnapshotDamaged):
                    _damaged(latest, str(error))
                continue
            _verified.add((latest.end_offset, latest.checksum))
            return latest


def snapshot_checks_reset() -> None:
    """Forget which snapshots this process checked whole."""
    _verified.clear()


def _damaged(snapshot: MetadataSnapshot, why: str) -> NoReturn:
    """Mark `snapshot` damaged (never served nor built on again) and refuse it."""
    if not snapshot.damaged:
        logger.error("metadata snapshot %d is damaged: %s", snapshot.end_offset, why)
        MetadataSnapshot.objects.filter(end_offset=snapshot.end_offset).update(damaged=True)
        snapshot.damaged = True
    raise SnapshotDamaged(f"snapshot {snapshot.end_offset} is damaged: {why}")
