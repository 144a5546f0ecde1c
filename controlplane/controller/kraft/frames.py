"""A record's value as Kafka frames it, and back.

A metadata record's value is a frame (Kafka's AbstractApiMessageSerde): unsigned varints for the
frame version (1), the apiKey and the record's version, then the record at that version. A
control record has a 4-byte key (int16 key version 0, int16 ControlRecordType) and, as value,
its message at version 0 with no frame.
"""

from __future__ import annotations

import dataclasses
import struct
from collections.abc import Mapping
from typing import Any

from controlplane.controller.frozen import quick_init
from controlplane.controller.kraft.codec import (
    MalformedRecords,
    Reader,
    read_fields,
    write_fields,
    write_uvarint,
)
from controlplane.controller.kraft.schemas import CONTROL_RECORDS, METADATA_RECORDS, MessageSpec

FRAME_VERSION = 1
CONTROL_KEY_VERSION = 0
_CONTROL_KEY = struct.Struct(">hh")


@quick_init
@dataclasses.dataclass(frozen=True, slots=True)
class KafkaRecord:
    """One record ready for a batch: `key` is None for metadata records (the framed record is
    the `value`), the 4-byte control key for control records."""

    name: str
    api_key: int  # the metadata apiKey, or the ControlRecordType of a control record
    version: int
    value: bytes
    key: bytes | None = None

    @property
    def is_control(self) -> bool:
        return self.key is not None


@dataclasses.dataclass(frozen=True, slots=True)
class DecodedRecord:
    """A record read back: Kafka's name, apiKey (or control type), version and fields by
    Kafka's field names (uuids as uuid.UUID, structs as dicts)."""

    name: str
    api_key: int
    version: int
    fields: dict[str, Any]
    is_control: bool = False


def metadata_spec(api_key: int) -> MessageSpec:
    spec = METADATA_RECORDS.get(api_key)
    if spec is None:
        raise ValueError(f"no metadata record has apiKey {api_key}")
    return spec


def metadata_record(api_key: int, version: int, fields: Mapping[str, Any]) -> KafkaRecord:
    """The metadata record `api_key` at `version` with `fields` (Kafka's names; the ones left
    out take their defaults), framed."""
    spec = metadata_spec(api_key)
    if not spec.supports(version):
        raise ValueError(f"{spec.name} has no version {version} (0-{spec.max_version})")
    out = bytearray()
    write_uvarint(out, FRAME_VERSION)
    write_uvarint(out, api_key)
    write_uvarint(out, version)
    write_fields(out, spec.name, spec.fields, version, fields)
    return KafkaRecord(spec.name, api_key, version, bytes(out))


def control_record(control_type: int, fields: Mapping[str, Any]) -> KafkaRecord:
    """The control record of `control_type` (LeaderChange 2, SnapshotHeader 3, SnapshotFooter 4,
    KRaftVersion 5, Voters 6) with its message at version 0."""
    spec = CONTROL_RECORDS.get(control_type)
    if spec is None:
        raise ValueError(f"no control record has type {control_type}")
    out = bytearray()
    write_fields(out, spec.name, spec.fields, 0, fields)
    key = _CONTROL_KEY.pack(CONTROL_KEY_VERSION, control_type)
    return KafkaRecord(spec.name, control_type, 0, bytes(out), key)


def decode_metadata_value(value: bytes) -> DecodedRecord:
    """A framed metadata record back to its fields; MalformedRecords for anything Kafka's
    MetadataRecordSerde would refuse (an unknown frame version, apiKey or version, bytes left)."""
    reader = Reader(value)
    frame = reader.uvarint()
    if frame != FRAME_VERSION:
        raise MalformedRecords(f"unknown frame version {frame} (only {FRAME_VERSION})")
    api_key = reader.uvarint()
    version = reader.uvarint()
    spec = METADATA_RECORDS.get(api_key)
    if spec is None:
        raise MalformedRecords(f"unknown metadata record apiKey {api_key}")
    if not spec.supports(version):
        raise MalformedRecords(f"{spec.name} has no version {version}")
    fields = read_fields(reader, spec.name, spec.fields, version)
    if reader.remaining():
        raise MalformedRecords(f"{reader.remaining()} byte(s) left after {spec.name}")
    return DecodedRecord(spec.name, api_key, version, fields)


def decode_control(key: bytes | None, value: bytes | None) -> DecodedRecord:
    """A control record's key and value back to its message (read at version 0)."""
    if key is None or len(key) < _CONTROL_KEY.size:
        raise MalformedRecords("a control record needs a 4-byte key")
    _key_version, control_type = _CONTROL_KEY.unpack_from(key)
    spec = CONTROL_RECORDS.get(control_type)
    if spec is None:
        raise MalformedRecords(f"unknown control record type {control_type}")
    if value is None:
        raise MalformedRecords(f"the {spec.name} control record has no value")
    reader = Reader(value)
    fields = read_fields(reader, spec.name, spec.fields, 0)
    if reader.remaining():
        raise MalformedRecords(f"{reader.remaining()} byte(s) left after {spec.name}")
    return DecodedRecord(spec.name, control_type, 0, fields, is_control=True)
