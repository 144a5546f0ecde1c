"""A plan's execution: its moves as AlterPartitionReassignments, in bounded batches, with at
most `concurrency` partitions moving at once, Kafka's replication throttle on the moving
replicas while they move, its progress written as it goes, and a cancel honoured at the next
look.

Each round: the moves in flight that finished are counted (done when the partition holds the
plan's replicas, failed when it holds others: someone moved or cancelled it); then a batch
starts, of moves whose partition is still as the plan found it, not moving, and at or above its
min.insync.replicas (a partition below it waits: goal 6); a move whose partition changed since
the plan is skipped, and says why. Throttles are set as Kafka's reassignment tool sets them
(the moving replicas per topic, APPENDed; the rate on each broker involved) and removed when
the plan ends, however it ends.
"""

from __future__ import annotations

import logging
import time
from collections import deque
from collections.abc import Iterable
from typing import Any

from balancer import selectors
from balancer.models import BalancePlan, PlanState
from balancer.planner import Move
from brokers import services as broker_services
from controlplane.controller.errors import ApiError, Errors
from controlplane.runtime.conversation import RequestContext
from controlplane.runtime.lease import now_ms
from controlplane.services import controller_call
from replicas import services as replica_services
from replicas.models import TopicHealth

logger = logging.getLogger(__name__)

POLL_INTERVAL_S = 1.0  # between two looks when nothing changed
WAIT_FOR_HEALTH_S = 600.0  # a move whose partition stays below min ISR this long is skipped
SHOWN_IN_FLIGHT = 100  # how many moving partitions the progress names
TOPIC_THROTTLES = (
    "leader.replication.throttled.replicas",
    "follower.replication.throttled.replicas",
)
BROKER_THROTTLES = ("leader.replication.throttled.rate", "follower.replication.throttled.rate")

TopicPartition = tuple[str, int]
START, WAIT, DONE, SKIP = "start", "wait", "done", "skip"


def _name(tp: TopicPartition) -> str:
    return f"{tp[0]}-{tp[1]}"


class PlanRun:
    def __init__(self, plan: BalancePlan, *, poll_interval_s: float = POLL_INTERVAL_S) -> None:
        self.plan = plan
        self.options = plan.options
        self.poll_interval_s = poll_interval_s
        moves = [
            Move(m["topic"], m["partition"], tuple(m["before"]), tuple(m["after"]))
            for m in plan.moves
        ]
        self.moves = {(m.topic, m.partition): m for m in moves}
        self.remaining: deque[TopicPartition] = deque(self.moves)
        self.in_flight: dict[TopicPartition, Move] = {}
        self.waiting_since: dict[TopicPartition, float] = {}
        self.done = 0
        self.failed: list[dict[str, str]] = []
        self.skipped: list[dict[str, str]] = []
        self.batches = 0
        self.throttled_topics: set[str] = set()
        self.throttled_brokers: set[int] = set()
        names = {m.topic for m in moves}
        self.min_isr = {
            name: n
            for name, n in TopicHealth.objects.filter(topic__name__in=names).values_list(
                "topic__name", "min_insync_replicas"
            )
        }

    def context(self, what: str) -> RequestContext:
        """As the principal who executed the plan; request ids of its own per request (a retry
        after NOT_CONTROLLER applies once)."""
        return RequestContext(
            principal=self.plan.executed_by or self.plan.requested_by,
            client_id="balancer",
            request_id=f"balance-plan-{self.plan.pk}-{what}",
        )

    # --- the loop ------------------------------------------------------------------------------
    def run(self) -> None:
        try:
            while True:
                state = BalancePlan.objects.values_list("state", flat=True).get(pk=self.plan.pk)
                if state == PlanState.CANCELLING:
                    self._cancel()
                    return
                if state != PlanState.EXECUTING:
                    return  # failed or finished elsewhere
                progressed = self._reap()
                if not self.remaining and not self.in_flight:
                    self._finish()
                    return
                progressed = self._start_batch() or progressed
                self._save()
                if not progressed:
                    time.sleep(self.poll_interval_s)
        finally:
            self._clear_throttles()

    def _reap(self) -> bool:
        """Count the moves in flight that ended."""
        if not self.in_flight:
            return False
        states = selectors.partition_states(self.in_flight)
        ended = False
        for tp, move in list(self.in_flight.items()):
            now = states.get(tp)
            if now is not None and now["reassigning"]:
                continue
            del self.in_flight[tp]
            ended = True
            if now is None:
                self.failed.append({"partition": _name(tp), "error": "the partition is gone"})
            elif now["replicas"] == move.after:
                self.done += 1
            else:
                self.failed.append(
                    {
                        "partition": _name(tp),
                        "error": f"its replicas are {list(now['replicas'])}, not the plan's "
                        f"{list(move.after)} (moved or cancelled by someone else)",
                    }
                )
        return ended

    def _start_batch(self) -> bool:
        room = min(
            int(self.options["concurrency"]) - len(self.in_flight),
            int(self.options["batch_size"]),
        )
        if room <= 0 or not self.remaining:
            return False
        candidates = [self.remaining.popleft() for _ in range(min(room * 2, len(self.remaining)))]
        states = selectors.partition_states(candidates)
        batch: list[Move] = []
        unlooked: list[TopicPartition] = []
        later: list[TopicPartition] = []
        for tp in candidates:
            if len(batch) >= room:
                unlooked.append(tp)
                continue
            action, why = self._look(tp, self.moves[tp], states.get(tp))
            if action == START:
                batch.append(self.moves[tp])
            elif action == WAIT:
                later.append(tp)  # tried again after the others
            elif action == DONE:
                self.done += 1
            else:
                self.skipped.append({"partition": _name(tp), "why": why})
        self.remaining.extendleft(reversed(unlooked))
        self.remaining.extend(later)
        if not batch:
            return False
        self._throttle(batch)
        self._send(batch)
        return True

    def _look(self, tp: TopicPartition, move: Move, now: dict[str, Any] | None) -> tuple[str, str]:
        """What to do with a move now: START it, WAIT (its partition is below min ISR,
        leaderless or moving: goal 6), or it is DONE already or SKIPped for good, and why."""
        if now is None:
            return SKIP, "the partition is gone"
        if now["replicas"] == move.after and not now["reassigning"]:
            self.waiting_since.pop(tp, None)
            return DONE, ""
        if now["replicas"] != move.before and not now["reassigning"]:
            self.waiting_since.pop(tp, None)
            return SKIP, f"its replicas changed since the plan ({list(now['replicas'])})"
        healthy = now["leader"] >= 0 and len(now["isr"]) >= self.min_isr.get(tp[0], 1)
        if healthy and not now["reassigning"]:
            self.waiting_since.pop(tp, None)
            return START, ""
        since = self.waiting_since.setdefault(tp, time.monotonic())
        if time.monotonic() - since > WAIT_FOR_HEALTH_S:
            self.waiting_since.pop(tp, None)
            return SKIP, "it stayed below min.insync.replicas, leaderless or moving"
        return WAIT, ""

    def _send(self, batch: list[Move]) -> None:
        self.batches += 1
        topics: dict[str, list[dict[str, Any]]] = {}
        for move in batch:
            topics.setdefault(move.topic, []).append(
                {"partition_index": move.partition, "replicas": list(move.after)}
            )
        payload = {
            "topics": [{"name": t, "partitions": p} for t, p in topics.items()],
            "allow_replication_factor_change": True,
        }
        try:
            answer = replica_services.partition_reassignments_alter(
                payload=payload, context=self.context(f"batch-{self.batches}")
            )
        except ApiError as error:  # no controller in time: the batch is tried again
            logger.warning("plan %d: batch %d not sent: %s", self.plan.pk, self.batches, error)
            self.remaining.extendleft(reversed([(m.topic, m.partition) for m in batch]))
            return
        codes = {
            (t["name"], p["partition_index"]): (p["error_code"], p.get("error_message"))
            for t in answer.get("responses") or ()
            for p in t["partitions"]
        }
        for move in batch:
            tp = (move.topic, move.partition)
            code, message = codes.get(tp, (int(Errors.UNKNOWN_SERVER_ERROR), "no answer"))
            if code == 0:
                self.in_flight[tp] = move
            else:
                name = Errors(code).name if code in Errors._value2member_map_ else str(code)
                self.failed.append({"partition": _name(tp), "error": f"{name}: {message}"})

    # --- throttles, as Kafka's tool sets and removes them --------------------------------------
    def _throttle(self, batch: Iterable[Move]) -> None:
        rate = self.options.get("throttle")
        if not rate:
            return
        leaders: dict[str, set[str]] = {}
        followers: dict[str, set[str]] = {}
        brokers: set[int] = set()
        for move in batch:
            for source in move.before:
                leaders.setdefault(move.topic, set()).add(f"{move.partition}:{source}")
            for destination in set(move.after) - set(move.before):
                followers.setdefault(move.topic, set()).add(f"{move.partition}:{destination}")
            brokers |= {*move.before, *move.after}
        resources = [
            {
                "resource_type": "TOPIC",
                "resource_name": topic,
                "configs": [
                    {"name": key, "config_operation": "APPEND", "value": ",".join(sorted(items))}
                    for key, items in (
                        (TOPIC_THROTTLES[0], leaders.get(topic, set())),
                        (TOPIC_THROTTLES[1], followers.get(topic, set())),
                    )
                    if items
                ],
            }
            for topic in sorted(set(leaders) | set(followers))
        ]
        resources += [
            {
                "resource_type": "BROKER",
                "resource_name": str(b),
                "configs": [
                    {"name": key, "config_operation": "SET", "value": str(int(rate))}
                    for key in BROKER_THROTTLES
                ],
            }
            for b in sorted(brokers - self.throttled_brokers)
        ]
        self._alter_configs(resources, f"throttle-{self.batches + 1}")
        self.throttled_topics |= set(leaders) | set(followers)
        self.throttled_brokers |= brokers

    def _clear_throttles(self) -> None:
        if not self.throttled_topics and not self.throttled_brokers:
            return
        resources = [
            {
                "resource_type": "TOPIC",
                "resource_name": topic,
                "configs": [{"name": k, "config_operation": "DELETE"} for k in TOPIC_THROTTLES],
            }
            for topic in sorted(self.throttled_topics)
        ] + [
            {
                "resource_type": "BROKER",
                "resource_name": str(b),
                "configs": [{"name": k, "config_operation": "DELETE"} for k in BROKER_THROTTLES],
            }
            for b in sorted(self.throttled_brokers)
        ]
        try:
            self._alter_configs(resources, "unthrottle")
        except ApiError as error:
            logger.warning("plan %d: throttles not removed: %s", self.plan.pk, error)
            return
        self.throttled_topics.clear()
        self.throttled_brokers.clear()

    def _alter_configs(self, resources: list[dict[str, Any]], what: str) -> None:
        controller_call(
            api="IncrementalAlterConfigs",
            payload={"resources": resources, "validate_only": False},
            context=self.context(what),
        )

    # --- the end --------------------------------------------------------------------------------
    def _cancel(self) -> None:
        """Kafka's cancel of every move in flight: back to the replicas each had."""
        cancelled = 0
        if self.in_flight:
            topics: dict[str, list[dict[str, Any]]] = {}
            for topic, index in self.in_flight:
                topics.setdefault(topic, []).append({"partition_index": index, "replicas": None})
            replica_services.partition_reassignments_alter(
                payload={"topics": [{"name": t, "partitions": p} for t, p in topics.items()]},
                context=self.context("cancel"),
            )
            states = selectors.partition_states(self.in_flight)
            for tp, move in self.in_flight.items():
                now = states.get(tp)
                if now is not None and now["replicas"] == move.after:
                    self.done += 1  # it completed before the cancel reached it
                else:
                    cancelled += 1
            self.in_flight.clear()
        self._end(
            PlanState.CANCELLED,
            f"Cancelled: {self.done} move(s) made, {cancelled} in progress went back to their "
            f"replicas, {len(self.remaining)} not started.",
        )

    def _finish(self) -> None:
        message = f"{self.done} of {len(self.moves)} move(s) made"
        if self.failed or self.skipped:
            message += f"; {len(self.failed)} failed, {len(self.skipped)} skipped (see progress)"
        message += "."
        if self.plan.goal == "drain" and self.plan.broker_id is not None:
            message += " " + self._after_drain(self.plan.broker_id)
        self._end(PlanState.COMPLETED, message)

    def _after_drain(self, broker_id: int) -> str:
        """The drained broker unregistered (UnregisterBroker) when asked and it is stopped."""
        left = selectors.broker_replica_count(broker_id=broker_id)
        if left:
            return f"Broker {broker_id} still holds {left} replica(s)."
        if not self.options.get("unregister"):
            return f"Broker {broker_id} holds no replicas: stop it, then unregister it."
        alive = selectors.broker_alive(broker_id=broker_id)
        if alive is None:
            return f"Broker {broker_id} is not registered any more."
        if alive:
            return (
                f"Broker {broker_id} holds no replicas; it is still up: stop it, then "
                "unregister it."
            )
        broker_services.broker_unregister(broker_id=broker_id, context=self.context("unregister"))
        return f"Broker {broker_id} holds no replicas and is unregistered."

    def _end(self, state: str, message: str) -> None:
        self._clear_throttles()
        self._save()
        BalancePlan.objects.filter(pk=self.plan.pk).update(
            state=state, running=False, message=message, finished_ms=now_ms(), updated_ms=now_ms()
        )
        logger.info("plan %d %s: %s", self.plan.pk, state, message)

    def _save(self) -> None:
        progress = {
            "done": self.done,
            "remaining": len(self.remaining),
            "in_flight_count": len(self.in_flight),
            "in_flight": [_name(tp) for tp in list(self.in_flight)[:SHOWN_IN_FLIGHT]],
            "waiting": len(self.waiting_since),
            "failed": self.failed[-1000:],
            "failed_count": len(self.failed),
            "skipped": self.skipped[-1000:],
            "skipped_count": len(self.skipped),
            "batches": self.batches,
        }
        BalancePlan.objects.filter(pk=self.plan.pk).update(progress=progress, updated_ms=now_ms())
