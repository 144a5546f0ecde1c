"""The controller stays responsive during big changes (issue 33): an AlterReplicaState report
is applied in commits of at most MAX_PARTITIONS_PER_COMMIT partitions, with the controller free
between them, and the timer's fencing rounds never wait for the apps' jobs."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

import pytest

from controlplane.models import MetadataRecord
from controlplane.runtime import controller as controller_module
from controlplane.runtime.controller import get_runtime
from controlplane.runtime.conversation import ControllerAnswer, ControllerEvent
from controlplane.runtime.lease import now_ms
from controlplane.runtime.replay import metadata_verify
from replicas import services as replica_services
from replicas.models import PendingReplicaStateChange
from replicas.services import payload_slices, replica_state_apply_pending
from tests.conftest import Api

pytestmark = pytest.mark.django_db(transaction=True)

LIMIT = 100


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


def _report(request_id: str, broker: int, epoch: int, topics: dict[str, int]) -> None:
    payload = {
        "broker_id": broker,
        "broker_epoch": epoch,
        "new_state": 1,
        "reason": "disk",
        "topics": [{"name": n, "partitions": list(range(c))} for n, c in topics.items()],
    }
    PendingReplicaStateChange.objects.create(
        request_id=request_id,
        broker_id=broker,
        broker_epoch=epoch,
        payload=payload,
        principal="User:broker",
        received_ms=now_ms(),
    )


def test_slices_are_bounded_in_order_and_cover_the_report_once() -> None:
    payload = {
        "broker_id": 1,
        "broker_epoch": 7,
        "new_state": 1,
        "reason": "disk",
        "topics": [
            {"name": "a", "partitions": list(range(150))},
            {"name": "b", "partitions": list(range(120))},
        ],
    }
    slices = payload_slices(payload, LIMIT)
    assert [sum(len(t["partitions"]) for t in s["topics"]) for s in slices] == [100, 100, 70]
    named = [(t["name"], p) for s in slices for t in s["topics"] for p in t["partitions"]]
    assert named == [("a", p) for p in range(150)] + [("b", p) for p in range(120)]
    assert all(s["broker_epoch"] == 7 and s["reason"] == "disk" for s in slices)
    assert payload_slices({**payload, "topics": []}, LIMIT) == [{**payload, "topics": []}]
    assert payload_slices(payload, 1000) == [payload]


def test_a_big_report_is_applied_in_bounded_commits_with_the_controller_free_between(
    api: Api,
    tokens: dict[str, str],
    register: Callable[..., int],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(replica_services, "MAX_PARTITIONS_PER_COMMIT", LIMIT)
    epochs = {b: register(b, unfence=True) for b in range(4)}
    _topic(api, tokens["admin"], "big", 250, leader=0)
    _report("big-report", 0, epochs[0], {"big": 250})
    runtime = get_runtime()
    handle_batch = runtime.handle_batch
    commits: list[tuple[int, int]] = []  # (records, log end) per commit of the report
    between: list[bool] = []

    def observed(events: Sequence[ControllerEvent]) -> list[ControllerAnswer]:
        answers = handle_batch(events)
        commits.append((len(events), runtime.image.last_offset))
        # Another thread's event gets the controller between two slices (it would wait for
        # the whole report if one commit held it).
        other = threading.Thread(target=lambda: between.append(bool(handle_batch([_fence()]))))
        other.start()
        other.join(timeout=10)
        return answers

    monkeypatch.setattr(runtime, "handle_batch", observed)
    assert replica_state_apply_pending() == 1
    assert len(commits) == 3 and between == [True, True, True]
    changes = MetadataRecord.objects.filter(record_type="PartitionChangeRecord")
    by_request = {r: changes.filter(request_id=r).count() for r in ("big-report", "big-report/1")}
    assert by_request == {"big-report": LIMIT, "big-report/1": LIMIT}
    assert changes.filter(request_id="big-report/2").count() == 50
    assert metadata_verify() == []
    # A retry of the whole report (a controller that failed over before deleting the row)
    # applies nothing twice: each slice is a write of its own, found by its id.
    end = runtime.image.last_offset
    monkeypatch.setattr(runtime, "handle_batch", handle_batch)
    _report("big-report", 0, epochs[0], {"big": 250})
    assert replica_state_apply_pending() == 1
    assert runtime.image.last_offset == end


def _fence() -> ControllerEvent:
    return ControllerEvent("FenceStaleBrokers")


def test_fencing_rounds_go_on_while_a_job_runs(monkeypatch: pytest.MonkeyPatch) -> None:
    runtime = get_runtime()
    runtime.ensure_active()
    release = threading.Event()
    started = threading.Event()

    def slow_job(_: Any) -> None:
        started.set()
        release.wait(timeout=20)

    monkeypatch.setattr(controller_module, "TIMER_JOBS", [slow_job])
    stop = threading.Event()
    timer = threading.Thread(target=runtime.run_forever, args=(stop, 0.05), daemon=True)
    timer.start()
    try:
        assert started.wait(timeout=10)
        rounds = runtime.timer_lag.rounds
        deadline = time.monotonic() + 10
        while runtime.timer_lag.rounds < rounds + 3 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert runtime.timer_lag.rounds >= rounds + 3  # the job is still blocked meanwhile
        assert not release.is_set()
    finally:
        release.set()
        stop.set()
        timer.join(timeout=10)
