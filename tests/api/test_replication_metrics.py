"""Replication metrics and the commit's SQL statement count, through the real controller."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from tests.conftest import Api

pytestmark = pytest.mark.django_db


def _metric(client: Any, name: str) -> float:
    response = client.get("/metrics")
    assert response.status_code == 200
    text = response.content.decode()
    for line in text.splitlines():
        if line.startswith(name + " ") or line.startswith(name + "{"):
            return float(line.rsplit(" ", 1)[1])
    raise AssertionError(f"{name} not in /metrics")


def _topic(api: Api, token: str, name: str, partitions: int, leader: int) -> None:
    assignments = [
        {"partition_index": i, "broker_ids": [leader, (leader + 1 + i % 3) % 4]}
        for i in range(partitions)
    ]
    status, body = api.post(
        "/api/v1/create-topics",
        {"topics": [{"name": name, "assignments": assignments}]},
        token=token,
    )
    assert status == 200 and body["topics"][0]["error_code"] == 0, body


def _fail(api: Api, token: str, broker: int, epoch: int, topic: str, partitions: int) -> None:
    status, body = api.post(
        "/internal/v1/alter-replica-state",
        {
            "broker_id": broker,
            "broker_epoch": epoch,
            "new_state": 1,
            "reason": "disk",
            "topics": [{"name": topic, "partitions": list(range(partitions))}],
        },
        token=token,
    )
    assert status == 200 and body["error_code"] == 0, body


def test_offline_replicas_leaderless_partitions_and_elections_are_reported(
    api: Api, client: Any, tokens: dict[str, str], register: Callable[..., int]
) -> None:
    epochs = {b: register(b, unfence=True) for b in range(4)}
    _topic(api, tokens["admin"], "metrics", 6, leader=0)
    before = _metric(client, "kafka_controller_controllerstats_leaderelections_total")
    _fail(api, tokens["broker"], 0, epochs[0], "metrics", 6)
    assert _metric(client, "kafka_controller_offline_replicas") == 6
    assert _metric(client, "kafka_controller_kafkacontroller_globalpartitioncount") == 6
    assert _metric(client, "kafka_controller_controllerstats_leaderelections_total") == before + 6
    assert _metric(client, "kafka_controller_leaderless_partitions") == 0
    # The followers fail too: every replica is offline, nothing can lead.
    for follower in (1, 2, 3):
        _fail(api, tokens["broker"], follower, epochs[follower], "metrics", 6)
    assert _metric(client, "kafka_controller_leaderless_partitions") == 6
    assert _metric(client, "kafka_controller_kafkacontroller_offlinepartitionscount") == 6
    assert _metric(client, "kafka_controller_offline_partitions_all_replicas") == 6


def _commit_statements(run: Callable[[], Any]) -> int:
    with CaptureQueriesContext(connection) as captured:
        run()
    return sum(
        1
        for q in captured.captured_queries
        if q["sql"].lstrip().upper().startswith(("INSERT", "UPDATE", "DELETE"))
    )


def test_sql_statements_per_batch_do_not_grow_with_partitions(
    api: Api, tokens: dict[str, str], register: Callable[..., int]
) -> None:
    epochs = {b: register(b, unfence=True) for b in range(4)}
    _topic(api, tokens["admin"], "small", 5, leader=0)
    _topic(api, tokens["admin"], "large", 200, leader=1)
    small = _commit_statements(lambda: _fail(api, tokens["broker"], 0, epochs[0], "small", 5))
    large = _commit_statements(lambda: _fail(api, tokens["broker"], 1, epochs[1], "large", 200))
    assert small == large
    creating_small = _commit_statements(lambda: _topic(api, tokens["admin"], "c-small", 3, 2))
    creating_large = _commit_statements(lambda: _topic(api, tokens["admin"], "c-large", 300, 2))
    assert creating_small == creating_large


def test_reports_that_arrive_together_are_applied_in_one_commit(
    api: Api, tokens: dict[str, str], register: Callable[..., int]
) -> None:
    from controlplane.models import MetadataRecord
    from controlplane.runtime.lease import now_ms
    from replicas.models import PendingReplicaStateChange
    from replicas.services import replica_state_apply_pending

    epochs = {b: register(b, unfence=True) for b in range(4)}
    _topic(api, tokens["admin"], "batched", 4, leader=0)
    _topic(api, tokens["admin"], "other", 4, leader=1)
    # Two validated reports waiting, as two web nodes would have queued them.
    for broker, topic in ((0, "batched"), (1, "other")):
        PendingReplicaStateChange.objects.create(
            request_id=f"report-{broker}",
            broker_id=broker,
            broker_epoch=epochs[broker],
            payload={
                "broker_id": broker,
                "broker_epoch": epochs[broker],
                "new_state": 1,
                "reason": "disk",
                "topics": [{"name": topic, "partitions": [0, 1, 2, 3]}],
            },
            principal="User:broker",
            received_ms=now_ms(),
        )
    with CaptureQueriesContext(connection) as captured:
        assert replica_state_apply_pending() == 2
    log_inserts = [
        q for q in captured.captured_queries if "INSERT INTO cp_metadata_record" in q["sql"]
    ]
    assert len(log_inserts) == 1  # one commit for both reports
    assert not PendingReplicaStateChange.objects.exists()
    records = MetadataRecord.objects.filter(request_id__in=["report-0", "report-1"])
    # Per report: its broker's failed dir (CONTRACT: AlterReplicaState reports offline log
    # dirs), then its four partitions' changes.
    assert records.count() == 10
    assert len({r.timestamp_ms for r in records}) == 1
    # Applying again finds nothing waiting and writes nothing.
    assert replica_state_apply_pending() == 0


def test_the_controllers_timer_moves_leadership_back_to_preferred_replicas(
    api: Api,
    tokens: dict[str, str],
    register: Callable[..., int],
    settings: Any,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The rebalance is the active controller's own periodic job (as Kafka's QuorumController
    schedules it), due every leader.imbalance.check.interval.seconds; no Celery beat job."""
    from controlplane.models import MetadataRecord
    from controlplane.runtime.controller import get_runtime
    from replicas import timer
    from replicas.models import Partition

    assert "rebalance-preferred-leaders" not in settings.CELERY_BEAT_SCHEDULE
    clock = [1_000_000]
    monkeypatch.setattr(timer, "now_ms", lambda: clock[0])
    monkeypatch.setattr(timer, "_last_rebalance_ms", {})
    interval_ms = settings.CP_LEADER_IMBALANCE_CHECK_INTERVAL_SECONDS * 1000
    epochs = {b: register(b, unfence=True) for b in range(3)}
    status, body = api.post(
        "/api/v1/create-topics",
        {
            "topics": [
                {"name": "pref", "assignments": [{"partition_index": 0, "broker_ids": [0, 1]}]}
            ]
        },
        token=tokens["admin"],
    )
    assert status == 200 and body["topics"][0]["error_code"] == 0, body
    # Broker 0 (the preferred leader) leaves; broker 1 leads.
    api.post(
        "/internal/v1/broker-heartbeat",
        {
            "broker_id": 0,
            "broker_epoch": epochs[0],
            "current_metadata_offset": 10**9,
            "want_fence": True,
        },
        token=tokens["broker"],
    )
    assert Partition.objects.get(topic__name="pref").leader == 1
    # Broker 0 comes back and its leader takes it back into the ISR.
    api.post(
        "/internal/v1/broker-heartbeat",
        {"broker_id": 0, "broker_epoch": epochs[0], "current_metadata_offset": 10**9},
        token=tokens["broker"],
    )
    p = Partition.objects.get(topic__name="pref")
    status, body = api.post(
        "/internal/v1/alter-partition",
        {
            "broker_id": 1,
            "broker_epoch": epochs[1],
            "topics": [
                {
                    "topic_name": "pref",
                    "partitions": [
                        {
                            "partition_index": 0,
                            "leader_epoch": p.leader_epoch,
                            "new_isr": [1, 0],
                            "partition_epoch": p.partition_epoch,
                        }
                    ],
                }
            ],
        },
        token=tokens["broker"],
    )
    assert body["topics"][0]["partitions"][0]["error_code"] == 0, body
    runtime = get_runtime()
    runtime.run_jobs()  # the first round starts the interval
    assert Partition.objects.get(topic__name="pref").leader == 1
    clock[0] += interval_ms - 1
    runtime.run_jobs()
    assert Partition.objects.get(topic__name="pref").leader == 1  # not due yet
    clock[0] += 1
    runtime.run_jobs()
    p = Partition.objects.get(topic__name="pref")
    assert p.leader == 0 and p.leader_epoch == 2
    records = MetadataRecord.objects.count()
    clock[0] += interval_ms
    runtime.run_jobs()
    assert MetadataRecord.objects.count() == records  # balanced: the next round writes nothing
