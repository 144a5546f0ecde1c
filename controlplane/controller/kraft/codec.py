"""Kafka's flexible message encoding, driven by field specs (our own data, `schemas`).

Every KRaft metadata record and control message is "flexible" from version 0: lengths are
unsigned varints (compact strings and arrays store length + 1, 0 meaning null), and each struct
ends with a tagged-field section: a count, then (tag, size, bytes) per field in ascending tag
order. A tagged field is written only when its value differs from its default; a reader skips
tags it does not know, which is how Kafka adds fields without a new version.

Decoding refuses malformed input with `MalformedRecords` and nothing else: a fetch answer or a
segment file from elsewhere never crashes the reader with an IndexError or a struct.error.
"""

from __future__ import annotations

import dataclasses
import struct
import uuid
from collections.abc import Mapping
from typing import Any

MAX_STRING_BYTES = 0x7FFF  # Kafka's generated code refuses longer strings (Short.MAX_VALUE)


class MalformedRecords(ValueError):
    """Bytes that are not what Kafka would write: truncated, a bad CRC, an impossible length."""


_INT8 = struct.Struct(">b")
_INT16 = struct.Struct(">h")
_UINT16 = struct.Struct(">H")
_INT32 = struct.Struct(">i")
_UINT32 = struct.Struct(">I")
_INT64 = struct.Struct(">q")
_FLOAT64 = struct.Struct(">d")


class Reader:
    """A cursor over bytes: every read checks the bounds first (MalformedRecords past the end)."""

    __slots__ = ("data", "end", "pos")

    def __init__(self, data: bytes, pos: int = 0, end: int | None = None) -> None:
        self.data = data
        self.pos = pos
        self.end = len(data) if end is None else end

    def remaining(self) -> int:
        return self.end - self.pos

    def take(self, size: int) -> bytes:
        if size < 0 or size > self.end - self.pos:
            raise MalformedRecords(
                f"needed {size} byte(s) at position {self.pos}, {self.remaining()} left"
            )
        start = self.pos
        self.pos += size
        return self.data[start : self.pos]

    def sub(self, size: int) -> Reader:
        """A reader over the next `size` bytes, which this one skips."""
        start = self.pos
        self.take(size)
        return Reader(self.data, start, self.pos)

    def fixed(self, layout: struct.Struct) -> Any:
        if layout.size > self.end - self.pos:
            raise MalformedRecords(
                f"needed {layout.size} byte(s) at position {self.pos}, {self.remaining()} left"
            )
        (value,) = layout.unpack_from(self.data, self.pos)
        self.pos += layout.size
        return value

    def int8(self) -> int:
        return int(self.fixed(_INT8))

    def int16(self) -> int:
        return int(self.fixed(_INT16))

    def uint16(self) -> int:
        return int(self.fixed(_UINT16))

    def int32(self) -> int:
        return int(self.fixed(_INT32))

    def uint32(self) -> int:
        return int(self.fixed(_UINT32))

    def int64(self) -> int:
        return int(self.fixed(_INT64))

    def float64(self) -> float:
        return float(self.fixed(_FLOAT64))

    def uvarint(self, bits: int = 32) -> int:
        """An unsigned LEB128 varint of at most `bits` bits (Kafka's readUnsignedVarint: 32
        bits in at most 5 bytes; a varlong: 64 in 10)."""
        max_bytes = (bits + 6) // 7
        value = shift = 0
        for _ in range(max_bytes):
            if self.pos >= self.end:
                raise MalformedRecords(f"a varint runs past the end at position {self.pos}")
            byte = self.data[self.pos]
            self.pos += 1
            value |= (byte & 0x7F) << shift
            if not byte & 0x80:
                if value >> bits:
                    raise MalformedRecords(f"a varint is out of range at position {self.pos}")
                return value
            shift += 7
        raise MalformedRecords(f"a varint is longer than {max_bytes} bytes at position {self.pos}")

    def varint(self) -> int:
        """A zigzag-encoded signed 32-bit varint (record fields)."""
        raw = self.uvarint(32)
        return (raw >> 1) ^ -(raw & 1)

    def varlong(self) -> int:
        """A zigzag-encoded signed 64-bit varint."""
        raw = self.uvarint(64)
        return (raw >> 1) ^ -(raw & 1)


def write_uvarint(out: bytearray, value: int) -> None:
    if value < 0:
        raise ValueError(f"an unsigned varint cannot hold {value}")
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)


def write_varint(out: bytearray, value: int) -> None:
    """Zigzag then LEB128, as Kafka's ByteUtils.writeVarint (32-bit)."""
    if not -(1 << 31) <= value < 1 << 31:
        raise ValueError(f"a varint cannot hold {value}")
    write_uvarint(out, ((value << 1) ^ (value >> 31)) & 0xFFFFFFFF)


def write_varlong(out: bytearray, value: int) -> None:
    if not -(1 << 63) <= value < 1 << 63:
        raise ValueError(f"a varlong cannot hold {value}")
    write_uvarint(out, ((value << 1) ^ (value >> 63)) & 0xFFFFFFFFFFFFFFFF)


# --- field types -------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True, slots=True)
class Primitive:
    """A fixed-size type, a compact string, compact bytes or a uuid."""

    name: str

    def default(self) -> Any:
        return _PRIMITIVE_DEFAULTS[self.name]

    def write(self, out: bytearray, value: Any, version: int, nullable: bool) -> None:
        if self.name == "string":
            _write_string(out, value, nullable)
        elif self.name == "bytes":
            _write_bytes(out, value)
        elif self.name == "uuid":
            if not isinstance(value, uuid.UUID):
                raise ValueError(f"a uuid field needs a uuid.UUID, not {value!r}")
            out += value.bytes
        elif self.name == "bool":
            out.append(1 if value else 0)
        else:
            layout = _LAYOUTS[self.name]
            try:
                out += layout.pack(value)
            except struct.error as error:
                raise ValueError(f"{value!r} is not a valid {self.name}: {error}") from None

    def read(self, reader: Reader, version: int, nullable: bool) -> Any:
        if self.name == "string":
            return _read_string(reader, nullable)
        if self.name == "bytes":
            return _read_bytes(reader)
        if self.name == "uuid":
            return uuid.UUID(bytes=reader.take(16))
        if self.name == "bool":
            return reader.int8() != 0
        return reader.fixed(_LAYOUTS[self.name])


_LAYOUTS = {
    "int8": _INT8,
    "int16": _INT16,
    "uint16": _UINT16,
    "int32": _INT32,
    "int64": _INT64,
    "float64": _FLOAT64,
}
_PRIMITIVE_DEFAULTS: dict[str, Any] = {
    **dict.fromkeys(("int8", "int16", "uint16", "int32", "int64"), 0),
    "float64": 0.0,
    "bool": False,
    "string": "",
    "bytes": b"",
    "uuid": uuid.UUID(int=0),
}

INT8 = Primitive("int8")
INT16 = Primitive("int16")
UINT16 = Primitive("uint16")
INT32 = Primitive("int32")
INT64 = Primitive("int64")
FLOAT64 = Primitive("float64")
BOOL = Primitive("bool")
STRING = Primitive("string")
BYTES = Primitive("bytes")  # compact bytes (never null in the records this project writes)
UUID = Primitive("uuid")


@dataclasses.dataclass(frozen=True, slots=True)
class Struct:
    """A nested struct: its fields (present by version) and then its own tagged-field section."""

    name: str
    fields: tuple[Field, ...]

    def default(self) -> Any:
        return {field.name: field.default_value() for field in self.fields}

    def write(self, out: bytearray, value: Any, version: int, nullable: bool) -> None:
        write_fields(out, self.name, self.fields, version, value)

    def read(self, reader: Reader, version: int, nullable: bool) -> Any:
        return read_fields(reader, self.name, self.fields, version)


@dataclasses.dataclass(frozen=True, slots=True)
class Array:
    """A compact array: length + 1 (0 is null), then the elements."""

    element: Primitive | Struct

    def default(self) -> Any:
        return []

    def write(self, out: bytearray, value: Any, version: int, nullable: bool) -> None:
        if value is None:
            if not nullable:
                raise ValueError("a non-nullable array cannot be null")
            out.append(0)
            return
        write_uvarint(out, len(value) + 1)
        for item in value:
            self.element.write(out, item, version, False)

    def read(self, reader: Reader, version: int, nullable: bool) -> Any:
        length = reader.uvarint() - 1
        if length < 0:
            if not nullable:
                raise MalformedRecords("a non-nullable array is null")
            return None
        if length > reader.remaining():  # every element takes a byte at least
            raise MalformedRecords(f"an array of {length} elements in {reader.remaining()} bytes")
        return [self.element.read(reader, version, False) for _ in range(length)]


FieldType = Primitive | Struct | Array

NO_DEFAULT = object()


@dataclasses.dataclass(frozen=True, slots=True)
class Field:
    """One field of a message: from which version it exists, whether it may be null (from
    `nullable_since`), whether it is tagged (`tag`; tagged from the version it exists), and
    its default (the type's own unless given: 0, false, "", the zero uuid, [])."""

    name: str
    type: FieldType
    since: int = 0
    nullable_since: int | None = None
    tag: int | None = None
    default: Any = NO_DEFAULT

    def default_value(self) -> Any:
        return self.type.default() if self.default is NO_DEFAULT else self.default

    def nullable(self, version: int) -> bool:
        return self.nullable_since is not None and version >= self.nullable_since


def write_fields(
    out: bytearray, owner: str, fields: tuple[Field, ...], version: int, values: Any
) -> None:
    """`values` (a mapping by field name) as the struct at `version`: the untagged fields in
    order, then the tagged ones that differ from their defaults, by tag."""
    if not isinstance(values, Mapping):
        raise ValueError(f"{owner} needs a mapping of its fields, not {values!r}")
    unknown = values.keys() - {field.name for field in fields}
    if unknown:
        raise ValueError(f"{owner} has no field(s) {sorted(unknown)}")
    tagged: list[tuple[int, Field, Any]] = []
    for field in fields:
        value = values.get(field.name, NO_DEFAULT)
        if version < field.since:
            if value is not NO_DEFAULT and value != field.default_value():
                raise ValueError(f"{owner} v{version} cannot carry {field.name} (v{field.since}+)")
            continue
        if value is NO_DEFAULT:
            value = field.default_value()
        if field.tag is None:
            _write_value(out, owner, field, value, version)
        elif value != field.default_value():
            tagged.append((field.tag, field, value))
    write_uvarint(out, len(tagged))
    for tag, field, value in sorted(tagged, key=lambda item: item[0]):
        body = bytearray()
        _write_value(body, owner, field, value, version)
        write_uvarint(out, tag)
        write_uvarint(out, len(body))
        out += body


def _write_value(out: bytearray, owner: str, field: Field, value: Any, version: int) -> None:
    nullable = field.nullable(version)
    if value is None and not nullable:
        raise ValueError(f"{owner}.{field.name} cannot be null at v{version}")
    try:
        field.type.write(out, value, version, nullable)
    except ValueError as error:
        raise ValueError(f"{owner}.{field.name}: {error}") from None


def read_fields(reader: Reader, owner: str, fields: tuple[Field, ...], version: int) -> Any:
    """The struct at `version` as a dict by field name; tagged fields it does not carry take
    their defaults, and tags this spec does not know are skipped."""
    values: dict[str, Any] = {}
    by_tag: dict[int, Field] = {}
    for field in fields:
        if version < field.since:
            continue
        if field.tag is None:
            values[field.name] = field.type.read(reader, version, field.nullable(version))
        else:
            by_tag[field.tag] = field
            values[field.name] = field.default_value()
    for _ in range(reader.uvarint()):
        tag = reader.uvarint()
        body = reader.sub(reader.uvarint())
        tagged = by_tag.get(tag)
        if tagged is None:
            continue  # a field of a later version: Kafka keeps it as an unknown tagged field
        values[tagged.name] = tagged.type.read(body, version, tagged.nullable(version))
        if body.remaining():
            raise MalformedRecords(f"{owner}.{tagged.name} left {body.remaining()} byte(s)")
    return values


def _write_string(out: bytearray, value: str | None, nullable: bool) -> None:
    if value is None:
        if not nullable:
            raise ValueError("a non-nullable string cannot be null")
        out.append(0)
        return
    if not isinstance(value, str):
        raise ValueError(f"a string field needs a str, not {value!r}")
    data = value.encode()
    if len(data) > MAX_STRING_BYTES:
        raise ValueError(f"a string of {len(data)} bytes is longer than {MAX_STRING_BYTES}")
    write_uvarint(out, len(data) + 1)
    out += data


def _read_string(reader: Reader, nullable: bool) -> str | None:
    length = reader.uvarint() - 1
    if length < 0:
        if not nullable:
            raise MalformedRecords("a non-nullable string is null")
        return None
    if length > MAX_STRING_BYTES:
        raise MalformedRecords(f"a string of {length} bytes is longer than {MAX_STRING_BYTES}")
    try:
        return reader.take(length).decode()
    except UnicodeDecodeError as error:
        raise MalformedRecords(f"a string is not UTF-8: {error}") from None


def _write_bytes(out: bytearray, value: bytes) -> None:
    if not isinstance(value, bytes | bytearray):
        raise ValueError(f"a bytes field needs bytes, not {type(value).__name__}")
    write_uvarint(out, len(value) + 1)
    out += value


def _read_bytes(reader: Reader) -> bytes:
    length = reader.uvarint() - 1
    if length < 0:
        raise MalformedRecords("a non-nullable bytes field is null")
    return reader.take(length)
