"""A broker's start from a metadata snapshot (Kafka's FetchSnapshot): the latest snapshot's id,
then its bytes in pieces, checked against its checksum and decoded into an image; the broker
then fetches the log after `end_offset - 1`.

The metadata follower does this when a fetch answers a `snapshot_id` (its records are before
the log's start); a benchmark calls `bootstrap_from_snapshot` itself.
"""

from __future__ import annotations

import asyncio
import dataclasses

from controlplane.controller.image import MetadataImage
from controlplane.runtime.snapshot_format import SnapshotDamaged, snapshot_decode
from simulator.client import ControllerClient

# Bytes asked per FetchSnapshot (the server clamps it to its CP_FETCH_MAX_BYTES).
SNAPSHOT_FETCH_BYTES = 8 * 1024 * 1024
# A snapshot deleted or found damaged while it was being read: the latest is asked for again,
# this many times at the most.
SNAPSHOT_ATTEMPTS = 5


@dataclasses.dataclass(frozen=True, slots=True)
class SnapshotBootstrap:
    """A snapshot loaded: its image (at `end_offset - 1`) and what loading it took."""

    # Out of the repr: asyncio reprs a finished task's result (its debug mode, a task logged),
    # and an image of a million partitions takes seconds to say.
    image: MetadataImage = dataclasses.field(repr=False)
    end_offset: int  # exclusive: fetch the log with after_offset = end_offset - 1
    epoch: int
    size_bytes: int  # its bytes, as fetched (compressed)
    record_count: int
    fetches: int  # FetchSnapshot requests, over every attempt
    attempts: int  # 1 unless a snapshot went away or was damaged under the read


async def bootstrap_from_snapshot(
    client: ControllerClient,
    *,
    max_bytes: int = SNAPSHOT_FETCH_BYTES,
    attempts: int = SNAPSHOT_ATTEMPTS,
) -> SnapshotBootstrap | None:
    """Load the latest metadata snapshot; None when the server has none yet. Raises
    SnapshotDamaged when every attempt found the snapshot's bytes not matching its checksum,
    and the client's Transient or Refused as its calls do."""
    fetches = 0
    for attempt in range(1, attempts + 1):
        latest = await client.latest_snapshot()
        if latest is None:
            return None
        end_offset, size = int(latest["end_offset"]), int(latest["size_bytes"])
        pieces: list[bytes] = []
        position = 0
        while position < size:
            got = await client.snapshot_bytes(end_offset, position=position, max_bytes=max_bytes)
            fetches += 1
            if got is None:
                break  # retention deleted it, or the server found it damaged: ask again
            data, size = got
            if not data:
                break
            pieces.append(data)
            position += len(data)
        if position != size or not pieces:
            continue
        try:
            # Decoding a large image takes a while: off the event loop, the brokers go on.
            decoded = await asyncio.to_thread(
                snapshot_decode, pieces, checksum=str(latest["checksum"])
            )
            image = await asyncio.to_thread(decoded.image)
        except SnapshotDamaged:
            if attempt == attempts:
                raise
            continue
        return SnapshotBootstrap(
            image=image,
            end_offset=decoded.end_offset,
            epoch=int(latest["epoch"]),
            size_bytes=size,
            record_count=len(decoded.records),
            fetches=fetches,
            attempts=attempt,
        )
    raise SnapshotDamaged(f"no snapshot could be read whole in {attempts} attempts")
