"""Every length a request announces, checked against the bytes that follow it, before kio
decodes the request.

kio's native reader reserves room for an array's announced items before reading them: a frame
of a few bytes announcing 2^32 items asks the allocator for tens of gigabytes, and a failed
allocation in native code aborts the whole process, not just the request. Kafka's own readers
refuse such a frame first (`MessageUtil`, `ByteBufferAccessor`: a length larger than the bytes
left is a malformed request). So does this walk: it reads the request as its schema lays it out
(kio's dataclasses, the fields in order, then the tagged fields where the version is flexible),
decodes no value, and raises `LengthPastEnd` for the first array, string or bytes longer than
what is left of the frame (or of its tagged field). A request it passes may still be malformed
in other ways: kio's reader refuses those, as a Python exception.
"""

from __future__ import annotations

import dataclasses
import functools
import struct
from typing import Any

from kio.serial._introspect import (
    EntityField,
    EntityTupleField,
    PrimitiveField,
    PrimitiveTupleField,
    classify_field,
    get_schema_field_type,
)

_FIXED_SIZES = {
    "bool": 1,
    "int8": 1,
    "int16": 2,
    "uint16": 2,
    "int32": 4,
    "timedelta_i32": 4,
    "int64": 8,
    "timedelta_i64": 8,
    "float64": 8,
    "uuid": 16,
}
_INT16 = struct.Struct(">h")
_INT32 = struct.Struct(">i")

# A field as the walk reads it: ("fixed", size), ("string", None), ("bytes", None) for bytes and
# records, ("entity", class), or ("array", element) with element one of the others.
Shape = tuple[str, Any]


class LengthPastEnd(ValueError):
    """A length past the end of the frame, or a varint that runs past it."""


@dataclasses.dataclass(frozen=True, slots=True)
class _Layout:
    untagged: tuple[Shape, ...]
    tagged: dict[int, Shape]


def check_lengths(entity_class: type, frame: bytes | memoryview, offset: int) -> int:
    """Where `entity_class` read from `frame` at `offset` ends; LengthPastEnd when it
    announces a length past the frame's end."""
    flexible = bool(getattr(entity_class, "__flexible__", False))
    return _entity(entity_class, frame, offset, len(frame), flexible)


@functools.cache
def _layout(entity_class: type) -> _Layout:
    untagged: list[Shape] = []
    tagged: dict[int, Shape] = {}
    for field in dataclasses.fields(entity_class):
        shape = _shape(field)
        tag = field.metadata.get("tag")
        if tag is not None:
            tagged[int(tag)] = shape
        elif shape[0] == "fixed" and untagged and untagged[-1][0] == "fixed":
            untagged[-1] = ("fixed", untagged[-1][1] + shape[1])  # one check for a run
        else:
            untagged.append(shape)
    return _Layout(tuple(untagged), tagged)


def _shape(field: dataclasses.Field[Any]) -> Shape:
    kind = classify_field(field)
    if isinstance(kind, EntityField):
        return ("entity", kind.type_)
    if isinstance(kind, EntityTupleField):
        return ("array", ("entity", kind.type_))
    primitive = _primitive(get_schema_field_type(field))
    if isinstance(kind, PrimitiveTupleField):
        return ("array", primitive)
    assert isinstance(kind, PrimitiveField)
    return primitive


def _primitive(kafka_type: str) -> Shape:
    if kafka_type in _FIXED_SIZES:
        return ("fixed", _FIXED_SIZES[kafka_type])
    if kafka_type == "string":
        return ("string", None)
    if kafka_type in ("bytes", "records"):
        return ("bytes", None)
    raise ValueError(f"no request field has the type {kafka_type!r}")


def _entity(
    entity_class: type, data: bytes | memoryview, pos: int, end: int, flexible: bool
) -> int:
    layout = _layout(entity_class)
    for shape in layout.untagged:
        pos = _value(shape, data, pos, end, flexible)
    if not flexible:
        return pos
    count, pos = _uvarint(data, pos, end)
    for _ in range(count):
        tag, pos = _uvarint(data, pos, end)
        size, pos = _uvarint(data, pos, end)
        _fits(size, pos, end, "a tagged field")
        known = layout.tagged.get(tag)
        if known is not None:
            _value(known, data, pos, pos + size, flexible)
        pos += size
    return pos


def _value(shape: Shape, data: bytes | memoryview, pos: int, end: int, flexible: bool) -> int:
    kind, argument = shape
    if kind == "fixed":
        _fits(argument, pos, end, "a field")
        return pos + int(argument)
    if kind == "entity":
        return _entity(argument, data, pos, end, flexible)
    if kind == "array":
        return _array(argument, data, pos, end, flexible)
    if flexible:
        length, pos = _uvarint(data, pos, end)
        length -= 1  # compact: length + 1, 0 for null
    elif kind == "string":
        length, pos = _fixed_int(_INT16, data, pos, end), pos + 2
    else:
        length, pos = _fixed_int(_INT32, data, pos, end), pos + 4
    if length < 0:  # null
        return pos
    _fits(length, pos, end, f"a {kind} field")
    return pos + length


def _array(element: Shape, data: bytes | memoryview, pos: int, end: int, flexible: bool) -> int:
    if flexible:
        count, pos = _uvarint(data, pos, end)
        count -= 1
    else:
        count, pos = _fixed_int(_INT32, data, pos, end), pos + 4
    if count < 0:  # null
        return pos
    if count > end - pos:  # every item takes a byte at least
        raise LengthPastEnd(f"an array of {count} items in {end - pos} bytes")
    if element[0] == "fixed":
        _fits(count * element[1], pos, end, f"an array of {count} items")
        return pos + count * int(element[1])
    for _ in range(count):
        pos = _value(element, data, pos, end, flexible)
    return pos


def _fits(size: int, pos: int, end: int, what: str) -> None:
    if size > end - pos:
        raise LengthPastEnd(f"{what} of {size} bytes where {max(end - pos, 0)} are left")


def _fixed_int(layout: struct.Struct, data: bytes | memoryview, pos: int, end: int) -> int:
    _fits(layout.size, pos, end, "a length")
    return int(layout.unpack_from(data, pos)[0])


def _uvarint(data: bytes | memoryview, pos: int, end: int) -> tuple[int, int]:
    value = shift = 0
    for _ in range(5):
        if pos >= end:
            raise LengthPastEnd("a varint runs past the end")
        byte = data[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return value, pos
        shift += 7
    raise LengthPastEnd("a varint longer than 5 bytes")
