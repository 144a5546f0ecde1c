"""The fault campaign's broker faults (devtools/campaign.py), and the check they end with.

* `lose_two_racks`: the brokers of two of the three racks stop heartbeating at once, then come
  back (the same incarnations: they resume).
* `restart_every_broker`: the simulator is killed (kill -9: every broker's process gone at once)
  and started again, so every broker registers anew: a new incarnation, a new broker epoch.

Both end when the cluster healed as Kafka's does: every partition's ISR is its replicas again
(the leaders took their caught-up followers back with AlterPartition) and every partition is led
by its preferred replica again (the controller's periodic rebalance). `healed` is that check,
for any caller with a topic's partitions as the public API describes them.
"""

from __future__ import annotations

import signal
import time
from collections.abc import Iterable
from typing import Any, Protocol

from devtools.stack import PYTHON, Http, Stack, wait_for

Partition = dict[str, Any]  # a partition of GET /api/v1/topics/{name}


class FaultCampaign(Protocol):
    """What these faults need of the campaign (devtools.campaign.FaultCampaign)."""

    stack: Stack

    def partitions(self) -> list[Partition]: ...

    def unfenced(self) -> int: ...

    def incarnations(self, state: str | None = None) -> dict[int, str]: ...

    def simulator_command(self, line: str) -> None: ...

    def start_simulator(self) -> None: ...


def isr_full(partitions: Iterable[Partition]) -> bool:
    """Every partition's ISR holds every replica."""
    return all(set(p["isr_nodes"]) == set(p["replica_nodes"]) for p in partitions)


def preferred_lead(partitions: Iterable[Partition]) -> bool:
    """Every partition is led by its preferred replica (the first; no canary partition here)."""
    return all(p["leader_id"] == p["replica_nodes"][0] for p in partitions)


def healed(partitions: list[Partition]) -> bool:
    return bool(partitions) and isr_full(partitions) and preferred_lead(partitions)


class NotHealed:
    """False, and what a timed-out wait shows: the partitions not yet healed."""

    def __init__(self, partitions: list[Partition]) -> None:
        self.partitions = [
            {k: p[k] for k in ("partition_index", "leader_id", "replica_nodes", "isr_nodes")}
            for p in partitions
            if not healed([p])
        ]

    def __bool__(self) -> bool:
        return False

    def __repr__(self) -> str:
        return f"not healed: {self.partitions or 'no partitions'}"


def healed_or_why(partitions: list[Partition]) -> bool | NotHealed:
    return True if healed(partitions) else NotHealed(partitions)


def simulator_argv(
    web: Http, *, broker_token: str, admin_token: str, brokers: int, racks: int, log_dirs: int,
    topic: str,
) -> list[str]:  # fmt: skip
    """The campaign's simulated brokers, commands on stdin, creating `topic` (or finding it)."""
    return [
        PYTHON,
        "manage.py",
        "simulate_brokers",
        "--internal-url",
        web.internal,
        "--url",
        web.base,
        "--token",
        broker_token,
        "--brokers",
        str(brokers),
        "--racks",
        str(racks),
        "--log-dirs",
        str(log_dirs),
        "--control",
        "stdin",
        "--topic",
        topic,
        "--partitions",
        "6",
        "--replication-factor",
        "3",
        "--admin-token",
        admin_token,
    ]


def lose_two_racks(campaign: FaultCampaign, *, brokers: int, racks: int) -> dict[str, Any]:
    """The brokers of two of the three racks stop heartbeating at once; the other rack's
    keep on. Measured: until every partition with a surviving ISR member has a live leader
    (Kafka: after the session timeout, elected from the ISR), then, once the racks are back,
    until their brokers are unfenced, back in every ISR (by themselves: a resumed simulated
    broker's leaders take it back with AlterPartition once it is unfenced) and leading their
    preferred partitions again (the rebalance)."""
    lost = [b for b in range(brokers) if b % racks != 0]
    survivors = {b for b in range(brokers) if b % racks == 0}
    before = campaign.partitions()
    with_a_survivor = [p for p in before if set(p["isr_nodes"]) & survivors]
    began = time.monotonic()
    for broker in lost:
        campaign.simulator_command(f"stop {broker}")

    def survivors_lead() -> bool:
        now = {p["partition_index"]: p for p in campaign.partitions()}
        return all(now[p["partition_index"]]["leader_id"] in survivors for p in with_a_survivor)

    wait_for(survivors_lead, 60, "a live leader for every partition with a live ISR member")
    available_s = round(time.monotonic() - began, 2)
    still_unfenced = campaign.unfenced()
    back = time.monotonic()
    for broker in lost:
        campaign.simulator_command(f"resume {broker}")
    wait_for(lambda: campaign.unfenced() == brokers, 60, "the lost racks' brokers unfenced")
    unfenced_s = round(time.monotonic() - back, 2)
    wait_for(lambda: isr_full(campaign.partitions()), 60, "every replica back in its ISR")
    in_isr_s = round(time.monotonic() - back, 2)
    wait_for(lambda: healed_or_why(campaign.partitions()), 60, "the preferred leaders back")
    return {
        "lost_brokers": lost,
        "partitions_with_a_surviving_isr_member": len(with_a_survivor),
        "partitions": len(before),
        "every_such_partition_led_by_a_survivor_after_s": available_s,
        "unfenced_brokers_then": still_unfenced,
        "racks_back_brokers_unfenced_after_s": unfenced_s,
        "racks_back_every_replica_in_isr_after_s": in_isr_s,
        "racks_back_preferred_leaders_after_s": round(time.monotonic() - back, 2),
    }


def restart_every_broker(campaign: FaultCampaign, *, brokers: int) -> dict[str, Any]:
    """kill -9 the simulator (every broker's process at once) and start it again: each broker
    registers a new incarnation with a new epoch once its old session lapsed. Measured: until
    every broker is unfenced as its new incarnation, until every ISR is whole again, and until
    every preferred leader leads again."""
    old = campaign.incarnations()
    assert len(old) == brokers, old
    began = time.monotonic()
    campaign.stack.kill("simulator", signal.SIGKILL)
    campaign.stack.procs["simulator"].wait(timeout=30)
    campaign.start_simulator()

    def all_new_and_unfenced() -> bool:
        now = campaign.incarnations(state="UNFENCED")
        return len(now) == brokers and all(now[b] != old[b] for b in old)

    wait_for(all_new_and_unfenced, 120, "every broker unfenced as a new incarnation")
    unfenced_s = round(time.monotonic() - began, 2)
    wait_for(lambda: isr_full(campaign.partitions()), 60, "every replica back in its ISR")
    in_isr_s = round(time.monotonic() - began, 2)
    wait_for(lambda: healed_or_why(campaign.partitions()), 60, "the preferred leaders back")
    partitions = campaign.partitions()
    return {
        "restarted_brokers": sorted(old),
        "partitions": len(partitions),
        "every_broker_unfenced_as_a_new_incarnation_after_s": unfenced_s,
        "every_replica_in_isr_after_s": in_isr_s,
        "preferred_leaders_after_s": round(time.monotonic() - began, 2),
        "under_replicated_then": sum(not isr_full([p]) for p in partitions),
        "off_preferred_leader_then": sum(not preferred_lead([p]) for p in partitions),
    }
