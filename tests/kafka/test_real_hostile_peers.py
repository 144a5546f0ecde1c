"""Stock Apache Kafka brokers (the pinned jars, unmodified) under this control plane while
hostile peers work on its listeners.

- The anonymous flood: 1,000 connections on every client listener announce the largest frame
  each takes (PLAINTEXT, ANONYMOUS: 100 MiB - 4 KiB, and the finding's 27 more of 8 B to 2 KiB;
  SASL_PLAINTEXT before authentication: up to 512 KiB) and send nothing, held (opened again as
  the listener closes them) for ten session timeouts; then the same on the controller listener
  itself. No broker is ever fenced (the rows sampled throughout, no fencing record written), a
  topic created meanwhile reaches every broker's own Metadata within four heartbeat intervals,
  an idempotent acks=all producer through the brokers is acknowledged throughout, and the client
  door's request memory holds nothing of theirs. (One pool for every listener, charged with the
  sizes frames announce, had every broker fenced within seconds of such a flood.)
- The forged heartbeat: `kafka-broker-<a>` asking to shut down or fence broker b is refused
  (CLUSTER_AUTHORIZATION_FAILED) and b stays in every ISR. A principal bound to no id (an
  operator's choice, Kafka's model) may ask it: then, at every step of b's controlled shutdown,
  its fencing and its restart, the controller's view (its image and its tables) is what every
  stock broker's own Metadata and `kafka-dump-log` of its own replica say (devtools.broker_views).

One control plane in this process and three brokers for the module (tests.kafka.harness), a 4 s
session and 500 ms heartbeats as tests/kafka/test_real_cluster.py has them. The flood runs in a
process of its own (devtools.flood), each listener's connections from a loopback address of
their own so the per-address bound is not what holds it back.
"""

from __future__ import annotations

import dataclasses
import time
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from kio.schema.broker_heartbeat.v1 import request as heartbeat_v1
from kio.schema.errors import ErrorCode

from devtools import broker_views
from devtools.campaign_report import longest_stall
from devtools.flood import MAX_FRAME, SMALL_SIZES, UNAUTHENTICATED_SIZES, Flood, Target
from devtools.kafka_clients import Producing, broker_metadata
from devtools.kafka_view import KafkaView, view_of_image, view_of_tables
from stock_kafka.broker import KafkaBroker
from tests.conftest import Api, listener_client_class
from tests.kafka import harness
from tests.kafka.conftest import need_kafka_jars
from tests.kafka.harness import (
    ControlPlane,
    broker_row,
    broker_under,
    control_plane,
    module_database,
    tables_follow_log,
)
from tests.wire.rawclient import RawClient
from tests.wire.test_server import authenticate

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]

NODE_IDS = (1, 2, 3)
SESSION_TIMEOUT_MS = 4000
HEARTBEAT_MS = 500
TOPIC = "hostile-orders"
PARTITIONS = 6
FLOOD_CONNECTIONS = 1000
# And, as the finding had them, 27 PLAINTEXT connections more announcing 8 B to 2 KiB a moment
# later: in a pool charged with announced sizes they fill the 4 KiB the largest frame leaves,
# and then a broker's heartbeat waits.
FINDINGS_SMALL = 27
# Ten sessions: the SASL connections meet their authentication deadline (5 s here) again and
# again, the PLAINTEXT ones their frame deadline (30 s) once, and are opened again each time.
FLOOD_S = 10 * SESSION_TIMEOUT_MS / 1000
# A topic created during the flood is in every broker's own Metadata within four heartbeat
# intervals: the brokers' Raft Fetch is parked at the controller and answered at the commit.
METADATA_BOUND_S = 4 * HEARTBEAT_MS / 1000
BROKER_PROPERTIES = {
    "broker.heartbeat.interval.ms": str(HEARTBEAT_MS),
    "replica.lag.time.max.ms": "5000",
    "offsets.topic.replication.factor": "3",
    "transaction.state.log.replication.factor": "3",
    "transaction.state.log.min.isr": "2",
    "min.insync.replicas": "2",
}


@dataclasses.dataclass
class Cluster:
    plane: ControlPlane
    brokers: dict[int, KafkaBroker]

    @property
    def bootstrap(self) -> str:
        return ",".join(b.bootstrap for b in self.brokers.values() if b.running)

    def running(self) -> list[KafkaBroker]:
        return [b for b in self.brokers.values() if b.running]

    def wait(self, predicate: Any, timeout: float, what: str) -> Any:
        return harness.wait(
            list(self.brokers.values()), predicate, timeout, what, running=self.running()
        )


@pytest.fixture(autouse=True)
def _fresh_controller_state() -> Iterator[None]:
    """One controller for the module: reset at its start and end only (tests.kafka.harness)."""
    yield


@pytest.fixture(autouse=True)
def _django_db_marker() -> None:
    """The brokers and their registrations live through the module (no flush per test)."""


@pytest.fixture(scope="module")
def module_db(django_db_setup: None, django_db_blocker: Any) -> Iterator[None]:
    with module_database(
        django_db_blocker,
        CP_BROKER_SESSION_TIMEOUT_MS=SESSION_TIMEOUT_MS,
        CP_LEADER_IMBALANCE_CHECK_INTERVAL_SECONDS=3,
    ):
        yield


@pytest.fixture(scope="module")
def cluster(module_db: None, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    need_kafka_jars()
    principals = {node: f"kafka-broker-{node}" for node in NODE_IDS}
    with control_plane(list(principals.values())) as plane:
        brokers = {
            node: broker_under(
                plane,
                node,
                principals[node],
                tmp_path_factory.mktemp(f"kafka-broker-{node}"),
                BROKER_PROPERTIES,
            )
            for node in NODE_IDS
        }
        try:
            for broker in brokers.values():
                broker.start()
            running = Cluster(plane, brokers)
            running.wait(lambda: all(unfenced(n) for n in NODE_IDS), 180, "three unfenced")
            create_topic(plane, TOPIC)
            running.wait(
                lambda: all(
                    len(broker_metadata(b, TOPIC)) == PARTITIONS for b in running.running()
                ),
                60,
                "the topic on every broker",
            )
            yield running
        finally:
            for broker in brokers.values():
                broker.stop(timeout=20)


def create_topic(plane: ControlPlane, name: str) -> None:
    status, body = Api(listener_client_class()()).post(
        "/api/v1/create-topics",
        {
            "topics": [
                {
                    "name": name,
                    "num_partitions": PARTITIONS,
                    "replication_factor": 3,
                    "configs": [{"name": "min.insync.replicas", "value": "2"}],
                }
            ]
        },
        token=plane.tokens["admin"],
    )
    assert status == 200 and body["topics"][0]["error_code"] == 0, body


def unfenced(node_id: int) -> bool:
    row = broker_row(node_id)
    return row is not None and not row.fenced and row.state == "UNFENCED"


def partitions(topic: str = TOPIC) -> dict[int, Any]:
    from replicas.models import Partition

    tables_follow_log()
    return {p.partition_index: p for p in Partition.objects.filter(topic__name=topic)}


def log_end() -> int:
    from controlplane.models import MetadataRecord

    return int(MetadataRecord.objects.order_by("-offset").values_list("offset", flat=True)[0])


def fencings_since(offset: int) -> list[tuple[int, str, dict[str, Any]]]:
    """Every record after `offset` that fenced a broker."""
    from controlplane.models import MetadataRecord

    found = MetadataRecord.objects.filter(
        offset__gt=offset,
        record_type__in=("BrokerRegistrationChangeRecord", "FenceBrokerRecord"),
    ).values_list("offset", "record_type", "data")
    return [
        (offset, kind, data)
        for offset, kind, data in found
        if kind == "FenceBrokerRecord" or data.get("fenced") == 1
    ]


def rows_not_unfenced() -> list[tuple[int, str]]:
    """The brokers whose row says anything but UNFENCED (a sample of the flood)."""
    from brokers.models import Broker

    return [
        (b.broker_id, b.state)
        for b in Broker.objects.filter(broker_id__in=NODE_IDS)
        if b.state != "UNFENCED"
    ]


def controller_view() -> KafkaView:
    """The controller's view as its tables project it, once they say what its image says (the
    REST API, the console and the controller itself must agree; a commit lands in the image
    a moment before its rows)."""
    from django.db import connection

    from controlplane.runtime.controller import get_runtime

    def query(sql: str, *params: Any) -> list[tuple[Any, ...]]:
        with connection.cursor() as cursor:
            cursor.execute(sql, params)
            return list(cursor.fetchall())

    deadline = time.monotonic() + 10
    while True:
        tables = view_of_tables(query)
        image = get_runtime().image
        apart = [] if image is None else view_of_image(image).differences(tables)
        if not apart:
            return tables
        assert time.monotonic() < deadline, ("the image against its tables", apart)
        time.sleep(0.1)


def every_broker_agrees(cluster: Cluster, step: str, timeout_s: float = 30) -> dict[str, Any]:
    found = broker_views.agreement(controller_view, cluster.running(), timeout_s=timeout_s)
    assert found["agree"], (step, found)
    return found


# --- the anonymous flood --------------------------------------------------------------------


@dataclasses.dataclass
class FloodWatch:
    """What the flood window showed: the rows sampled, the topic's arrival, the producer."""

    samples: int = 0
    not_unfenced: list[tuple[float, list[tuple[int, str]]]] = dataclasses.field(
        default_factory=list
    )
    topic_in_every_metadata_after_s: float | None = None
    client_memory_max_bytes: int = 0  # the client door's request memory, at its highest


def watch_the_flood(cluster: Cluster, seconds: float, topic: str) -> FloodWatch:
    """For `seconds`: sample the brokers' rows every 100 ms; after a session, create `topic`
    and time its arrival in every broker's own Metadata."""
    watch = FloodWatch()
    began = time.monotonic()
    created_at: float | None = None
    while time.monotonic() - began < seconds:
        watch.samples += 1
        memory = cluster.plane.listener.server.doors["client"].memory.used_bytes
        watch.client_memory_max_bytes = max(watch.client_memory_max_bytes, memory)
        odd = rows_not_unfenced()
        if odd:
            watch.not_unfenced.append((round(time.monotonic() - began, 2), odd))
        if created_at is None and time.monotonic() - began >= SESSION_TIMEOUT_MS / 1000:
            create_topic(cluster.plane, topic)
            created_at = time.monotonic()
        elif (
            created_at is not None
            and watch.topic_in_every_metadata_after_s is None
            and all(topic_known(b, topic) for b in cluster.running())
        ):
            watch.topic_in_every_metadata_after_s = round(time.monotonic() - created_at, 2)
        time.sleep(0.1)
    return watch


def topic_known(broker: KafkaBroker, topic: str) -> bool:
    try:
        return len(broker_metadata(broker, topic, timeout_s=2)) == PARTITIONS
    except (OSError, RuntimeError):
        return False


def flooded(
    cluster: Cluster, targets: list[Target], topic: str, seconds: float
) -> tuple[FloodWatch, list[dict[str, Any]], Producing, float, float]:
    with Producing(cluster.bootstrap, f"flood-{uuid.uuid4().hex[:6]}", TOPIC) as producing:
        cluster.wait(lambda: producing.acknowledged_count() >= 30, 60, "writes before the flood")
        with Flood(targets) as flood:
            began = time.monotonic()
            watch = watch_the_flood(cluster, seconds, topic)
            ended = time.monotonic()
            report = flood.stop()
    return watch, report, producing, began, ended


def assert_held_and_harmless(
    watch: FloodWatch,
    report: list[dict[str, Any]],
    producing: Producing,
    began: float,
    ended: float,
    offset: int,
    seconds: float,
) -> None:
    for target in report:  # the whole count held at once, opened again as it was closed
        assert target["held_max"] == target["count"], report
    assert watch.samples >= seconds, watch.samples  # a sample a second at the least
    assert watch.not_unfenced == [], watch.not_unfenced[:5]
    assert fencings_since(offset) == []
    assert all(unfenced(n) for n in NODE_IDS)
    arrived = watch.topic_in_every_metadata_after_s
    assert arrived is not None and arrived <= METADATA_BOUND_S, arrived
    assert producing.acknowledged_between(began, ended) > 0
    stall = longest_stall(producing.ack_times(), began, ended)
    assert stall < SESSION_TIMEOUT_MS / 1000, stall
    assert producing.errors == [], producing.errors[:5]


def test_an_anonymous_flood_on_every_client_listener_fences_no_broker(cluster: Cluster) -> None:
    listener = cluster.plane.listener
    offset = log_end()
    targets = [
        Target(listener.host, listener.port, (MAX_FRAME,), FLOOD_CONNECTIONS),
        Target(listener.host, listener.sasl_port, UNAUTHENTICATED_SIZES, FLOOD_CONNECTIONS),
        Target(listener.host, listener.port, SMALL_SIZES, FINDINGS_SMALL, delay_s=1),
    ]
    watch, report, producing, began, ended = flooded(cluster, targets, "flood-clients", FLOOD_S)
    print("flood of the client listeners:", report, dataclasses.asdict(watch))
    assert_held_and_harmless(watch, report, producing, began, ended, offset, FLOOD_S)
    sasl = report[1]
    assert sasl["closed_by_listener"] >= FLOOD_CONNECTIONS  # each met its deadline, re-opened
    # No byte of theirs arrived past the sizes: the client door's request memory held nothing
    # (a pool charged with the announced sizes was full with the first of them).
    assert watch.client_memory_max_bytes == 0


def test_an_unauthenticated_flood_on_the_controller_listener_fences_no_broker(
    cluster: Cluster,
) -> None:
    listener = cluster.plane.listener
    offset = log_end()
    targets = [
        Target(listener.host, listener.controller_port, UNAUTHENTICATED_SIZES, FLOOD_CONNECTIONS)
    ]
    seconds = FLOOD_S
    watch, report, producing, began, ended = flooded(cluster, targets, "flood-controller", seconds)
    print("flood of the controller listener:", report, dataclasses.asdict(watch))
    assert_held_and_harmless(watch, report, producing, began, ended, offset, seconds)
    assert report[0]["closed_by_listener"] >= FLOOD_CONNECTIONS


# --- the forged heartbeat -------------------------------------------------------------------


def forged_heartbeat(broker_id: int, epoch: int, **wants: bool) -> Any:
    return heartbeat_v1.BrokerHeartbeatRequest(
        broker_id=broker_id,
        broker_epoch=epoch,
        current_metadata_offset=epoch,
        want_fence=wants.get("want_fence", False),
        want_shut_down=wants.get("want_shut_down", False),
        offline_log_dirs=(),
    )


def heartbeat_as(cluster: Cluster, principal: str, token: str, request: Any) -> Any:
    listener = cluster.plane.listener
    with RawClient(listener.host, listener.controller_port) as client:
        assert authenticate(client, principal, token) == ErrorCode.none
        return client.request(request)


def busiest(cluster: Cluster) -> KafkaBroker:
    led = [p.leader for p in partitions().values()]
    return cluster.brokers[max(NODE_IDS, key=led.count)]


def isr_whole() -> bool:
    found = partitions()
    return len(found) == PARTITIONS and all(set(p.isr) == set(p.replicas) for p in found.values())


def test_a_broker_principal_cannot_shut_down_or_fence_another_broker(cluster: Cluster) -> None:
    cluster.wait(isr_whole, 120, "every ISR whole")
    victim = busiest(cluster)
    hostile = next(b for b in cluster.running() if b is not victim)
    name = f"kafka-broker-{hostile.node_id}"
    epoch = broker_row(victim.node_id).epoch
    offset = log_end()
    with Producing(cluster.bootstrap, f"forged-{uuid.uuid4().hex[:6]}", TOPIC) as producing:
        cluster.wait(lambda: producing.acknowledged_count() >= 30, 60, "writes before")
        for wants in ({"want_shut_down": True}, {"want_fence": True}):
            request = forged_heartbeat(victim.node_id, epoch, **wants)
            answer = heartbeat_as(cluster, name, cluster.plane.tokens[name], request)
            assert answer.error_code == ErrorCode.cluster_authorization_failed, (wants, answer)
        began = time.monotonic()
        while time.monotonic() - began < 2 * SESSION_TIMEOUT_MS / 1000:  # two sessions, sampled
            assert unfenced(victim.node_id) and isr_whole(), (
                broker_row(victim.node_id),
                partitions(),
            )
            time.sleep(0.2)
        before = producing.acknowledged_count()
        cluster.wait(lambda: producing.acknowledged_count() >= before + 30, 60, "writes after")
    assert producing.errors == [], producing.errors[:5]
    assert fencings_since(offset) == []
    from controlplane.models import MetadataRecord

    changes = MetadataRecord.objects.filter(
        offset__gt=offset, record_type="BrokerRegistrationChangeRecord", broker_id=victim.node_id
    )
    assert not changes.exists(), list(changes.values_list("data", flat=True))
    every_broker_agrees(cluster, "after the refused forgeries")


def test_an_operators_shutdown_of_a_broker_reads_the_same_on_every_broker(cluster: Cluster) -> None:
    """Kafka's model for a principal bound to no id: it may ask any broker's controlled
    shutdown. The controller and every stock broker must then agree at every step: Kafka's
    records keep the controlled-shutdown flag through the fence that follows it, until the
    broker registers again."""
    from controlplane.principals import principal_create

    cluster.wait(isr_whole, 120, "every ISR whole")
    victim = busiest(cluster)
    led = sum(1 for p in partitions().values() if p.leader == victim.node_id)
    assert led >= 1
    incarnation = broker_row(victim.node_id).incarnation_id
    operator = principal_create(name="operator-fleet", broker=True)  # CLUSTER_ACTION, no id
    every_broker_agrees(cluster, "before")
    steps: dict[str, dict[str, Any]] = {}
    with Producing(cluster.bootstrap, f"operator-{uuid.uuid4().hex[:6]}", TOPIC) as producing:
        cluster.wait(lambda: producing.acknowledged_count() >= 30, 60, "writes before")
        request = forged_heartbeat(
            victim.node_id, broker_row(victim.node_id).epoch, want_shut_down=True
        )
        answer = heartbeat_as(cluster, "operator-fleet", operator, request)
        assert answer.error_code == ErrorCode.none, answer
        asked = log_end()
        assert broker_row(victim.node_id).in_controlled_shutdown
        steps["controlled shutdown asked"] = every_broker_agrees(cluster, "asked")
        # Its leadership moves, then (its own heartbeats going on, wanting nothing) it is fenced
        # and told to shut down, which a running stock broker ignores. Kafka's records keep the
        # flag through the fence: the views must agree on it, and on what follows.
        cluster.wait(
            lambda: any(
                data.get("broker_id") == victim.node_id for _, _, data in fencings_since(asked)
            ),
            3 * SESSION_TIMEOUT_MS / 1000,
            "a fencing record",
        )
        steps["fenced in its controlled shutdown"] = every_broker_agrees(cluster, "fenced")
        assert all(p.leader != victim.node_id for p in partitions().values())
        assert all(victim.node_id not in p.isr for p in partitions().values())
        row = broker_row(victim.node_id)
        assert row.fenced and row.in_controlled_shutdown, row.state
        time.sleep(2 * SESSION_TIMEOUT_MS / 1000)  # its heartbeats go on: nothing changes
        steps["two sessions of its heartbeats later"] = every_broker_agrees(cluster, "later")
        row = broker_row(victim.node_id)
        assert row.fenced and row.in_controlled_shutdown, row.state
        before = producing.acknowledged_count()  # two ISR members meet min.insync.replicas
        cluster.wait(lambda: producing.acknowledged_count() >= before + 30, 60, "writes after")
        victim.stop(timeout=60)  # its own controlled shutdown, answered at once
        victim.start()  # a new registration: the flag is gone
        cluster.wait(lambda: unfenced(victim.node_id), 120, "registered again, unfenced")
        assert broker_row(victim.node_id).incarnation_id != incarnation
        cluster.wait(isr_whole, 120, "back in every ISR")
        steps["registered again"] = every_broker_agrees(cluster, "registered again")
    assert producing.errors == [], producing.errors[:5]
    print(
        {
            step: {k: v for k, v in found.items() if k != "differences"}
            for step, found in steps.items()
        }
    )
