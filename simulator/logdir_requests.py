"""The log directories' requests and answers as data, no I/O: the AlterReplicaState a broker
sends for a failed directory and what it took of the answer, the AlterPartition a leader sends to
take a repaired replica back into the ISR and what came of it, and a fail's or repair's result.
"""

from __future__ import annotations

import dataclasses
from collections import Counter
from typing import Any

from controlplane.controller.errors import Errors
from simulator.client import error_name
from simulator.metadata import PartitionView
from simulator.state import BrokerState, logger

TopicPartition = tuple[str, int]  # (topic name, partition index)

OFFLINE_REPLICA_EVENT = 1  # KIP-589's only AlterReplicaState event type


@dataclasses.dataclass(slots=True)
class LogDirResult:
    """What `fail_log_dir` / `repair_log_dir` did.

    fail: `partitions` are the replicas the AlterReplicaState named, `done` those it accepted
    (`refused`: the others, by error name), `applied` that the metadata shows every accepted one
    offline; `request`/`request_id` the accepted request as sent (a retry of it applies once).
    repair: `partitions` are the replicas that were offline or out of the ISR, `done` those back
    in the ISR, `applied` that none is left (`pending`: why each left one is, at the deadline).
    """

    action: str  # "fail" or "repair"
    broker_id: int
    dir_index: int
    log_dir: str
    partitions: list[tuple[str, int]] = dataclasses.field(default_factory=list)
    done: list[tuple[str, int]] = dataclasses.field(default_factory=list)
    refused: dict[str, list[tuple[str, int]]] = dataclasses.field(default_factory=dict)
    pending: dict[tuple[str, int], str] = dataclasses.field(default_factory=dict)
    applied: bool = False
    attempts: int = 0  # HTTP requests sent (every retry counts)
    broker_epoch: int | None = None
    request_id: str | None = None
    request: dict[str, Any] | None = None
    error: str | None = None
    elapsed_s: float = 0.0

    @property
    def ok(self) -> bool:
        return self.error is None and self.applied


def alter_replica_state_request(
    state: BrokerState, epoch: int, dir_index: int, replicas: list[PartitionView]
) -> dict[str, Any]:
    by_topic: dict[str, list[int]] = {}
    for view in replicas:
        by_topic.setdefault(view.topic, []).append(view.partition)
    return {
        "broker_id": state.broker_id,
        "broker_epoch": epoch,
        "new_state": OFFLINE_REPLICA_EVENT,
        "reason": f"log dir {state.log_dirs[dir_index]} failed (simulated)",
        "log_dir": state.log_dirs[dir_index],
        "topics": [{"name": t, "partitions": p} for t, p in sorted(by_topic.items())],
    }


def take_report_answer(
    result: LogDirResult, answer: dict[str, Any], request: dict[str, Any], request_id: str
) -> None:
    """The accepted AlterReplicaState: which replicas it took, which it refused and why."""
    for topic in answer.get("topics") or []:
        for item in topic.get("partitions") or []:
            tp = (str(topic["name"]), int(item["partition_index"]))
            if item.get("error_code") == Errors.NONE:
                result.done.append(tp)
            else:
                result.refused.setdefault(error_name(item.get("error_code")), []).append(tp)
    result.request_id = request_id
    result.request = request


def alter_partition_request(
    leader: BrokerState, views: list[PartitionView], joiner: int
) -> dict[str, Any]:
    by_topic: dict[str, list[dict[str, Any]]] = {}
    for view in views:
        new_isr = [*view.isr, joiner] if joiner not in view.isr else list(view.isr)
        by_topic.setdefault(view.topic, []).append(
            {
                "partition_index": view.partition,
                "leader_epoch": view.leader_epoch,
                "new_isr": new_isr,
                "partition_epoch": view.partition_epoch,
            }
        )
    return {
        "broker_id": leader.broker_id,
        "broker_epoch": leader.epoch,
        "topics": [{"topic_name": t, "partitions": p} for t, p in sorted(by_topic.items())],
    }


def rejoin_outcome(
    answer: dict[str, Any], joiner: int, leader_id: int
) -> dict[TopicPartition, str | None]:
    """Per partition of an AlterPartition answer: None when the joiner is in the ISR now."""
    outcome: dict[TopicPartition, str | None] = {}
    for topic in answer.get("topics") or []:
        for item in topic.get("partitions") or []:
            tp = (str(topic["topic_name"]), int(item["partition_index"]))
            code = item.get("error_code")
            if code in (Errors.NONE, Errors.NEW_LEADER_ELECTED) and joiner in (
                item.get("isr") or []
            ):
                outcome[tp] = None
            else:
                outcome[tp] = error_name(code)
                logger.info(
                    "broker %d: AlterPartition %s-%d: %s", leader_id, tp[0], tp[1], outcome[tp]
                )
    return outcome


def still_out_of_isr(waiting: dict[TopicPartition, str]) -> str:
    reasons = Counter(waiting.values())
    return "timed out; still out of the ISR: " + ", ".join(
        f"{n} ({why})" for why, n in reasons.most_common()
    )


def log_dir_summary(result: LogDirResult) -> str:
    """What a fail or repair did, in a line."""
    head = f"broker {result.broker_id}: log dir {result.dir_index}"
    took = f" in {result.elapsed_s:.1f} s" if result.elapsed_s else ""
    if result.action == "fail":
        text = (
            f"{head} failed: {len(result.done)}/{len(result.partitions)} replicas reported "
            f"offline (epoch {result.broker_epoch}, {result.attempts} requests)"
        )
        if result.refused:
            text += "; refused: " + ", ".join(
                f"{len(tps)} {name}" for name, tps in sorted(result.refused.items())
            )
        if result.applied and result.done:
            text += "; the metadata shows them offline"
    else:
        text = (
            f"{head} repaired: {len(result.done)}/{len(result.partitions)} replicas back in "
            f"the ISR ({result.attempts} AlterPartition requests)"
        )
    if result.error:
        text += f"; {result.error}"
    return text + took
