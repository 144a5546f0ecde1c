"""The leaders' side of replication: caught-up followers go back into the ISR (AlterPartition).

In Kafka a follower fetches from its partition's leader, and the leader, seeing the follower
caught up, expands the ISR with AlterPartition (`Partition.maybeExpandIsr`). That is how every
replica rejoins, whatever took it out: a broker that resumed after a pause, a broker restarted as a
new incarnation (a new broker epoch), the whole fleet restarted with or without the controller.
The simulated brokers do the same here, continuously, for every partition one of them leads:

* a simulated follower fetches (and, with no data to copy, is caught up at once) while it runs:
  registered, heartbeating (not silent, not shutting down), its replica's log dir working, and no
  log-dir operation (`fail_log_dir` / `repair_log_dir`) of its own under way, which decides its
  replicas' ISR membership meanwhile;
* a replica a reassignment adds (KIP-455) copies the partition first, at a rate (catch_up.py:
  a follower's fetch rate, or the throttle Kafka's configs set), so a move takes time;
* the leader checks the follower in the metadata it follows, as Kafka's leader does (KIP-841,
  KIP-903): registered with the follower's current broker epoch, unfenced, not in controlled
  shutdown. A broker that registered anew is thus taken back once the controller unfenced it;
* each leader sends one AlterPartition for all its partitions that have such followers out of
  the ISR, with the leader and partition epochs of its metadata, every caught-up follower added;
  then the loop waits for the metadata to show the commit before it looks again, so a partition
  has at most one ISR change in flight (Kafka's pending ISR state). Answers of stale metadata
  (FENCED_LEADER_EPOCH, INVALID_UPDATE_VERSION, NOT_CONTROLLER, ...) or of a controller that does
  not see the follower unfenced yet (INELIGIBLE_REPLICA) are tried again on a later round, after
  a backoff when a round took nobody back.

Followers outside this simulator are never added: whether they fetch is not something it knows.
The loop runs when the metadata moved, and every `check_interval_s` anyway; a round reads only
the partitions whose ISR lacks a replica. Leadership going back to the preferred replicas is the
controller's periodic election (auto.leader.rebalance.enable, every
leader.imbalance.check.interval.seconds), not the brokers'.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import time
from collections.abc import Callable, Mapping
from typing import Any

from controlplane.controller.errors import Errors
from simulator.catch_up import CatchUp
from simulator.client import (
    ALTER_PARTITION_PATH,
    Backoff,
    ControllerClient,
    Refused,
    Transient,
    dumps,
    error_name,
)
from simulator.follower import MetadataFollower
from simulator.lifecycle import Lifecycle
from simulator.metadata import MetadataView, PartitionView
from simulator.state import LiveBroker, SimulatorCounters, logger

# How often the leaders look for caught-up followers when nothing woke them.
DEFAULT_CHECK_INTERVAL_S = 1.0
# The least spacing of two rounds (each reads the under-replicated partitions of the view).
MIN_ROUND_INTERVAL_S = 0.05
# How long a round waits for the metadata to show what its AlterPartitions committed.
SYNC_TIMEOUT_S = 5.0

TopicPartition = tuple[str, int]


@dataclasses.dataclass(frozen=True, slots=True)
class Expansion:
    """One partition's ISR change a leader asks for: `joiners` added to the view's ISR."""

    view: PartitionView
    joiners: tuple[int, ...]

    @property
    def new_isr(self) -> list[int]:
        return [*self.view.isr, *self.joiners]


def fetching(broker: LiveBroker, dir_index: int) -> bool:
    """Whether the simulated broker fetches its replica in log dir `dir_index` (caught up: the
    simulator has no data to copy)."""
    state = broker.state
    return (
        state.registered
        and not state.silent
        and not state.want_shut_down
        and dir_index not in state.failed_log_dirs
        and not broker.dir_lock.locked()
    )


def eligible_in_metadata(view: MetadataView, broker: LiveBroker) -> bool:
    """The leader's check of a follower in the metadata it follows (KIP-841 and KIP-903): this
    incarnation's registration, unfenced, not in controlled shutdown."""
    seen = view.broker(broker.state.broker_id)
    return (
        seen is not None
        and seen.epoch == broker.state.epoch
        and not seen.fenced
        and not seen.in_controlled_shutdown
    )


def can_lead(view: MetadataView, broker: LiveBroker) -> bool:
    """A leader acts once it has read its own registration (its current epoch) and heartbeats."""
    state = broker.state
    seen = view.broker(state.broker_id)
    return state.registered and not state.silent and seen is not None and seen.epoch == state.epoch


def plan_expansions(
    view: MetadataView,
    brokers: Mapping[int, LiveBroker],
    dir_of: Callable[[str, int], int],
    caught_up: Callable[[PartitionView, int], bool] = lambda _partition, _replica: True,
) -> dict[int, list[Expansion]]:
    """Leader id -> the ISR expansions it asks for: each partition a simulated broker leads
    whose ISR lacks a simulated follower that fetches, is eligible and has caught up (a new
    replica of a reassignment once it copied the partition). No I/O."""
    leaders = {i for i, b in brokers.items() if can_lead(view, b)}
    if not leaders:
        return {}
    eligible: dict[int, bool] = {}
    plan: dict[int, list[Expansion]] = {}
    for partition in view.under_replicated(leaders):
        dir_index = dir_of(partition.topic, partition.partition)
        joiners = []
        for replica in partition.replicas:
            follower = brokers.get(replica)
            if replica in partition.isr or replica == partition.leader or follower is None:
                continue
            if replica not in eligible:
                eligible[replica] = eligible_in_metadata(view, follower)
            if (
                eligible[replica]
                and fetching(follower, dir_index)
                and caught_up(partition, replica)
            ):
                joiners.append(replica)
        if joiners:
            plan.setdefault(partition.leader, []).append(Expansion(partition, tuple(joiners)))
    return plan


def expansion_request(leader: LiveBroker, expansions: list[Expansion]) -> dict[str, Any]:
    """The leader's AlterPartition (`POST /internal/v1/alter-partition`)."""
    by_topic: dict[str, list[dict[str, Any]]] = {}
    for expansion in expansions:
        view = expansion.view
        by_topic.setdefault(view.topic, []).append(
            {
                "partition_index": view.partition,
                "leader_epoch": view.leader_epoch,
                "new_isr": expansion.new_isr,
                "partition_epoch": view.partition_epoch,
            }
        )
    return {
        "broker_id": leader.state.broker_id,
        "broker_epoch": leader.state.epoch,
        "topics": [{"topic_name": t, "partitions": p} for t, p in sorted(by_topic.items())],
    }


def expansion_outcome(
    answer: dict[str, Any], expansions: list[Expansion]
) -> dict[TopicPartition, str | None]:
    """Per partition asked for: None when every joiner is in the ISR the answer names, else
    why not (the error's name)."""
    wanted = {(e.view.topic, e.view.partition): e.joiners for e in expansions}
    outcome: dict[TopicPartition, str | None] = dict.fromkeys(wanted, "no answer")
    for topic in answer.get("topics") or []:
        for item in topic.get("partitions") or []:
            tp = (str(topic.get("topic_name")), int(item.get("partition_index", -1)))
            if tp not in wanted:
                continue
            code = item.get("error_code")
            isr = item.get("isr") or []
            ok = code in (Errors.NONE, Errors.NEW_LEADER_ELECTED)
            outcome[tp] = None if ok and all(j in isr for j in wanted[tp]) else error_name(code)
    return outcome


class IsrExpander:
    """The loop that has each simulated leader take its caught-up followers back into the ISR."""

    def __init__(
        self,
        lifecycle: Lifecycle,
        client: ControllerClient,
        follower: MetadataFollower,
        counters: SimulatorCounters,
        *,
        dir_of: Callable[[str, int], int],
        check_interval_s: float = DEFAULT_CHECK_INTERVAL_S,
        catch_up: CatchUp | None = None,
    ) -> None:
        self.lifecycle = lifecycle
        self.catch_up = catch_up or CatchUp()
        self.client = client
        self.follower = follower
        self.counters = counters
        self.dir_of = dir_of
        self.check_interval_s = check_interval_s
        self.wake = asyncio.Event()
        self.closing = False
        self.task: asyncio.Task[None] | None = None

    def start(self) -> None:
        self.closing = False
        self.task = asyncio.create_task(self.run(), name="isr-expander")

    def poke(self) -> None:
        """Something changed (the metadata moved, a broker came back): look again soon."""
        self.wake.set()

    async def run(self) -> None:
        backoff = Backoff(initial_s=0.1, max_s=2.0)
        while not self.closing:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.wake.wait(), self.check_interval_s)
            self.wake.clear()
            started = time.monotonic()
            try:
                sent, took = await self.round()
            except Exception:  # a bug here must not stop the loop silently
                logger.exception("ISR expansion round failed")
                sent, took = 1, 0
            if sent and not took:
                await asyncio.sleep(backoff.next())
            elif took:
                backoff.reset()
            await asyncio.sleep(max(0.0, MIN_ROUND_INTERVAL_S - (time.monotonic() - started)))

    async def round(self) -> tuple[int, int]:
        """One look at the view and the AlterPartitions it calls for: (requests sent,
        partitions whose joiners are all in the ISR now)."""
        view = self.follower.view
        plan = plan_expansions(
            view,
            self.lifecycle.brokers,
            self.dir_of,
            lambda partition, replica: self.catch_up.caught_up(view, partition, replica),
        )
        self.catch_up.round_done()
        if not plan:
            return 0, 0
        took = 0
        for leader_id, expansions in sorted(plan.items()):
            took += await self._expand(self.lifecycle.brokers[leader_id], expansions)
        # What was committed is in the log now: read it before looking again.
        await self.follower.sync(SYNC_TIMEOUT_S)
        return len(plan), took

    async def _expand(self, leader: LiveBroker, expansions: list[Expansion]) -> int:
        state = leader.state
        body = dumps(expansion_request(leader, expansions))
        request_id = self.lifecycle.next_request_id(leader, "isr")
        self.counters.isr_expansion_requests += 1
        try:
            answer = await self.client.post(ALTER_PARTITION_PATH, body, request_id, state.broker_id)
        except (Transient, Refused) as error:
            self.lifecycle.failed(leader, f"AlterPartition {error}")
            return 0
        code = answer.get("error_code")
        if code != Errors.NONE:
            self.lifecycle.failed(leader, f"AlterPartition {error_name(code)}", answer)
            return 0
        outcome = expansion_outcome(answer, expansions)
        took = sum(why is None for why in outcome.values())
        self.counters.isr_expansions += sum(
            len(e.joiners) for e in expansions if outcome[(e.view.topic, e.view.partition)] is None
        )
        for (topic, index), why in sorted(outcome.items()):
            if why is not None:
                logger.info(
                    "broker %d: ISR expansion of %s-%d: %s", state.broker_id, topic, index, why
                )
        logger.info(
            "broker %d: took followers back into %d of %d ISRs (AlterPartition)",
            state.broker_id,
            took,
            len(expansions),
        )
        return took
