"""PartitionRecord and PartitionChangeRecord framed straight from the house records.

A large commit is almost all partition records (a topic's creation, a broker's shutdown moving
its leaders), and the commit encodes them on its own thread. The spec-driven writer
(`frames.metadata_record`: a dict of Kafka's field names through `codec.write_fields`) is
general and slow for them; these two write the same bytes from the records' attributes. They
write the fields the house sets; the ones it never sets (LeaderRecoveryState, the ELR fields)
are tagged and at their defaults, which Kafka leaves out. The unit tests hold them to the
spec-driven writer byte for byte, at every metadata.version."""

from __future__ import annotations

import functools
import struct

from controlplane.controller.kraft import schemas
from controlplane.controller.kraft.codec import write_uvarint
from controlplane.controller.kraft.directories import BrokerDirectories, uuid_bytes
from controlplane.controller.kraft.frames import FRAME_VERSION, KafkaRecord
from controlplane.controller.kraft.versions import MetadataVersion
from controlplane.controller.records import (
    NO_LEADER_CHANGE,
    PartitionChangeRecord,
    PartitionRecord,
)

_INT32 = struct.Struct(">i")
_LEADER_AND_EPOCHS = struct.Struct(">iii")  # Leader, LeaderEpoch, PartitionEpoch
_NO_TAGGED_FIELDS = b"\x00"
# PartitionChangeRecord's tags (schemas.PARTITION_CHANGE), written in this order.
_ISR, _LEADER, _REPLICAS, _REMOVING, _ADDING, _DIRECTORIES = 0, 1, 2, 3, 4, 8


@functools.cache
def _frame(api_key: int, version: int) -> bytes:
    out = bytearray()
    for value in (FRAME_VERSION, api_key, version):
        write_uvarint(out, value)
    return bytes(out)


_SMALL_UVARINTS = tuple(bytes([value]) for value in range(0x80))


def _uvarint(value: int) -> bytes:
    if 0 <= value < 0x80:
        return _SMALL_UVARINTS[value]
    out = bytearray()
    write_uvarint(out, value)
    return bytes(out)


@functools.lru_cache(maxsize=65536)
def _int32s(values: tuple[int, ...]) -> bytes:
    """A compact array of int32 (a log repeats a few replica sets)."""
    count = len(values)
    try:
        return _uvarint(count + 1) + struct.pack(f">{count}i", *values)
    except struct.error as error:
        raise ValueError(f"{list(values)!r} is not a list of int32: {error}") from None


def _uuids(values: list[bytes]) -> bytes:
    """A compact array of uuids (16 bytes each)."""
    return _uvarint(len(values) + 1) + b"".join(values)


def _default_dirs(replicas: tuple[int, ...], dirs: BrokerDirectories) -> bytes:
    """The replicas' default dirs as a compact array of uuids."""
    return _uvarint(len(replicas) + 1) + dirs.default_directories_bytes(replicas)


def _int32(value: int) -> bytes:
    try:
        return _INT32.pack(value)
    except struct.error as error:
        raise ValueError(f"{value!r} is not a valid int32: {error}") from None


def partition_record(
    record: PartitionRecord, mv: MetadataVersion, dirs: BrokerDirectories
) -> KafkaRecord:
    """The PartitionRecord twin (see `twins`), framed at `mv`'s PartitionRecord version."""
    version = mv.partition
    parts = [
        _frame(schemas.PARTITION.key, version),
        _int32(record.partition_id),
        uuid_bytes(record.topic_id),
        _int32s(record.replicas),
        _int32s(record.isr),
        _int32s(record.removing_replicas),
        _int32s(record.adding_replicas),
    ]
    try:
        parts.append(
            _LEADER_AND_EPOCHS.pack(record.leader, record.leader_epoch, record.partition_epoch)
        )
    except struct.error as error:
        raise ValueError(f"PartitionRecord's leader or epochs: {error}") from None
    if version >= 1:
        parts.append(
            _uuids([uuid_bytes(d) for d in record.directories])
            if record.directories
            else _default_dirs(record.replicas, dirs)
        )
    parts.append(_NO_TAGGED_FIELDS)
    return KafkaRecord(schemas.PARTITION.name, schemas.PARTITION.key, version, b"".join(parts))


def partition_change_record(
    record: PartitionChangeRecord, mv: MetadataVersion, dirs: BrokerDirectories
) -> KafkaRecord:
    """The PartitionChangeRecord twin (see `twins`), framed at `mv`'s version: every field but
    the ids is tagged and written only when it changed."""
    version = mv.partition
    tagged: list[tuple[int, bytes]] = []
    if record.isr is not None:
        tagged.append((_ISR, _int32s(record.isr)))
    if record.leader != NO_LEADER_CHANGE:
        tagged.append((_LEADER, _int32(record.leader)))
    if record.replicas is not None:
        tagged.append((_REPLICAS, _int32s(record.replicas)))
    if record.removing_replicas is not None:
        tagged.append((_REMOVING, _int32s(record.removing_replicas)))
    if record.adding_replicas is not None:
        tagged.append((_ADDING, _int32s(record.adding_replicas)))
    if version >= 1 and record.directories is not None:
        # AssignReplicasToDirs: every replica's dir, in the replicas' order.
        tagged.append((_DIRECTORIES, _uuids([uuid_bytes(d) for d in record.directories])))
    elif version >= 1 and record.replicas is not None:
        # New replicas need a directory each, and the list must stay as long as Replicas.
        tagged.append((_DIRECTORIES, _default_dirs(record.replicas, dirs)))
    parts = [
        _frame(schemas.PARTITION_CHANGE.key, version),
        _int32(record.partition_id),
        uuid_bytes(record.topic_id),
        _uvarint(len(tagged)),
    ]
    for tag, body in tagged:
        parts += (_uvarint(tag), _uvarint(len(body)), body)
    name, key = schemas.PARTITION_CHANGE.name, schemas.PARTITION_CHANGE.key
    return KafkaRecord(name, key, version, b"".join(parts))
