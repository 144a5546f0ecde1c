"""The heartbeat tracker: when each broker was last heard from and how far it has read the log.

Like Kafka's BrokerHeartbeatManager this is not metadata and never reaches the log. Beside the
sessions it keeps a mirror of each broker's status (epoch and fencing state), which the active
controller rewrites after every commit that changes a broker and in full when it takes over. A
heartbeat that changes nothing is then answered with one store round trip (epoch check and touch
in one atomic step) instead of a database query. The database stays the authority: a missing or
mismatched mirror entry makes the caller read the brokers table.

With Redis the store is shared by every web node and the controller; embedded, it lives in the
single process.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterable, Mapping
from typing import Any, Protocol

from controlplane.controller.env import BrokerSession
from controlplane.controller.image import BrokerStatus
from controlplane.redis_client import SharedStore

# Hash names under the deployment's key prefix (`CP_REDIS_KEY_PREFIX`, `cp:` by default).
SESSIONS = "broker-sessions"
STATUS = "broker-status"
HOLD_OFF = "fencing-held-off"  # the brokers whose fencing the controller holds off, and since
# Present while the sessions hash is the one the controller has been reading: Redis restarted
# without it means every session was lost with it (the brokers were not silent).
SESSIONS_MARK = "broker-sessions-mark"

# KEYS: status hash, sessions hash. ARGV: broker id, epoch, "now:offset".
# Touches the session only when the mirrored epoch matches; returns the mirrored status or nil.
TOUCH_IF_CURRENT = """
local status = redis.call('HGET', KEYS[1], ARGV[1])
if status and string.match(status, '^[^:]+') == ARGV[2] then
  redis.call('HSET', KEYS[2], ARGV[1], ARGV[3])
end
return status
"""


class SessionStore(Protocol):
    def touch(self, broker_id: int, *, now_ms: int, metadata_offset: int) -> None: ...

    def touch_if_current(
        self, broker_id: int, epoch: int, *, now_ms: int, metadata_offset: int
    ) -> BrokerStatus | None: ...

    def snapshot(self) -> dict[int, BrokerSession]: ...

    def get(self, broker_id: int) -> BrokerSession | None: ...

    def forget(self, broker_id: int) -> None: ...

    def mirror(self, changed: Mapping[int, BrokerStatus | None]) -> None: ...

    def replace_mirror(self, statuses: Iterable[BrokerStatus]) -> None: ...

    def set_fencing_hold_off(self, brokers: list[int], since_ms: int) -> None: ...

    def fencing_hold_off(self) -> tuple[list[int], int]: ...

    def mark_sessions(self) -> bool: ...


class LocalSessionStore:
    def __init__(self) -> None:
        self._sessions: dict[int, BrokerSession] = {}
        self._status: dict[int, BrokerStatus] = {}
        self._hold_off: tuple[list[int], int] = ([], 0)
        self._marked = False
        self._lock = threading.Lock()

    def touch(self, broker_id: int, *, now_ms: int, metadata_offset: int) -> None:
        with self._lock:
            self._sessions[broker_id] = BrokerSession(now_ms, metadata_offset)

    def touch_if_current(
        self, broker_id: int, epoch: int, *, now_ms: int, metadata_offset: int
    ) -> BrokerStatus | None:
        with self._lock:
            status = self._status.get(broker_id)
            if status is not None and status.epoch == epoch:
                self._sessions[broker_id] = BrokerSession(now_ms, metadata_offset)
            return status

    def snapshot(self) -> dict[int, BrokerSession]:
        with self._lock:
            return dict(self._sessions)

    def get(self, broker_id: int) -> BrokerSession | None:
        with self._lock:
            return self._sessions.get(broker_id)

    def forget(self, broker_id: int) -> None:
        with self._lock:
            self._sessions.pop(broker_id, None)

    def mirror(self, changed: Mapping[int, BrokerStatus | None]) -> None:
        with self._lock:
            for broker_id, status in changed.items():
                if status is None:
                    self._status.pop(broker_id, None)
                else:
                    self._status[broker_id] = status

    def replace_mirror(self, statuses: Iterable[BrokerStatus]) -> None:
        with self._lock:
            self._status = {status.broker_id: status for status in statuses}

    def set_fencing_hold_off(self, brokers: list[int], since_ms: int) -> None:
        with self._lock:
            self._hold_off = (list(brokers), since_ms if brokers else 0)

    def fencing_hold_off(self) -> tuple[list[int], int]:
        """The brokers whose fencing the controller holds off now, and since when."""
        with self._lock:
            return list(self._hold_off[0]), self._hold_off[1]

    def mark_sessions(self) -> bool:
        """Mark the sessions as known to the controller; True when the mark was missing (the
        store is new or lost what it held)."""
        with self._lock:
            missing, self._marked = not self._marked, True
            return missing

    def clear(self) -> None:
        with self._lock:
            self._sessions.clear()
            self._status.clear()
            self._hold_off = ([], 0)
            self._marked = False


class RedisSessionStore:
    def __init__(self, client: Any, *, key_prefix: str) -> None:
        self._redis = client
        self.sessions_key = key_prefix + SESSIONS
        self.status_key = key_prefix + STATUS
        self.hold_off_key = key_prefix + HOLD_OFF
        self.sessions_mark_key = key_prefix + SESSIONS_MARK
        self._touch_if_current = client.register_script(TOUCH_IF_CURRENT)
        self._thread = threading.local()

    def touch(self, broker_id: int, *, now_ms: int, metadata_offset: int) -> None:
        self._redis.hset(self.sessions_key, str(broker_id), f"{now_ms}:{metadata_offset}")

    def touch_if_current(
        self, broker_id: int, epoch: int, *, now_ms: int, metadata_offset: int
    ) -> BrokerStatus | None:
        args = (broker_id, epoch, f"{now_ms}:{metadata_offset}")
        try:
            value = self._touch_on_own_connection(*args)
        except Exception:  # lost connection, script flushed...: the full client path recovers
            self._drop_own_connection()
            value = self._touch_if_current(
                keys=[self.status_key, self.sessions_key], args=list(args)
            )
        return None if value is None else BrokerStatus.decode(broker_id, value.decode())

    def _touch_on_own_connection(self, *args: Any) -> Any:
        # Every heartbeat comes through here: each server thread keeps one connection of its own
        # and sends the script's EVALSHA directly, which halves redis-py's per-command CPU
        # (pool checkout, retry wrapper) on the hottest call in the system.
        connection = getattr(self._thread, "connection", None)
        if connection is None:
            connection = self._redis.connection_pool.make_connection()
            self._thread.connection = connection
        connection.send_command(
            "EVALSHA", self._touch_if_current.sha, 2, self.status_key, self.sessions_key, *args
        )
        return connection.read_response()

    def _drop_own_connection(self) -> None:
        connection = getattr(self._thread, "connection", None)
        self._thread.connection = None
        if connection is not None:
            connection.disconnect()

    def snapshot(self) -> dict[int, BrokerSession]:
        raw = self._redis.hgetall(self.sessions_key)
        return {int(k): _decode(v) for k, v in raw.items()}

    def get(self, broker_id: int) -> BrokerSession | None:
        value = self._redis.hget(self.sessions_key, str(broker_id))
        return None if value is None else _decode(value)

    def forget(self, broker_id: int) -> None:
        self._redis.hdel(self.sessions_key, str(broker_id))

    def mirror(self, changed: Mapping[int, BrokerStatus | None]) -> None:
        updates = {str(i): s.encode() for i, s in changed.items() if s is not None}
        removed = [str(i) for i, s in changed.items() if s is None]
        pipe = self._redis.pipeline()
        if updates:
            pipe.hset(self.status_key, mapping=updates)
        if removed:
            pipe.hdel(self.status_key, *removed)
        pipe.execute()

    def replace_mirror(self, statuses: Iterable[BrokerStatus]) -> None:
        pipe = self._redis.pipeline()  # MULTI/EXEC: readers never see it half-written
        pipe.delete(self.status_key)
        updates = {str(s.broker_id): s.encode() for s in statuses}
        if updates:
            pipe.hset(self.status_key, mapping=updates)
        pipe.execute()

    def set_fencing_hold_off(self, brokers: list[int], since_ms: int) -> None:
        if brokers:
            self._redis.set(self.hold_off_key, json.dumps([brokers, since_ms]))
        else:
            self._redis.delete(self.hold_off_key)

    def fencing_hold_off(self) -> tuple[list[int], int]:
        value = self._redis.get(self.hold_off_key)
        if value is None:
            return [], 0
        brokers, since_ms = json.loads(value)
        return [int(b) for b in brokers], int(since_ms)

    def mark_sessions(self) -> bool:
        return bool(self._redis.set(self.sessions_mark_key, "1", nx=True))


def _decode(value: bytes) -> BrokerSession:
    contact, offset = value.decode().split(":")
    return BrokerSession(int(contact), int(offset))


_local = LocalSessionStore()


def local_sessions() -> LocalSessionStore:
    return _local


session_store = SharedStore[SessionStore](
    _local, lambda client, prefix: RedisSessionStore(client, key_prefix=prefix)
)
