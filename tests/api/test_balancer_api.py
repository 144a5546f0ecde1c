"""The balancer over REST on the real database and controller: a fill plan previewed (its moves,
skew before and after), executed by its job in bounded batches while the test plays the brokers
(each leader takes its caught-up new replicas into the ISR with AlterPartition), followed to
COMPLETED; one plan at a time (409 REASSIGNMENT_IN_PROGRESS); a cancel mid-move reverts what was
moving; the throttles set while moving and removed after; the audit row naming the moves;
Kafka's errors for bad input; `verify_metadata` clean at the end."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest

from audit.models import AuditEvent
from balancer import services
from balancer.models import BalancePlan
from controlplane.controller.errors import Errors
from controlplane.models import ConfigEntry
from controlplane.runtime.replay import metadata_verify
from replicas.models import Partition
from tests.api.test_replication_api import Kafka

pytestmark = pytest.mark.django_db(transaction=True)

PLANS = "/api/v1/balance/plans"
WAIT_S = 60


@pytest.fixture
def kafka(api, tokens, register) -> Kafka:
    """Brokers 1..3 holding topic `t` (12 partitions, RF 2); broker 4 new and empty."""
    kafka = Kafka(api, tokens, register)
    kafka.register(1, 2, 3, 4)
    kafka.create_topic("t", [[1 + i % 3, 1 + (i + 1) % 3] for i in range(12)])
    return kafka


@pytest.fixture
def jobs(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[threading.Thread]]:
    """A plan's job runs in a thread of the test (as embedded: no Celery here)."""
    started: list[threading.Thread] = []

    def send_task(name: str, *args: Any, **kwargs: Any) -> None:
        assert name == services.RUN_TASK
        thread = threading.Thread(target=_run_plan, args=args, daemon=True)
        started.append(thread)
        thread.start()

    from controlplane.runtime import executor

    monkeypatch.setattr(executor.executor(), "send_task", send_task)
    yield started
    for thread in started:
        thread.join(timeout=WAIT_S)


def _run_plan(plan_id: int) -> None:
    from django.db import connections

    import balancer.execution

    balancer.execution.POLL_INTERVAL_S = 0.05
    try:
        services.plan_run(plan_id=plan_id)
    finally:
        connections.close_all()


def catch_up(kafka: Kafka, *, skip: set[tuple[str, int]] = frozenset()) -> int:  # type: ignore[assignment]
    """Each moving partition's leader takes its new replicas into the ISR (they caught up)."""
    joined = 0
    for p in Partition.objects.filter(reassigning=True).select_related("topic"):
        if (p.topic.name, p.partition_index) in skip:
            continue
        code, _ = kafka.alter_partition(
            p.topic.name, p.partition_index, sorted({*p.isr, *p.adding_replicas})
        )
        joined += code in (0, Errors.NEW_LEADER_ELECTED)
    return joined


def plan_state(plan_id: int) -> str:
    return str(BalancePlan.objects.values_list("state", flat=True).get(pk=plan_id))


def until(predicate: Any, what: str, kafka: Kafka | None = None) -> Any:
    deadline = time.monotonic() + WAIT_S
    while time.monotonic() < deadline:
        if kafka is not None:
            catch_up(kafka)
        found = predicate()
        if found:
            return found
        time.sleep(0.05)
    raise AssertionError(f"{what}: not within {WAIT_S}s")


def create(kafka: Kafka, **body: Any) -> tuple[int, dict[str, Any]]:
    status, plan = kafka.api.post(PLANS, body, token=kafka.tokens["admin"])
    return int(status), dict(plan)


def test_a_fill_plan_is_previewed_executed_in_batches_and_completes(kafka: Kafka, jobs) -> None:
    status, plan = create(kafka, goal="fill", broker_id=4)
    assert status == 200, plan
    assert plan["state"] == "PROPOSED" and plan["moves_total"] == len(plan["moves"])
    assert plan["skew_before"]["replicas"]["4"] == 0 and plan["skew_after"]["replicas"]["4"] == 6
    assert plan["skew_before"]["replica_spread"] == 8 and plan["skew_after"]["replica_spread"] == 0
    data = [m for m in plan["moves"] if set(m["after"]) != set(m["before"])]
    assert len(data) == 6 and all(4 in m["after"] and 4 not in m["before"] for m in data)
    total = plan["moves_total"]
    assert not Partition.objects.filter(reassigning=True).exists()  # a preview moves nothing
    status, running = kafka.api.post(
        f"{PLANS}/{plan['plan_id']}/execute",
        {"batch_size": 2, "concurrency": 4, "throttle": 10_000_000},
        token=kafka.tokens["admin"],
    )
    assert status == 200 and running["state"] == "EXECUTING", running
    # At most `concurrency` partitions move at once, in batches of `batch_size`; the moving
    # replicas are throttled as Kafka's tool throttles them.
    moving = until(lambda: Partition.objects.filter(reassigning=True).count(), "moves started")
    assert moving <= 4
    assert ConfigEntry.objects.filter(name="follower.replication.throttled.rate").exists()
    until(lambda: plan_state(plan["plan_id"]) == "COMPLETED", "the plan completed", kafka)
    status, done = kafka.api.get(f"{PLANS}/{plan['plan_id']}", token=kafka.tokens["admin"])
    assert status == 200 and done["progress"]["done"] == total
    assert done["progress"]["batches"] >= total / 2
    assert done["message"].startswith(f"{total} of {total} move(s) made")
    assert Partition.objects.filter(replica_ids__contains=",4,").count() == 6
    assert not ConfigEntry.objects.filter(name__contains="replication.throttled").exists()
    # Audited once, as the operation naming the plan and every partition it moves.
    event = AuditEvent.objects.get(api="ExecuteBalancePlan")
    names = [r["resource_name"] for r in event.resources]
    assert names[0] == str(plan["plan_id"])
    assert sorted(names[1:]) == sorted(f"t-{m['partition']}" for m in plan["moves"])
    assert metadata_verify() == []


def test_one_plan_at_a_time_and_a_cancel_reverts_what_was_moving(kafka: Kafka, jobs) -> None:
    _, first = create(kafka, goal="fill", broker_id=4)
    _, second = create(kafka, goal="rebalance")
    status, _ = kafka.api.post(
        f"{PLANS}/{first['plan_id']}/execute", {"concurrency": 2}, token=kafka.tokens["admin"]
    )
    assert status == 200
    status, refused = kafka.api.post(
        f"{PLANS}/{second['plan_id']}/execute", {}, token=kafka.tokens["admin"]
    )
    assert status == 409 and refused["error_code"] == Errors.REASSIGNMENT_IN_PROGRESS
    assert f"Plan {first['plan_id']} (fill) is executing" in refused["error_message"]
    until(lambda: Partition.objects.filter(reassigning=True).count() == 2, "two moving")
    before = {
        (p.topic_id, p.partition_index): p.replicas
        for p in Partition.objects.filter(reassigning=True)
    }
    status, cancelling = kafka.api.post(
        f"{PLANS}/{first['plan_id']}/cancel", {}, token=kafka.tokens["admin"]
    )
    assert status == 200 and cancelling["state"] in ("CANCELLING", "CANCELLED")
    until(lambda: plan_state(first["plan_id"]) == "CANCELLED", "the plan cancelled")
    assert not Partition.objects.filter(reassigning=True).exists()
    for (topic_id, index), moving in before.items():
        back = Partition.objects.get(topic_id=topic_id, partition_index=index).replicas
        assert 4 not in back and set(back) < set(moving)  # back to its replicas
    status, again = kafka.api.post(
        f"{PLANS}/{first['plan_id']}/execute", {}, token=kafka.tokens["admin"]
    )
    assert status == 409 and "CANCELLED" in again["error_message"]
    assert metadata_verify() == []


def test_bad_plans_are_refused_with_kafkas_errors(kafka: Kafka) -> None:
    status, body = create(kafka, goal="drain", broker_id=99)
    assert status == 404 and body["error_code"] == Errors.BROKER_ID_NOT_REGISTERED
    status, body = create(kafka, goal="drain")
    assert status == 400 and "broker_id" in body["error_message"]
    status, body = create(kafka, goal="shuffle")
    assert status == 400 and body["error_code"] == Errors.INVALID_REQUEST
    status, body = create(kafka, goal="rebalance", extra=1)
    assert status == 400
    status, body = kafka.api.post(f"{PLANS}/12345/execute", {}, token=kafka.tokens["admin"])
    assert status == 404 and body["error_code"] == Errors.RESOURCE_NOT_FOUND
    assert "No balance plan 12345" in body["error_message"]
    status, body = kafka.api.get(f"{PLANS}/{2**70}", token=kafka.tokens["admin"])
    assert status == 404 and body["error_code"] == Errors.RESOURCE_NOT_FOUND
    status, body = kafka.api.post(PLANS, {"goal": "rebalance"}, token=kafka.tokens["alice"])
    assert status == 403 and body["error_code"] == Errors.CLUSTER_AUTHORIZATION_FAILED
    status, body = kafka.api.get(PLANS, token=kafka.tokens["alice"])
    assert status == 403


def test_a_balanced_cluster_gets_an_empty_plan_that_does_not_run(kafka: Kafka) -> None:
    kafka.register(5)
    status, drain = create(kafka, goal="drain", broker_id=5)
    assert status == 200 and drain["moves"] == [] and "holds no replicas" in drain["message"]
    status, body = kafka.api.post(
        f"{PLANS}/{drain['plan_id']}/execute", {}, token=kafka.tokens["admin"]
    )
    assert status == 409 and "nothing to move" in body["error_message"]
