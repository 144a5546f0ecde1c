"""Metadata records: the typed changes the controller writes to the metadata log.

Names and fields follow Kafka's KRaft metadata records (snake_case). A record is pure data; the
log adds its offset, the controller epoch, a timestamp and who asked for it.
"""

from __future__ import annotations

import dataclasses
import enum
from collections.abc import Mapping
from typing import Any, ClassVar, TypeVar


class FencingChange(enum.IntEnum):
    """Kafka's BrokerRegistrationFencingChange."""

    UNFENCE = -1
    NONE = 0
    FENCE = 1


class ControlledShutdownChange(enum.IntEnum):
    """Kafka's BrokerRegistrationInControlledShutdownChange."""

    NONE = 0
    IN_CONTROLLED_SHUTDOWN = 1


@dataclasses.dataclass(frozen=True, slots=True)
class Listener:
    name: str
    host: str
    port: int
    security_protocol: str


@dataclasses.dataclass(frozen=True, slots=True)
class Record:
    TYPE: ClassVar[str] = ""

    def to_data(self) -> dict[str, Any]:
        data: dict[str, Any] = _jsonable(dataclasses.asdict(self))
        return data


@dataclasses.dataclass(frozen=True, slots=True)
class RegisterBrokerRecord(Record):
    TYPE: ClassVar[str] = "RegisterBrokerRecord"
    broker_id: int
    incarnation_id: str
    broker_epoch: int
    listeners: tuple[Listener, ...]
    rack: str | None
    pod: str
    log_dirs: tuple[str, ...]
    fenced: bool = True
    in_controlled_shutdown: bool = False


@dataclasses.dataclass(frozen=True, slots=True)
class BrokerRegistrationChangeRecord(Record):
    TYPE: ClassVar[str] = "BrokerRegistrationChangeRecord"
    broker_id: int
    broker_epoch: int
    fenced: int = FencingChange.NONE
    in_controlled_shutdown: int = ControlledShutdownChange.NONE


@dataclasses.dataclass(frozen=True, slots=True)
class UnregisterBrokerRecord(Record):
    TYPE: ClassVar[str] = "UnregisterBrokerRecord"
    broker_id: int
    broker_epoch: int


@dataclasses.dataclass(frozen=True, slots=True)
class AccessControlEntryRecord(Record):
    TYPE: ClassVar[str] = "AccessControlEntryRecord"
    id: str
    resource_type: str
    resource_name: str
    pattern_type: str
    principal: str
    host: str
    operation: str
    permission_type: str


@dataclasses.dataclass(frozen=True, slots=True)
class RemoveAccessControlEntryRecord(Record):
    TYPE: ClassVar[str] = "RemoveAccessControlEntryRecord"
    id: str


RECORD_TYPES: dict[str, type[Record]] = {
    cls.TYPE: cls
    for cls in (
        RegisterBrokerRecord,
        BrokerRegistrationChangeRecord,
        UnregisterBrokerRecord,
        AccessControlEntryRecord,
        RemoveAccessControlEntryRecord,
    )
}

R = TypeVar("R", bound=Record)


class UnknownRecordType(ValueError):
    pass


def register_record_type(cls: type[R]) -> type[R]:
    """Later capabilities (topics, configs, ...) add their record types here."""
    RECORD_TYPES[cls.TYPE] = cls
    return cls


def record_from_data(record_type: str, data: Mapping[str, Any]) -> Record:
    try:
        cls = RECORD_TYPES[record_type]
    except KeyError:
        raise UnknownRecordType(f"Unknown metadata record type {record_type!r}") from None
    if cls is RegisterBrokerRecord:
        fields = dict(data)
        fields["listeners"] = tuple(Listener(**item) for item in data["listeners"])
        fields["log_dirs"] = tuple(data["log_dirs"])
        return RegisterBrokerRecord(**fields)
    return cls(**data)


def _jsonable(value: Any) -> Any:
    if isinstance(value, dict):
        return {key: _jsonable(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_jsonable(item) for item in value]
    if isinstance(value, enum.Enum):
        return value.value
    return value
