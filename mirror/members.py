"""The mirror members' heartbeats and status reports: not metadata, never in the log.

Like the brokers' session store (controlplane.runtime.sessions), each heartbeat of a flow's
member lands here (one Redis HSET, or the process's memory when embedded) with what the member
reports: its connectors' and tasks' states and traces, the topics its MirrorSourceConnector
replicates (and which filter chose each), the source topics not yet on the target, the last
heartbeat its MirrorHeartbeatConnector emitted. The active controller's timer reads the last
contacts to expire members whose session lapsed; `GET /api/v1/mirror/flows` and the UI read the
reports. A member's report never holds a resolved secret (nodes send statuses, names and
references only).
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterable
from typing import Any, Protocol

from controlplane.redis_client import SharedStore

HASH = "mirror-members:"  # + "<source>-><target>", under the deployment's key prefix
RETENTION_S = 24 * 3600  # a flow nobody heartbeats for a day forgets its reports

Report = dict[str, Any]


class MemberStore(Protocol):
    def touch(self, flow: str, member_id: str, *, now_ms: int, report: Report) -> None: ...

    def reports(self, flows: Iterable[str]) -> dict[str, dict[str, Report]]: ...

    def forget(self, flow: str, member_ids: Iterable[str]) -> None: ...


def contacts_of(reports: dict[str, dict[str, Report]]) -> dict[str, dict[str, int]]:
    """Each flow's members' last heartbeat times (ms)."""
    return {
        flow: {member: int(report.get("contact_ms", 0)) for member, report in members.items()}
        for flow, members in reports.items()
    }


class LocalMemberStore:
    def __init__(self) -> None:
        self._reports: dict[str, dict[str, Report]] = {}
        self._lock = threading.Lock()

    def touch(self, flow: str, member_id: str, *, now_ms: int, report: Report) -> None:
        with self._lock:
            self._reports.setdefault(flow, {})[member_id] = {**report, "contact_ms": now_ms}

    def reports(self, flows: Iterable[str]) -> dict[str, dict[str, Report]]:
        with self._lock:
            return {flow: dict(self._reports.get(flow, {})) for flow in flows}

    def forget(self, flow: str, member_ids: Iterable[str]) -> None:
        with self._lock:
            for member_id in member_ids:
                self._reports.get(flow, {}).pop(member_id, None)

    def clear(self) -> None:
        with self._lock:
            self._reports.clear()


class RedisMemberStore:
    def __init__(self, client: Any, *, prefix: str) -> None:
        self._redis = client
        self._prefix = prefix + HASH

    def touch(self, flow: str, member_id: str, *, now_ms: int, report: Report) -> None:
        key = self._prefix + flow
        value = json.dumps({**report, "contact_ms": now_ms}, separators=(",", ":"))
        pipe = self._redis.pipeline(transaction=False)
        pipe.hset(key, member_id, value)
        pipe.expire(key, RETENTION_S)
        pipe.execute()

    def reports(self, flows: Iterable[str]) -> dict[str, dict[str, Report]]:
        names = list(flows)
        pipe = self._redis.pipeline(transaction=False)
        for flow in names:
            pipe.hgetall(self._prefix + flow)
        found: dict[str, dict[str, Report]] = {}
        for flow, raw in zip(names, pipe.execute(), strict=True):
            found[flow] = {k.decode(): json.loads(v) for k, v in raw.items()}
        return found

    def forget(self, flow: str, member_ids: Iterable[str]) -> None:
        ids = list(member_ids)
        if ids:
            self._redis.hdel(self._prefix + flow, *ids)


_local = LocalMemberStore()


def local_members() -> LocalMemberStore:
    return _local


member_store = SharedStore[MemberStore](
    _local, lambda client, prefix: RedisMemberStore(client, prefix=prefix)
)
