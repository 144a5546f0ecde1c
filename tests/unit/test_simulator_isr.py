"""The simulated leaders take caught-up followers back into the ISR (simulator/isr.py).

Issue 38: brokers that registered anew (a restarted simulator, a replaced broker, the whole fleet
restarted with the control plane) stayed out of every ISR for good; only a broker resumed after
a pause was taken back. The plan is pure and tested on a view replayed from the core's records;
then two simulators in turn against a fake controller: the second one's brokers are new
incarnations, and their leaders' AlterPartition makes every ISR whole again.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import httpx

from controlplane.controller.errors import Errors
from controlplane.controller.records import (
    BrokerRegistrationChangeRecord,
    ControlledShutdownChange,
    FencingChange,
    Listener,
    PartitionChangeRecord,
    PartitionRecord,
    Record,
    RegisterBrokerRecord,
    TopicRecord,
)
from simulator import BrokerSimulator, MetadataView
from simulator.isr import (
    Expansion,
    expansion_outcome,
    expansion_request,
    plan_expansions,
)
from simulator.lifecycle import new_brokers
from simulator.state import LiveBroker
from tests.unit.test_simulator_fake_controller import (
    CLUSTER,
    INTERNAL_URL,
    PUBLIC_URL,
    FakeController,
    run,
)

TOPIC_ID = "id-orders"


def registration(broker_id: int, epoch: int) -> RegisterBrokerRecord:
    return RegisterBrokerRecord(
        broker_id=broker_id,
        incarnation_id=f"incarnation-{broker_id}-{epoch}",
        broker_epoch=epoch,
        listeners=(Listener("PLAINTEXT", "127.0.0.1", 9092 + broker_id, "PLAINTEXT"),),
        rack=None,
        pod="broker",
        log_dirs=("dir-a",),
    )


def unfence(broker_id: int, epoch: int) -> BrokerRegistrationChangeRecord:
    return BrokerRegistrationChangeRecord(
        broker_id=broker_id, broker_epoch=epoch, fenced=FencingChange.UNFENCE
    )


def view_of(records: list[Record]) -> MetadataView:
    view = MetadataView(CLUSTER)
    assert (
        view.apply(
            [
                {"offset": i, "type": r.TYPE, "data": json.loads(r.to_json())}
                for i, r in enumerate(records)
            ]
        )
        == 0
    )
    return view


def restarted_cluster() -> list[Record]:
    """Three brokers, then each registered anew (epochs 10, 11, 12) and unfenced; `orders`-0
    led by 0 and `orders`-1 led by 1, each with a one-member ISR (what the old incarnations'
    fencing left)."""
    return [
        registration(0, 0),
        registration(1, 1),
        registration(2, 2),
        TopicRecord(name="orders", topic_id=TOPIC_ID),
        PartitionRecord(partition_id=0, topic_id=TOPIC_ID, replicas=(0, 1, 2), isr=(0,), leader=0),
        PartitionRecord(partition_id=1, topic_id=TOPIC_ID, replicas=(1, 2, 0), isr=(1,), leader=1),
        *(registration(b, 10 + b) for b in range(3)),
        *(unfence(b, 10 + b) for b in range(3)),
    ]


def fleet(epochs: dict[int, int]) -> dict[int, LiveBroker]:
    """The simulator's brokers 0..2, registered with `epochs` (one log dir each)."""
    brokers = new_brokers(first_id=0, brokers=3, canary=0, racks=0, log_dirs=1)
    for broker_id, epoch in epochs.items():
        brokers[broker_id].state.epoch = epoch
        brokers[broker_id].state.fenced = False
    return brokers


def one_dir(topic: str, partition: int) -> int:
    return 0


def planned(plan: dict[int, list[Expansion]]) -> dict[int, dict[int, tuple[int, ...]]]:
    return {
        leader: {e.view.partition: e.joiners for e in expansions}
        for leader, expansions in plan.items()
    }


def test_each_leader_takes_the_new_incarnations_back() -> None:
    view = view_of(restarted_cluster())
    brokers = fleet({0: 10, 1: 11, 2: 12})
    plan = plan_expansions(view, brokers, one_dir)
    assert planned(plan) == {0: {0: (1, 2)}, 1: {1: (2, 0)}}

    request = expansion_request(brokers[0], plan[0])
    partition = view.partition("orders", 0)
    assert partition is not None
    assert request == {
        "broker_id": 0,
        "broker_epoch": 10,
        "topics": [
            {
                "topic_name": "orders",
                "partitions": [
                    {
                        "partition_index": 0,
                        "leader_epoch": partition.leader_epoch,
                        "new_isr": [0, 1, 2],
                        "partition_epoch": partition.partition_epoch,
                    }
                ],
            }
        ],
    }


def test_followers_that_do_not_fetch_or_are_not_eligible_stay_out() -> None:
    records = restarted_cluster()
    # Broker 2's new registration is not unfenced yet in the metadata: not eligible (KIP-841).
    fenced_2 = [
        r
        for r in records
        if not (isinstance(r, BrokerRegistrationChangeRecord) and r.broker_id == 2)
    ]
    assert planned(plan_expansions(view_of(fenced_2), fleet({0: 10, 1: 11, 2: 12}), one_dir)) == {
        0: {0: (1,)},
        1: {1: (0,)},
    }
    view = view_of(restarted_cluster())
    # The simulator's broker 2 has an epoch the metadata does not show yet (KIP-903).
    assert planned(plan_expansions(view, fleet({0: 10, 1: 11, 2: 99}), one_dir)) == {
        0: {0: (1,)},
        1: {1: (0,)},
    }
    # A silent follower, one shutting down, one whose dir failed, one in a log-dir operation.
    for stop in ("silent", "want_shut_down", "failed_log_dirs", "dir_lock"):
        brokers = fleet({0: 10, 1: 11, 2: 12})
        if stop == "failed_log_dirs":
            brokers[2].state.failed_log_dirs = (0,)
        elif stop == "dir_lock":
            asyncio.run(_hold(brokers[2], view, brokers))
            continue
        else:
            setattr(brokers[2].state, stop, True)
        assert planned(plan_expansions(view, brokers, one_dir)) == {0: {0: (1,)}, 1: {1: (0,)}}
    # A follower the metadata shows in controlled shutdown.
    shutting = [
        *records,
        BrokerRegistrationChangeRecord(
            broker_id=2,
            broker_epoch=12,
            in_controlled_shutdown=ControlledShutdownChange.IN_CONTROLLED_SHUTDOWN,
        ),
    ]
    assert planned(plan_expansions(view_of(shutting), fleet({0: 10, 1: 11, 2: 12}), one_dir)) == {
        0: {0: (1,)},
        1: {1: (0,)},
    }


async def _hold(broker: LiveBroker, view: MetadataView, brokers: dict[int, LiveBroker]) -> None:
    async with broker.dir_lock:
        assert planned(plan_expansions(view, brokers, one_dir)) == {0: {0: (1,)}, 1: {1: (0,)}}


def test_a_leader_acts_only_as_the_incarnation_the_metadata_shows() -> None:
    view = view_of(restarted_cluster())
    # Leader 0's process still holds its old epoch (not re-registered yet): it does not act.
    assert planned(plan_expansions(view, fleet({0: 0, 1: 11, 2: 12}), one_dir)) == {
        1: {1: (2,)},
    }
    # A silent leader does not act; a leader outside the simulator is not asked.
    brokers = fleet({0: 10, 1: 11, 2: 12})
    brokers[1].state.silent = True
    assert planned(plan_expansions(view, brokers, one_dir)) == {0: {0: (2,)}}
    del brokers[0]
    assert planned(plan_expansions(view, brokers, one_dir)) == {}


def test_the_answer_says_which_partitions_took_their_joiners() -> None:
    view = view_of(restarted_cluster())
    plan = plan_expansions(view, fleet({0: 10, 1: 11, 2: 12}), one_dir)
    expansions = plan[0]
    answer = {
        "error_code": 0,
        "topics": [
            {
                "topic_name": "orders",
                "partitions": [{"partition_index": 0, "error_code": 0, "isr": [0, 1, 2]}],
            }
        ],
    }
    assert expansion_outcome(answer, expansions) == {("orders", 0): None}
    stale = {
        "error_code": 0,
        "topics": [
            {
                "topic_name": "orders",
                "partitions": [
                    {
                        "partition_index": 0,
                        "error_code": int(Errors.INVALID_UPDATE_VERSION),
                        "isr": [],
                    }
                ],
            }
        ],
    }
    assert expansion_outcome(stale, expansions) == {("orders", 0): "INVALID_UPDATE_VERSION"}
    assert expansion_outcome({"error_code": 0, "topics": []}, expansions) == {
        ("orders", 0): "no answer"
    }


class RestartingController(FakeController):
    """The fake controller, plus what a restart needs: a new incarnation's registration takes the
    broker out of every ISR it shared (as the old incarnation's fencing does), and the leader's
    AlterPartition, validated as Kafka does, puts followers back."""

    def __init__(self) -> None:
        super().__init__()
        self.alter_partitions: list[dict[str, Any]] = []

    def handle(self, request: httpx.Request) -> httpx.Response:
        if request.url.path == "/internal/v1/alter-partition":
            return self.alter_partition(json.loads(request.content))
        return super().handle(request)

    def register(self, body: dict[str, Any]) -> httpx.Response:
        image = self.image()
        broker_id = body["broker_id"]
        old = image.broker(broker_id)
        if old is not None and old.incarnation_id != body["incarnation_id"]:
            for (topic_id, index), partition in image.partitions.items():
                if broker_id in partition.isr and len(partition.isr) > 1:
                    isr = tuple(r for r in partition.isr if r != broker_id)
                    leader = isr[0] if partition.leader == broker_id else partition.leader
                    self.append(
                        PartitionChangeRecord(
                            partition_id=index, topic_id=topic_id, isr=isr, leader=leader
                        )
                    )
        return super().register(body)

    def alter_partition(self, body: dict[str, Any]) -> httpx.Response:
        self.alter_partitions.append(body)
        image = self.image()
        sender = image.broker(body["broker_id"])
        if sender is None or sender.epoch != body["broker_epoch"]:
            return httpx.Response(200, json={"error_code": int(Errors.STALE_BROKER_EPOCH)})
        topics = []
        for topic in body["topics"]:
            topic_id = image.topic_ids[topic["topic_name"]]
            answered = []
            for item in topic["partitions"]:
                index = item["partition_index"]
                partition = image.partitions[(topic_id, index)]
                eligible = all(
                    (b := image.broker(r)) is not None and not b.fenced for r in item["new_isr"]
                )
                if (
                    item["leader_epoch"] != partition.leader_epoch
                    or item["partition_epoch"] != partition.partition_epoch
                    or body["broker_id"] != partition.leader
                ):
                    code = Errors.INVALID_UPDATE_VERSION
                elif not eligible:
                    code = Errors.INELIGIBLE_REPLICA
                else:
                    code = Errors.NONE
                    self.append(
                        PartitionChangeRecord(
                            partition_id=index, topic_id=topic_id, isr=tuple(item["new_isr"])
                        )
                    )
                isr = item["new_isr"] if code == Errors.NONE else []
                answered.append({"partition_index": index, "error_code": int(code), "isr": isr})
            topics.append({"topic_name": topic["topic_name"], "partitions": answered})
        return httpx.Response(200, json={"error_code": 0, "topics": topics})


def test_a_restarted_simulator_rejoins_every_isr() -> None:
    fake = RestartingController()
    run(_restart_scenario(fake))


def _simulator(fake: FakeController) -> BrokerSimulator:
    return BrokerSimulator(
        PUBLIC_URL,
        "broker-token",
        internal_url=INTERNAL_URL,
        brokers=3,
        heartbeat_interval_ms=100,
        admin_token="admin-token",
        transport=httpx.MockTransport(fake.handle),
        isr_check_interval_s=0.1,
    )


def _isrs(fake: FakeController) -> dict[int, tuple[int, ...]]:
    return {index: p.isr for (_, index), p in sorted(fake.image().partitions.items())}


async def _restart_scenario(fake: RestartingController) -> None:
    async with _simulator(fake) as first:
        assert await first.wait_for(lambda s: s.status().unfenced == 3, 10)
        assert (await first.create_topic("orders", 4, 3))["error_code"] == 0
        old = {b.broker_id: b.epoch for b in first.brokers()}
    # Crashed (no controlled shutdown); the full ISRs need nothing.
    assert fake.alter_partitions == []
    assert all(len(isr) == 3 for isr in _isrs(fake).values())

    async with _simulator(fake) as second:
        assert await second.wait_for(lambda s: s.status().unfenced == 3, 10)
        assert all(b.epoch != old[b.broker_id] for b in second.brokers())
        assert await second.wait_for(lambda s: all(s.in_every_isr(b) for b in s.broker_ids), 10)
        assert await second.wait_in_isr(1, timeout_s=1)
        assert all(sorted(isr) == [0, 1, 2] for isr in _isrs(fake).values()), _isrs(fake)
        assert fake.alter_partitions, "the leaders sent AlterPartition"
        assert second.counters.isr_expansions >= 4
        for body in fake.alter_partitions:  # each from a leader, as its current incarnation
            assert body["broker_epoch"] == second.broker(body["broker_id"]).epoch

        # One replaced broker: shut down and started again as a new incarnation.
        assert await second.shutdown(2, timeout_s=5)
        second.resume(2)
        assert await second.wait_for(lambda s: s.broker(2).registrations == 2, 10)
        assert await second.wait_in_isr(2, timeout_s=10)
        assert all(sorted(isr) == [0, 1, 2] for isr in _isrs(fake).values()), _isrs(fake)
        assert await second.shutdown_all(timeout_s=10) == {0: True, 1: True, 2: True}
    assert fake.wrong_listener == []


def test_without_isr_expansion_the_leaders_leave_the_isrs_alone() -> None:
    fake = RestartingController()

    async def scenario() -> None:
        async with _simulator(fake) as first:
            assert await first.wait_for(lambda s: s.status().unfenced == 3, 10)
            assert (await first.create_topic("orders", 2, 3))["error_code"] == 0
        sim = _simulator(fake)
        sim.isr_expansion = False
        async with sim:
            assert await sim.wait_for(lambda s: s.status().unfenced == 3, 10)
            await asyncio.sleep(0.5)
            assert not all(sim.in_every_isr(b) for b in sim.broker_ids)
        assert fake.alter_partitions == []
        assert any(len(isr) < 3 for isr in _isrs(fake).values())

    run(scenario())
