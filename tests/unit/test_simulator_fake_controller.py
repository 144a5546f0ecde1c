"""The broker simulator end to end against a fake controller in the same process.

The fake answers the internal API from a metadata log of the core's records (httpx's
MockTransport, no server): registrations append RegisterBrokerRecord, heartbeats unfence a
caught-up broker, CreateTopics and AlterReplicaState append topic and partition records. The
simulator must register, get unfenced, follow the log into its view, report a failed log dir
and forward an Envelope, retrying NOT_CONTROLLER with one request id. As the real control plane,
the fake serves the brokers' API on its internal listener only and CreateTopics on the public one.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable
from typing import Any, TypeVar

import httpx

from controlplane.controller.errors import Errors
from controlplane.controller.image import MetadataImage, replay_log
from controlplane.controller.records import (
    BrokerRegistrationChangeRecord,
    FencingChange,
    Listener,
    PartitionChangeRecord,
    PartitionRecord,
    Record,
    RegisterBrokerRecord,
    TopicRecord,
)
from simulator import BrokerSimulator, SimulatorStatus

CLUSTER = "cluster-fake"
PUBLIC_URL = "http://controller.test"
INTERNAL_URL = "http://controller.test:9093"
T = TypeVar("T")


class FakeController:
    """Just enough of the internal API for the simulator, over a log of the core's records."""

    def __init__(self) -> None:
        self.log: list[Record] = []
        self.envelope_request_ids: list[str] = []
        self.wrong_listener: list[str] = []

    def image(self) -> MetadataImage:
        return replay_log(CLUSTER, self.log)

    def append(self, record: Record) -> int:
        self.log.append(record)
        return len(self.log) - 1

    def handle(self, request: httpx.Request) -> httpx.Response:
        path = request.url.path
        on_internal = str(request.url).startswith(INTERNAL_URL + "/")
        if path.startswith("/internal/") != on_internal:
            self.wrong_listener.append(str(request.url))
            return httpx.Response(
                404,
                json={"error_code": 42, "error": "INVALID_REQUEST", "error_message": path},
            )
        body = json.loads(request.content) if request.content else {}
        routes = {
            "/internal/v1/metadata": lambda: self.metadata(request),
            "/internal/v1/broker-registration": lambda: self.register(body),
            "/internal/v1/broker-heartbeat": lambda: self.heartbeat(body),
            "/api/v1/create-topics": lambda: self.create_topics(body),
            "/internal/v1/alter-replica-state": lambda: self.alter_replica_state(body),
            "/internal/v1/envelope": lambda: self.envelope(request, body),
        }
        return routes[path]()

    def metadata(self, request: httpx.Request) -> httpx.Response:
        after = int(request.url.params["after_offset"])
        limit = int(request.url.params["max_records"])
        records = [
            {"offset": offset, "type": record.TYPE, "data": record.to_data()}
            for offset, record in enumerate(self.log)
            if offset > after
        ][:limit]
        head = {"cluster_id": CLUSTER, "controller_id": 0, "controller_epoch": 1}
        return httpx.Response(
            200, json={**head, "last_offset": len(self.log) - 1, "records": records}
        )

    def register(self, body: dict[str, Any]) -> httpx.Response:
        offset = len(self.log)
        self.append(
            RegisterBrokerRecord(
                broker_id=body["broker_id"],
                incarnation_id=body["incarnation_id"],
                broker_epoch=offset,
                listeners=tuple(Listener(**item) for item in body["listeners"]),
                rack=body["rack"],
                pod=body["pod"],
                log_dirs=tuple(body["log_dirs"]),
            )
        )
        return httpx.Response(200, json={"error_code": 0, "broker_epoch": offset})

    def heartbeat(self, body: dict[str, Any]) -> httpx.Response:
        broker = self.image().broker(body["broker_id"])
        if broker is None or broker.epoch != body["broker_epoch"]:
            return httpx.Response(200, json={"error_code": int(Errors.STALE_BROKER_EPOCH)})
        if body["want_shut_down"]:
            return httpx.Response(
                200, json={"error_code": 0, "is_fenced": True, "should_shut_down": True}
            )
        fenced = broker.fenced
        if fenced and not body["want_fence"] and body["current_metadata_offset"] >= broker.epoch:
            self.append(
                BrokerRegistrationChangeRecord(
                    broker_id=broker.broker_id,
                    broker_epoch=broker.epoch,
                    fenced=FencingChange.UNFENCE,
                )
            )
            fenced = False
        return httpx.Response(
            200, json={"error_code": 0, "is_fenced": fenced, "should_shut_down": False}
        )

    def create_topics(self, body: dict[str, Any]) -> httpx.Response:
        topic = body["topics"][0]
        brokers = sorted(self.image().brokers)
        topic_id = f"id-{topic['name']}"
        self.append(TopicRecord(name=topic["name"], topic_id=topic_id))
        factor = topic["replication_factor"]
        for index in range(topic["num_partitions"]):
            replicas = tuple(brokers[(index + i) % len(brokers)] for i in range(factor))
            self.append(
                PartitionRecord(
                    partition_id=index,
                    topic_id=topic_id,
                    replicas=replicas,
                    isr=replicas,
                    leader=replicas[0],
                )
            )
        answer = {"name": topic["name"], "error_code": 0, "topic_id": topic_id}
        return httpx.Response(200, json={"topics": [answer]})

    def alter_replica_state(self, body: dict[str, Any]) -> httpx.Response:
        image = self.image()
        broker_id = body["broker_id"]
        answered = []
        for topic in body["topics"]:
            topic_id = image.topic_ids[topic["name"]]
            for index in topic["partitions"]:
                partition = image.partitions[(topic_id, index)]
                self.append(
                    PartitionChangeRecord(
                        partition_id=index,
                        topic_id=topic_id,
                        isr=tuple(r for r in partition.isr if r != broker_id),
                        offline_replicas=(*partition.offline_replicas, broker_id),
                    )
                )
            answered.append(
                {
                    "name": topic["name"],
                    "partitions": [
                        {"partition_index": index, "error_code": 0} for index in topic["partitions"]
                    ],
                }
            )
        return httpx.Response(200, json={"error_code": 0, "topics": answered})

    def envelope(self, request: httpx.Request, body: dict[str, Any]) -> httpx.Response:
        self.envelope_request_ids.append(request.headers["X-Request-ID"])
        if len(self.envelope_request_ids) == 1:  # the first attempt finds no controller
            return httpx.Response(
                503, json={"error": "NOT_CONTROLLER"}, headers={"Retry-After": "0"}
            )
        resources = body["request_data"]["resources"]
        return httpx.Response(
            200,
            json={
                "error_code": 0,
                "response_header": {"correlation_id": body["request_header"]["correlation_id"]},
                "response_status": 200,
                "response_data": {
                    "responses": [
                        {"resource_name": r["resource_name"], "error_code": 0} for r in resources
                    ]
                },
            },
        )


def run(coroutine: Awaitable[T]) -> T:
    async def bounded() -> T:
        return await asyncio.wait_for(coroutine, timeout=30)

    return asyncio.run(bounded())


def test_simulated_brokers_follow_a_fake_controller() -> None:
    fake = FakeController()
    run(_scenario(fake))


async def _scenario(fake: FakeController) -> None:
    sim = BrokerSimulator(
        PUBLIC_URL,
        "broker-token",
        internal_url=INTERNAL_URL,
        brokers=3,
        heartbeat_interval_ms=100,
        admin_token="admin-token",
        transport=httpx.MockTransport(fake.handle),
    )
    async with sim:
        assert await sim.wait_for(lambda s: s.status().unfenced == 3, 10)
        assert sim.cluster_id == CLUSTER

        created = await sim.create_topic("orders", 4, 3)
        assert created["error_code"] == 0
        assert [p.name for p in sim.partitions("orders")] == [f"orders-{i}" for i in range(4)]
        assert sim.topics() == {"orders": "id-orders"}

        dir_index = sim.log_dir_index("orders", 0)
        in_dir = [(p.topic, p.partition) for p in sim.replicas_in_log_dir(0, dir_index)]
        failed = await sim.fail_log_dir(0, dir_index, timeout_s=10)
        assert failed.ok, failed.error
        assert failed.done == in_dir
        assert all(0 in p.offline_replicas for p in sim.replicas_in_log_dir(0, dir_index))
        assert sim.broker(0).failed_log_dirs == (dir_index,)

        body = {"resources": [{"resource_type": "TOPIC", "resource_name": "orders"}]}
        forwarded = await sim.forward_admin_request(1, "IncrementalAlterConfigs", body)
        assert forwarded.ok
        assert forwarded.attempts == 2 and forwarded.retried == ["HTTP 503 NOT_CONTROLLER"]
        assert len(set(fake.envelope_request_ids)) == 1  # one request id for every attempt
        assert forwarded.envelope is not None
        assert forwarded.envelope["request_principal"] == {"type": "User", "name": "alice"}

        assert await sim.sync_metadata()
        status: SimulatorStatus = sim.status()
        assert status.metadata_offset == len(fake.log) - 1
        assert (status.topics, status.partitions) == (1, 4)
        assert status.offline_replicas == len(in_dir)
        assert status.failed_log_dirs == 1
        assert "metadata replay" not in sim.counters.errors_by_kind
        # The follower's image is the one the fake's log replays to.
        assert sim._follower.view.image.as_comparable() == fake.image().as_comparable()

        assert await sim.shutdown_all(timeout_s=10) == {0: True, 1: True, 2: True}
    assert fake.wrong_listener == []  # every call went to the listener that serves it


def test_the_public_url_given_as_the_internal_one_is_named() -> None:
    """Pointed at a listener that does not serve the brokers' API, the simulator says so."""
    from simulator import SimulatorError

    fake = FakeController()

    async def scenario() -> None:
        sim = BrokerSimulator(
            PUBLIC_URL,
            "broker-token",
            internal_url=PUBLIC_URL,
            connect_timeout_s=1,
            transport=httpx.MockTransport(fake.handle),
        )
        try:
            await sim.start()
        except SimulatorError as error:
            assert "does not serve the brokers' API" in str(error), error
            assert PUBLIC_URL in str(error)
        else:
            await sim.close()
            raise AssertionError("started against a listener without the internal API")

    run(scenario())
