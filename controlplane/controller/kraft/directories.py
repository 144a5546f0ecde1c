"""Kafka's ids and the brokers' log dirs as the Kafka-format log needs them while it goes.

Kafka's Uuid is 16 bytes; the house's ids are UUID strings. `uuid_bytes` caches the bytes of the
ids a log repeats (a topic's id on each of its partitions, a broker's log dir on each replica)."""

from __future__ import annotations

import base64
import binascii
import functools
import uuid
from collections.abc import Mapping, Sequence

from controlplane.controller.records import (
    Record,
    RegisterBrokerRecord,
    UnregisterBrokerRecord,
    default_log_dir,
)


def kafka_uuid(value: str) -> uuid.UUID:
    """A house id as Kafka's Uuid: a UUID string, or Kafka's own 22-character base64 form."""
    try:
        return uuid.UUID(value)
    except ValueError:
        pass
    if len(value) == 22:
        try:
            raw = base64.urlsafe_b64decode(value + "==")
        except (binascii.Error, ValueError):
            raw = b""
        if len(raw) == 16:
            return uuid.UUID(bytes=raw)
    raise ValueError(f"{value!r} is neither a UUID nor a Kafka Uuid")


@functools.lru_cache(maxsize=65536)
def uuid_bytes(value: str) -> bytes:
    """`kafka_uuid(value)` as the 16 bytes Kafka writes (ValueError for a malformed id; the
    cache holds only ids that were valid)."""
    return kafka_uuid(value).bytes


class BrokerDirectories:
    """The log dirs of each broker's current registration, kept up to date by `observe`-ing
    the log's records in order (a RegisterBrokerRecord sets them, an UnregisterBrokerRecord
    drops them). Start it from a snapshot's brokers to serve a log that starts later."""

    def __init__(
        self, registrations: Mapping[int, tuple[int, Sequence[str]]] | None = None
    ) -> None:
        # broker id -> (broker epoch, log dirs as the registration lists them)
        self._registrations: dict[int, tuple[int, tuple[str, ...]]] = {
            broker: (epoch, tuple(dirs)) for broker, (epoch, dirs) in (registrations or {}).items()
        }
        # replicas -> their default dirs' bytes, joined: a log repeats a few replica sets
        self._placements: dict[tuple[int, ...], bytes] = {}

    def observe(self, record: Record) -> None:
        if isinstance(record, RegisterBrokerRecord):
            self._registrations[record.broker_id] = (record.broker_epoch, record.log_dirs)
            self._placements.clear()
        elif isinstance(record, UnregisterBrokerRecord):
            self._registrations.pop(record.broker_id, None)
            self._placements.clear()

    def log_dirs(self, broker_id: int, broker_epoch: int | None = None) -> tuple[str, ...] | None:
        """The dirs the broker's registration lists (at `broker_epoch` when given), or None."""
        registration = self._registrations.get(broker_id)
        if registration is None or broker_epoch not in (None, registration[0]):
            return None
        return registration[1]

    def default_directory(self, broker_id: int) -> uuid.UUID:
        """Where a new replica on the broker goes, as Kafka's controller decides it."""
        return kafka_uuid(default_log_dir(self.log_dirs(broker_id)))

    def default_directories_bytes(self, replicas: tuple[int, ...]) -> bytes:
        """Each replica's `default_directory` as Kafka's 16 bytes, one after the other."""
        placed = self._placements.get(replicas)
        if placed is None:
            placed = b"".join(uuid_bytes(default_log_dir(self.log_dirs(b))) for b in replicas)
            if len(self._placements) >= 65536:
                self._placements.clear()
            self._placements[replicas] = placed
        return placed
