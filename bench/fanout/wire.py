"""The answers as they come off the wire: decoded by Content-Type and Content-Encoding, the
hot path reading only offsets, the full check afterwards."""

from __future__ import annotations

import dataclasses
import gzip
import time
from collections.abc import Sequence

import msgspec
import zstandard

from bench.fanout.common import MSGPACK, NO_LEADER_CHANGE

# --- The answer's wire format: decoded by its Content-Type and Content-Encoding ---------------


class RecordHead(msgspec.Struct):
    offset: int


class FetchHead(msgspec.Struct):
    """All a follower reads while measuring: msgspec skips every other field in C."""

    records: list[RecordHead] = []
    snapshot_id: dict[str, int] | None = None


class RecordFull(msgspec.Struct):
    offset: int
    type: str
    data: msgspec.Raw  # decoded only for PartitionChangeRecord (record types differ)


class FetchFull(msgspec.Struct):
    records: list[RecordFull] = []


class LeaderChange(msgspec.Struct):
    topic_id: str
    partition_id: int
    leader: int = NO_LEADER_CHANGE


_HEAD: dict[bool, msgspec.json.Decoder[FetchHead] | msgspec.msgpack.Decoder[FetchHead]] = {
    False: msgspec.json.Decoder(FetchHead),
    True: msgspec.msgpack.Decoder(FetchHead),
}
_FULL: dict[bool, msgspec.json.Decoder[FetchFull] | msgspec.msgpack.Decoder[FetchFull]] = {
    False: msgspec.json.Decoder(FetchFull),
    True: msgspec.msgpack.Decoder(FetchFull),
}
_CHANGE: dict[bool, msgspec.json.Decoder[LeaderChange] | msgspec.msgpack.Decoder[LeaderChange]] = {
    False: msgspec.json.Decoder(LeaderChange),
    True: msgspec.msgpack.Decoder(LeaderChange),
}


_ZSTD = zstandard.ZstdDecompressor()  # one per process: the followers share one thread


@dataclasses.dataclass(slots=True)
class Answer:
    """One metadata fetch answer as it came off the wire."""

    arrival: float  # time.monotonic(): one clock for every process of this machine
    body: bytes  # as sent: after Content-Encoding
    content_type: str = "application/json"
    content_encoding: str = ""
    decompress_s: float = 0.0  # wall time: on a busy machine, mostly waiting for a core
    decode_s: float = 0.0
    cpu_s: float = 0.0  # the thread's CPU time for both

    @property
    def msgpack(self) -> bool:
        return self.content_type.split(";")[0].strip().lower() == MSGPACK

    def plain(self) -> bytes:
        encoding = self.content_encoding.strip().lower()
        if encoding in ("", "identity"):
            return self.body
        if encoding == "zstd":
            try:
                return _ZSTD.decompress(self.body)
            except zstandard.ZstdError:  # a streamed frame need not say its size
                return _ZSTD.decompressobj().decompress(self.body)
        if encoding == "gzip":
            return gzip.decompress(self.body)
        raise ValueError(f"unexpected Content-Encoding {self.content_encoding!r}")


def read_head(answer: Answer) -> FetchHead:
    """The hot path: decompress, then the records' offsets only; times both on the answer."""
    cpu, started = time.thread_time(), time.perf_counter()
    plain = answer.plain()
    decompressed = time.perf_counter()
    head = _HEAD[answer.msgpack].decode(plain)
    answer.decompress_s = decompressed - started
    answer.decode_s = time.perf_counter() - decompressed
    answer.cpu_s = time.thread_time() - cpu
    return head


def new_leaders_in(
    answer: Answer, *, topic_ids: frozenset[str], failed_broker: int
) -> frozenset[tuple[str, int]]:
    """The partitions of `topic_ids` that this answer gives a leader other than the failed
    broker (a leader of -1 is none; -2 leaves the leader as it was)."""
    msgpack = answer.msgpack
    change = _CHANGE[msgpack]
    moved = set()
    for record in _FULL[msgpack].decode(answer.plain()).records:
        if record.type != "PartitionChangeRecord":
            continue
        data = change.decode(record.data)
        if data.topic_id in topic_ids and data.leader >= 0 and data.leader != failed_broker:
            moved.add((data.topic_id, data.partition_id))
    return frozenset(moved)


@dataclasses.dataclass(frozen=True, slots=True)
class Completion:
    completed_at: float | None  # the arrival of the answer that completed the set; None: never
    partitions_moved: int
    answers: int  # answers up to completion (all of them when it never completed)


def completion(
    answers: Sequence[Answer],
    *,
    topic_ids: frozenset[str],
    failed_broker: int,
    partitions: int,
    cache: dict[tuple[str, str, bytes], frozenset[tuple[str, int]]] | None = None,
) -> Completion:
    """When a follower had a new leader for every one of `partitions` partitions of
    `topic_ids`, from its answers in arrival order. `cache`: followers are sent the same bytes
    for the same range, and the same bytes decode to the same leaders."""
    cache = {} if cache is None else cache
    moved: set[tuple[str, int]] = set()
    for count, answer in enumerate(answers, start=1):
        key = (answer.content_type, answer.content_encoding, answer.body)
        found = cache.get(key)
        if found is None:
            found = cache[key] = new_leaders_in(
                answer, topic_ids=topic_ids, failed_broker=failed_broker
            )
        moved |= found
        if len(moved) >= partitions:
            return Completion(answer.arrival, len(moved), count)
    return Completion(None, len(moved), len(answers))
