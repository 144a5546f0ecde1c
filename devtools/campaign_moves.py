"""The fault campaign's kill -9 of a stock Kafka broker in the middle of partition moves
(devtools/campaign.py, with devtools/campaign_kafka.py's three real brokers).

A topic of its own (`MOVING_TOPIC`: RF 2 over the three real brokers, min.insync.replicas 1)
gets ~1.5 MiB of data per partition (acks=all, every key kept), then every partition moves one
replica to the broker that did not hold it, throttled as Kafka's reassignment tool throttles
(the moving replicas per topic, 2 kB/s on each broker): the moves stay in progress. The broker
that most moves are adding is killed (kill -9). While it is down: the moves adding it stall
(visibly: still listed in progress), the others complete or wait, every partition of both the
campaign's topics keeps an ISR member and a live leader (sampled at every look). It is then
restarted, the throttles removed: every move completes where it was going, and every
acknowledged message of the moving topic is read back, once.
"""

from __future__ import annotations

import time
from typing import Any, Protocol

from devtools.stack import Http, Stack
from stock_kafka.broker import KafkaBroker

MOVING_TOPIC = "campaign-moving"
MOVING_PARTITIONS = 6
MESSAGES_PER_PARTITION = 96  # of 16 kB: 1.5 MiB, far more than a throttled follower copies
THROTTLE_BYTES_PER_S = 2000
TOPIC_THROTTLES = (
    "leader.replication.throttled.replicas",
    "follower.replication.throttled.replicas",
)
BROKER_THROTTLES = ("leader.replication.throttled.rate", "follower.replication.throttled.rate")


class RealBrokers(Protocol):
    """What this fault needs of devtools.campaign_kafka.RealBrokers."""

    stack: Stack
    brokers: list[KafkaBroker]

    def web(self) -> Http: ...

    def rows(self) -> dict[int, dict[str, Any]]: ...

    def create_topic(
        self, name: str, assignment: list[list[int]], configs: dict[str, str]
    ) -> None: ...

    def wait(self, predicate: Any, timeout: float, what: str) -> Any: ...

    @property
    def bootstrap(self) -> str: ...


def _since(moment: float) -> float:
    return round(time.monotonic() - moment, 2)


def _partitions(real: RealBrokers, topic: str) -> dict[int, dict[str, Any]]:
    found = real.stack.sql(
        "SELECT p.partition_index, p.leader, p.replicas, p.isr, p.adding_replicas,"
        " p.reassigning FROM cp_partition p JOIN cp_topic t ON t.topic_id = p.topic_id"
        " WHERE t.name = %s",
        topic,
    )
    keys = ("leader", "replicas", "isr", "adding", "reassigning")
    return {int(row[0]): dict(zip(keys, row[1:], strict=True)) for row in found}


def _rest(real: RealBrokers, path: str, body: dict[str, Any]) -> dict[str, Any]:
    status, answer = real.web().post(path, body, real.stack.tokens["admin"])
    assert status == 200, (path, status, answer)
    return dict(answer)


def _configs(real: RealBrokers, resources: list[dict[str, Any]]) -> None:
    answer = _rest(real, "/api/v1/incremental-alter-configs", {"resources": resources})
    assert all(r["error_code"] == 0 for r in answer["responses"]), answer


def _fill(real: RealBrokers) -> set[str]:
    """Data in every partition (small batches: a throttled fetch copies little each time);
    the keys acknowledged."""
    from confluent_kafka import Producer

    acknowledged: set[str] = set()
    producer = Producer(
        {
            "bootstrap.servers": real.bootstrap,
            "acks": "all",
            "enable.idempotence": True,
            "batch.size": 16384,
            "linger.ms": 5,
        }
    )

    def delivered(error: Any, message: Any) -> None:
        if error is None:
            acknowledged.add(bytes(message.key()).decode())

    for partition in range(MOVING_PARTITIONS):
        for number in range(MESSAGES_PER_PARTITION):
            key = f"moving-{partition}-{number:04d}"
            producer.produce(
                MOVING_TOPIC,
                key=key.encode(),
                value=b"m" * 16000,
                partition=partition,
                on_delivery=delivered,
            )
            producer.poll(0)
    assert producer.flush(120) == 0
    return acknowledged


def _read_back(real: RealBrokers, expected: set[str], timeout: float = 120) -> dict[str, int]:
    from confluent_kafka import Consumer

    consumer = Consumer(
        {
            "bootstrap.servers": real.bootstrap,
            "group.id": f"campaign-moving-{time.monotonic_ns()}",
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
        }
    )
    seen: dict[str, int] = {}
    deadline = time.monotonic() + timeout
    try:
        consumer.subscribe([MOVING_TOPIC])
        while time.monotonic() < deadline and not expected <= set(seen):
            for message in consumer.consume(num_messages=500, timeout=1.0):
                if message.error() is None:
                    key = bytes(message.key() or b"").decode()
                    seen[key] = seen.get(key, 0) + 1
    finally:
        consumer.close()
    return seen


def kill_during_moves(real: RealBrokers, other_topic: str) -> dict[str, Any]:
    ids = [b.node_id for b in real.brokers]
    assignment = [[ids[i % 3], ids[(i + 1) % 3]] for i in range(MOVING_PARTITIONS)]
    real.create_topic(MOVING_TOPIC, assignment, {"min.insync.replicas": "1"})
    acknowledged = _fill(real)
    targets = {i: [ids[(i + 2) % 3], replicas[1]] for i, replicas in enumerate(assignment)}
    leaders = {f"{i}:{b}" for i, replicas in enumerate(assignment) for b in replicas}
    followers = {f"{i}:{targets[i][0]}" for i in targets}
    _configs(
        real,
        [
            {
                "resource_type": "TOPIC",
                "resource_name": MOVING_TOPIC,
                "configs": [
                    {"name": k, "config_operation": "SET", "value": ",".join(sorted(v))}
                    for k, v in zip(TOPIC_THROTTLES, (leaders, followers), strict=True)
                ],
            },
            *(
                {
                    "resource_type": "BROKER",
                    "resource_name": str(b),
                    "configs": [
                        {"name": k, "config_operation": "SET", "value": str(THROTTLE_BYTES_PER_S)}
                        for k in BROKER_THROTTLES
                    ],
                }
                for b in ids
            ),
        ],
    )
    moved = _rest(
        real,
        "/api/v1/alter-partition-reassignments",
        {
            "topics": [
                {
                    "name": MOVING_TOPIC,
                    "partitions": [
                        {"partition_index": i, "replicas": r} for i, r in targets.items()
                    ],
                }
            ]
        },
    )
    assert all(p["error_code"] == 0 for t in moved["responses"] for p in t["partitions"]), moved
    in_progress = {i for i, p in _partitions(real, MOVING_TOPIC).items() if p["reassigning"]}
    adding = _partitions(real, MOVING_TOPIC)
    victim = max(
        real.brokers, key=lambda b: sum(1 for i in in_progress if b.node_id in adding[i]["adding"])
    )
    adding_victim = {i for i in in_progress if victim.node_id in adding[i]["adding"]}
    live = {b.node_id for b in real.brokers if b is not victim}
    worst = {"empty_isr": 0, "dead_leader_after_fencing": 0, "samples": 0}

    def sample() -> None:
        fenced = real.rows()[victim.node_id]["fenced"]
        for topic in (MOVING_TOPIC, other_topic):
            for p in _partitions(real, topic).values():
                worst["samples"] += 1
                worst["empty_isr"] += int(not p["isr"])
                worst["dead_leader_after_fencing"] += int(fenced and p["leader"] not in live)

    began = time.monotonic()
    victim.kill()

    def fenced_and_sampled() -> bool:
        sample()
        return bool(real.rows()[victim.node_id]["fenced"])

    real.wait(fenced_and_sampled, 60, "the killed broker fenced")
    fenced_s = _since(began)
    for _ in range(10):  # a while down: what stalls stays stalled
        sample()
        time.sleep(0.5)
    down = _partitions(real, MOVING_TOPIC)
    stalled = {i for i in adding_victim if down[i]["reassigning"]}
    completed_while_down = {i for i in in_progress if not down[i]["reassigning"]}
    victim.start(format_storage=False)
    real.wait(lambda: not real.rows()[victim.node_id]["fenced"], 180, "the killed broker back")
    _configs(
        real,
        [
            {
                "resource_type": "TOPIC",
                "resource_name": MOVING_TOPIC,
                "configs": [{"name": k, "config_operation": "DELETE"} for k in TOPIC_THROTTLES],
            },
            *(
                {
                    "resource_type": "BROKER",
                    "resource_name": str(b),
                    "configs": [
                        {"name": k, "config_operation": "DELETE"} for k in BROKER_THROTTLES
                    ],
                }
                for b in ids
            ),
        ],
    )
    restarted = time.monotonic()

    def all_where_they_were_going() -> bool:
        now = _partitions(real, MOVING_TOPIC)
        return all(not p["reassigning"] and p["replicas"] == targets[i] for i, p in now.items())

    real.wait(all_where_they_were_going, 240, "every move complete")
    seen = _read_back(real, acknowledged)
    return {
        "real_broker": victim.node_id,
        "moves": len(targets),
        "in_progress_when_killed": len(in_progress),
        "adding_the_killed_broker": len(adding_victim),
        "stalled_while_it_was_down": len(stalled),
        "completed_while_it_was_down": len(completed_while_down),
        "fenced_after_s": fenced_s,
        "all_complete_after_restart_s": _since(restarted),
        "isr_samples": worst["samples"],
        "empty_isr_samples": worst["empty_isr"],
        "dead_leader_samples_after_fencing": worst["dead_leader_after_fencing"],
        "moving_topic_acknowledged": len(acknowledged),
        "moving_topic_lost": len(acknowledged - set(seen)),
        "moving_topic_duplicated": sum(1 for n in seen.values() if n > 1),
    }
