"""The heartbeat tracker: when each broker was last heard from and how far it has read the log.

Like Kafka's BrokerHeartbeatManager this is not metadata and never reaches the log. With Redis it
is shared by every web node and the controller (one HSET per heartbeat); embedded, it lives in the
single process.
"""

from __future__ import annotations

import threading
from typing import Protocol

from controlplane.controller.brokers import BrokerSession
from controlplane.redis_client import redis_client

SESSIONS_KEY = "cp:broker-sessions"


class SessionStore(Protocol):
    def touch(self, broker_id: int, *, now_ms: int, metadata_offset: int) -> None: ...

    def snapshot(self) -> dict[int, BrokerSession]: ...

    def get(self, broker_id: int) -> BrokerSession | None: ...

    def forget(self, broker_id: int) -> None: ...


class LocalSessionStore:
    def __init__(self) -> None:
        self._sessions: dict[int, BrokerSession] = {}
        self._lock = threading.Lock()

    def touch(self, broker_id: int, *, now_ms: int, metadata_offset: int) -> None:
        with self._lock:
            self._sessions[broker_id] = BrokerSession(now_ms, metadata_offset)

    def snapshot(self) -> dict[int, BrokerSession]:
        with self._lock:
            return dict(self._sessions)

    def get(self, broker_id: int) -> BrokerSession | None:
        with self._lock:
            return self._sessions.get(broker_id)

    def forget(self, broker_id: int) -> None:
        with self._lock:
            self._sessions.pop(broker_id, None)

    def clear(self) -> None:
        with self._lock:
            self._sessions.clear()


class RedisSessionStore:
    def __init__(self, client: object) -> None:
        self._redis = client

    def touch(self, broker_id: int, *, now_ms: int, metadata_offset: int) -> None:
        self._redis.hset(SESSIONS_KEY, str(broker_id), f"{now_ms}:{metadata_offset}")  # type: ignore[attr-defined]

    def snapshot(self) -> dict[int, BrokerSession]:
        raw = self._redis.hgetall(SESSIONS_KEY)  # type: ignore[attr-defined]
        return {int(k): _decode(v) for k, v in raw.items()}

    def get(self, broker_id: int) -> BrokerSession | None:
        value = self._redis.hget(SESSIONS_KEY, str(broker_id))  # type: ignore[attr-defined]
        return None if value is None else _decode(value)

    def forget(self, broker_id: int) -> None:
        self._redis.hdel(SESSIONS_KEY, str(broker_id))  # type: ignore[attr-defined]


def _decode(value: bytes) -> BrokerSession:
    contact, offset = value.decode().split(":")
    return BrokerSession(int(contact), int(offset))


_local = LocalSessionStore()


def local_sessions() -> LocalSessionStore:
    return _local


def session_store() -> SessionStore:
    client = redis_client()
    return RedisSessionStore(client) if client is not None else _local
