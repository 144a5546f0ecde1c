"""kio entities to and from the REST API's bodies: Kafka's fields, snake_cased, on both sides.

The REST API already speaks Kafka's request and response fields (snake_case), so one generic
walk turns a decoded request into the body `controlplane.rpc.execute` takes, and its answer
into the response entity of the request's version: a field the version lacks is dropped, one
the answer lacks keeps the schema's default. Handlers rename the few fields kio spells
differently (`throttle_time` for ThrottleTimeMs, `timeout` for TimeoutMs).
"""

from __future__ import annotations

import dataclasses
import datetime
import functools
import uuid
from collections.abc import Callable, Mapping
from typing import Any

from kio.schema.errors import ErrorCode
from kio.serial._introspect import (
    EntityField,
    EntityTupleField,
    FieldClass,
    classify_field,
    is_optional,
)

Data = dict[str, Any]
ZERO_UUID = uuid.UUID(int=0)
# Kafka's error codes by number: a code Kafka does not define (a house code) is answered
# UNKNOWN_SERVER_ERROR, as a stock client can read only Kafka's.
KAFKA_ERROR_CODES = {int(code.value): code for code in ErrorCode}


def to_data(entity: Any) -> Any:
    """A kio entity (or value) as plain JSON-able data: dicts, lists, ints, strings."""
    convert = _TO_DATA.get(type(entity))
    if convert is None:
        convert = _TO_DATA.setdefault(type(entity), _to_data_of(type(entity)))
    return convert(entity)


# Each type's conversion, found once: a request of 3,000 partitions converts 9,000 values.
_TO_DATA: dict[type, Any] = {}


def _to_data_of(cls: type) -> Any:
    if dataclasses.is_dataclass(cls):
        names = tuple(f.name for f in dataclasses.fields(cls))
        return lambda entity: {name: to_data(getattr(entity, name)) for name in names}
    if issubclass(cls, tuple):
        return lambda entity: [to_data(item) for item in entity]
    if issubclass(cls, datetime.timedelta):
        return lambda entity: round(entity.total_seconds() * 1000)
    if issubclass(cls, datetime.datetime):
        return lambda entity: round(entity.timestamp() * 1000)
    if issubclass(cls, uuid.UUID):
        return lambda entity: None if entity == ZERO_UUID else str(entity)
    if issubclass(cls, bool | str | bytes | type(None)):
        return _itself
    if issubclass(cls, ErrorCode):
        return lambda entity: int(entity.value)
    if issubclass(cls, int):
        return int
    if issubclass(cls, float):
        return float
    return _itself


def _itself(entity: Any) -> Any:
    return entity


@dataclasses.dataclass(frozen=True, slots=True)
class _Field:
    name: str
    kind: FieldClass
    kafka_type: str | None
    optional: bool
    required: bool  # no default in the schema: a zero value is supplied when the data lacks it
    # An integer type's inclusive range (kio's Interval types), checked here: constructing the
    # type checks the same range through a metaclass call, most of a large answer's conversion.
    int_range: tuple[int, int] | None = None
    shape: str = "scalar"  # "entities", "entity", "array" or "scalar": how `_converter` builds it


@functools.cache
def _fields(cls: type) -> tuple[_Field, ...]:
    out = []
    for f in dataclasses.fields(cls):
        required = f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING
        kind = classify_field(f)
        out.append(
            _Field(
                f.name,
                kind,
                f.metadata.get("kafka_type"),
                is_optional(f),
                required,
                _int_range(getattr(kind, "type_", None)),
                _shape(kind),
            )
        )
    return tuple(out)


def _shape(kind: FieldClass) -> str:
    if isinstance(kind, EntityTupleField):
        return "entities"
    if isinstance(kind, EntityField):
        return "entity"
    return "array" if kind.is_array else "scalar"


def _int_range(primitive: Any) -> tuple[int, int] | None:
    low, high = getattr(primitive, "__low__", None), getattr(primitive, "__high__", None)
    return (low, high) if isinstance(low, int) and isinstance(high, int) else None


def from_data(cls: type, data: Mapping[str, Any]) -> Any:
    """The kio entity `cls` from `data` (dict keys = kio's field names; extras ignored)."""
    return _builder(cls)(data)


@functools.cache
def _builder(cls: type) -> Callable[[Mapping[str, Any]], Any]:
    """`from_data` for `cls`, its fields' conversions chosen once: a large answer (a
    CreateTopics of 500 topics: 7,500 entities) converts each value with one call, not a
    dispatch on its field's shape."""
    plan = tuple((spec.name, _converter(spec), spec.required, spec) for spec in _fields(cls))

    def build(data: Mapping[str, Any]) -> Any:
        values: Data = {}
        for name, convert, required, spec in plan:
            if name in data:
                values[name] = convert(data[name])
            elif required:
                values[name] = _zero(spec)
        return cls(**values)

    return build


def _converter(spec: _Field) -> Callable[[Any], Any]:
    shape = spec.shape
    if shape == "entities":
        entity = spec.kind.type_

        def entities(value: Any) -> Any:
            if value is None and spec.optional:  # a null array is not an empty one
                return None
            build = _builder(entity)
            return tuple([build(item) for item in value or ()])

        return entities
    if shape == "entity":
        nested = spec.kind.type_
        return lambda value: None if value is None else _builder(nested)(value)
    if shape == "array":
        return functools.partial(_array, spec)
    return _scalar_converter(spec)


def _array(spec: _Field, value: Any) -> Any:
    if value is None and spec.optional:
        return None
    items = value or ()
    if spec.int_range is not None:
        low, high = spec.int_range
        if all(type(item) is int and low <= item <= high for item in items):
            return tuple(items)  # what `_scalar` answers for each
    return tuple(_scalar(spec, item) for item in items)


def _scalar_converter(spec: _Field) -> Callable[[Any], Any]:
    """A scalar field's conversion, the common case of its type first."""
    general = functools.partial(_optional_scalar, spec)
    if spec.int_range is not None:
        low, high = spec.int_range

        def ranged(value: Any) -> Any:
            return value if type(value) is int and low <= value <= high else general(value)

        return ranged
    match spec.kafka_type:
        case "string":
            return lambda value: value if type(value) is str else general(value)
        case "bool":
            return lambda value: value if type(value) is bool else general(value)
        case "error_code":
            unknown = ErrorCode.unknown_server_error
            return lambda value: (
                KAFKA_ERROR_CODES.get(value, unknown) if type(value) is int else general(value)
            )
    return general


def _optional_scalar(spec: _Field, value: Any) -> Any:
    if value is None and spec.optional:
        return None
    return _scalar(spec, value)


def _scalar(spec: _Field, value: Any) -> Any:
    bounds = spec.int_range
    if bounds is not None and type(value) is int and bounds[0] <= value <= bounds[1]:
        return value  # what the type's constructor answers for an int in its range
    if value is None:
        return None if spec.optional else _zero(spec)
    match spec.kafka_type:
        case "timedelta_i32" | "timedelta_i64":
            return datetime.timedelta(milliseconds=int(value))
        case "datetime_i64":
            return datetime.datetime.fromtimestamp(int(value) / 1000, datetime.UTC)
        case "uuid":
            return uuid.UUID(str(value)) if value else (None if spec.optional else ZERO_UUID)
        case "error_code":
            return KAFKA_ERROR_CODES.get(int(value), ErrorCode.unknown_server_error)
        case "string":
            return str(value)
        case "bool":
            return bool(value)
        case "bytes" | "records":
            return value if isinstance(value, bytes) else str(value).encode()
        case _:
            primitive: Any = spec.kind.type_  # kio's NewType-like int and float types
            return primitive(value)


def _zero(spec: _Field) -> Any:
    if spec.kind.is_array:
        return ()
    if isinstance(spec.kind, EntityField):
        return None
    if spec.optional:
        return None
    match spec.kafka_type:
        case "timedelta_i32" | "timedelta_i64":
            return datetime.timedelta(0)
        case "datetime_i64":
            return datetime.datetime.fromtimestamp(0, datetime.UTC)
        case "uuid":
            return ZERO_UUID
        case "error_code":
            return ErrorCode.none
        case "string":
            return ""
        case "bool":
            return False
        case "bytes" | "records":
            return b""
        case _:
            primitive: Any = spec.kind.type_
            return primitive(0)
