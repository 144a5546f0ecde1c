"""Drives the real controller (ControllerRuntime and its commit path on PostgreSQL: write-behind,
binary COPY, staged updates) with large changes: topics led by one broker, AlterReplicaState,
brokers whose session lapsed fenced, heartbeats that unfence them, preferred elections."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from typing import Any

from controlplane.runtime.controller import ControllerRuntime
from controlplane.runtime.conversation import ControllerEvent, RequestContext
from controlplane.runtime.lease import cluster_get_or_create, now_ms
from tests.conftest import registration_body

CAUGHT_UP = 10**12  # a heartbeat's metadata offset past anything committed


class Driver:
    def __init__(self, runtime: ControllerRuntime, brokers: int) -> None:
        self.runtime = runtime
        self.brokers = brokers
        self.epochs: dict[int, int] = {}
        self.topics: dict[str, int] = {}  # name -> partitions

    def handle(self, api: str, payload: dict[str, Any] | None = None) -> dict[str, Any]:
        return self.handle_batch([(api, payload or {})])[0]

    def handle_batch(
        self, events: Sequence[tuple[str, dict[str, Any]]], **options: bool
    ) -> list[dict[str, Any]]:
        """The events as one batch: one commit (`options`: the runtime's `handle_batch`'s, a
        bounded change's slices)."""
        batch = [
            ControllerEvent(
                api, payload, RequestContext(principal="User:driver", request_id=str(uuid.uuid4()))
            )
            for api, payload in events
        ]
        return [answer.response for answer in self.runtime.handle_batch(batch, **options)]

    def register_all(self) -> None:
        cluster_id = cluster_get_or_create().cluster_id
        for broker_id in range(self.brokers):
            answer = self.handle("BrokerRegistration", registration_body(broker_id, cluster_id))
            self.epochs[broker_id] = answer["broker_epoch"]
        self.unfence(range(self.brokers))

    def heartbeat(self, broker_id: int) -> dict[str, Any]:
        self.runtime.sessions.touch(broker_id, now_ms=now_ms(), metadata_offset=CAUGHT_UP)
        return self.handle(
            "BrokerHeartbeat",
            {
                "broker_id": broker_id,
                "broker_epoch": self.epochs[broker_id],
                "current_metadata_offset": CAUGHT_UP,
            },
        )

    def unfence(self, broker_ids: Sequence[int] | range) -> None:
        for broker_id in broker_ids:
            self.heartbeat(broker_id)

    def create_topic_led_by(
        self, name: str, leader: int, partitions: int, *, check: bool = True
    ) -> bool:
        others = [b for b in range(self.brokers) if b != leader]
        assignments = [
            {
                "partition_index": i,
                "broker_ids": [leader, others[i % len(others)], others[(i + 3) % len(others)]],
            }
            for i in range(partitions)
        ]
        answer = self.handle(
            "CreateTopics", {"topics": [{"name": name, "assignments": assignments}]}
        )
        created = answer["topics"][0]["error_code"] == 0
        assert created or not check, answer
        if created:
            self.topics[name] = partitions
        return created

    def alter_replica_state_event(
        self, broker_id: int, partitions: dict[str, list[int]]
    ) -> tuple[str, dict[str, Any]]:
        return (
            "AlterReplicaState",
            {
                "broker_id": broker_id,
                "broker_epoch": self.epochs[broker_id],
                "new_state": 1,
                "reason": "log dir failure (test)",
                "topics": [{"name": n, "partitions": p} for n, p in partitions.items()],
            },
        )

    def alter_replica_state(self, broker_id: int, partitions: dict[str, list[int]]) -> None:
        answer = self.handle(*self.alter_replica_state_event(broker_id, partitions))
        assert answer.get("error_code", 0) == 0, answer

    def lapse_sessions(self, silent: Sequence[int] | range) -> None:
        """Every broker but `silent` heard just now; `silent` last heard a minute ago (as a
        controller whose timer lagged sees them): the next FenceStaleBrokers fences them."""
        now = now_ms()
        self.runtime.activated_ms = min(self.runtime.activated_ms, now - 60_000)
        for broker_id in range(self.brokers):
            heard = now - 60_000 if broker_id in silent else now
            self.runtime.sessions.touch(broker_id, now_ms=heard, metadata_offset=CAUGHT_UP)

    def lapse(self, silent: Sequence[int] | range) -> dict[str, Any]:
        self.lapse_sessions(silent)
        return self.handle("FenceStaleBrokers")

    def elect_preferred(self) -> dict[str, Any]:
        return self.handle("ElectLeaders", {"election_type": "PREFERRED", "topic_partitions": None})
