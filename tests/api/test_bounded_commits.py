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
from controlplane.runtime import metadata_log
from controlplane.runtime import timer as timer_module
from controlplane.runtime.batch import OUTLIVED_ITS_DEADLINE
from controlplane.runtime.controller import get_runtime
from controlplane.runtime.conversation import ControllerAnswer, ControllerEvent
from controlplane.runtime.lease import now_ms
from controlplane.runtime.replay import metadata_verify
from replicas.models import PendingReplicaStateChange
from replicas.services import payload_slices, replica_state_apply_pending
from tests.conftest import Api, heartbeat_body

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


ThreeSlices = Callable[[str], tuple[str, int]]


@pytest.fixture
def report_of_three_slices(
    api: Api, tokens: dict[str, str], register: Callable[..., int], settings: Any
) -> ThreeSlices:
    """Makes a topic `name` of 250 partitions led by broker 0 and its report naming them all:
    three slices of LIMIT, LIMIT and 50; answers the report's request id and broker 0's
    epoch."""

    def make(name: str) -> tuple[str, int]:
        settings.CP_MAX_PARTITION_CHANGES_PER_COMMIT = LIMIT
        epochs = {b: register(b, unfence=True) for b in range(4)}
        _topic(api, tokens["admin"], name, 250, leader=0)
        _report(f"{name}-report", 0, epochs[0], {name: 250})
        return f"{name}-report", epochs[0]

    return make


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
    report_of_three_slices: ThreeSlices, monkeypatch: pytest.MonkeyPatch
) -> None:
    report, epoch = report_of_three_slices("big")
    runtime = get_runtime()
    handle_batch = runtime.handle_batch
    commits: list[tuple[int, int]] = []  # (records, log end) per commit of the report
    between: list[bool] = []
    follows: list[bool] = []
    vouched: list[bool] = []

    def observed(events: Sequence[ControllerEvent], **options: bool) -> list[ControllerAnswer]:
        answers = handle_batch(events, **options)
        commits.append((len(events), runtime.image.last_offset))
        follows.append(options["more_follows"])
        vouched.append(options["answered_from_the_log"])
        # Another thread's event gets the controller between two slices (it would wait for
        # the whole report if one commit held it).
        other = threading.Thread(target=lambda: between.append(bool(handle_batch([_fence()]))))
        other.start()
        other.join(timeout=10)
        return answers

    monkeypatch.setattr(runtime, "handle_batch", observed)
    assert replica_state_apply_pending() == 1
    assert len(commits) == 3 and between == [True, True, True]
    # The controller is told another slice comes after each but the last: those commits build
    # their tables' statements while the log's are written (log_commit's more_follows).
    assert follows == [True, True, False]
    # Nothing reads the tables for a slice's answer: they wait for the controller's timer
    # (the brokers follow the log), the last slice's too.
    assert vouched == [True, True, True]
    assert len(runtime.tables_behind) == 3
    assert runtime.write_tables_behind(all_of_them=True) is False
    assert not runtime.tables_behind
    _applied_once_each(report)
    # A retry of the whole report (a controller that failed over before deleting the row)
    # applies nothing twice: each slice is a write of its own, found by its id.
    end = runtime.image.last_offset
    monkeypatch.setattr(runtime, "handle_batch", handle_batch)
    _report(report, 0, epoch, {"big": 250})
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

    monkeypatch.setattr(timer_module, "TIMER_JOBS", [slow_job])
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


def _led_by(broker_id: int) -> int:
    image = get_runtime().image
    assert image is not None
    return len(image.topics_image.partitions_led_by(broker_id))


def _fence_rounds_until_done(rounds: int = 20) -> list[int]:
    """The controller's fencing rounds, as its timer runs them; the records of each."""
    runtime = get_runtime()
    written = []
    for _ in range(rounds):
        before = runtime.image.last_offset
        runtime.fence_round()
        written.append(runtime.image.last_offset - before)
        if not runtime.moves_pending:
            break
    return written


def test_fencing_a_broker_that_leads_more_than_a_commit_moves_in_bounded_commits(
    api: Api, tokens: dict[str, str], register: Callable[..., int], settings: Any
) -> None:
    settings.CP_MAX_PARTITION_CHANGES_PER_COMMIT = LIMIT
    for b in range(4):
        register(b, unfence=True)
    _topic(api, tokens["admin"], "led", 250, leader=0)
    runtime = get_runtime()
    runtime.fence_round()  # the first round after activation finds nothing left over
    assert not runtime.moves_pending
    now = now_ms()
    for b in range(4):  # broker 0 silent past its session; the others heard
        runtime.sessions.touch(b, now_ms=now - 60_000 if b == 0 else now, metadata_offset=10**12)
    written = _fence_rounds_until_done()
    assert written == [1 + LIMIT, LIMIT, 50]  # the fence, then what it led, 100 a commit
    assert _led_by(0) == 0
    assert not runtime.moves_pending
    assert metadata_verify() == []


def _four_brokers_one_leading_250(
    api: Api, tokens: dict[str, str], register: Callable[..., int]
) -> dict[int, int]:
    """Four unfenced brokers, every one heard and caught up; broker 1 leads 250 partitions.
    Their epochs."""
    epochs = {b: register(b, unfence=True) for b in range(4)}
    _topic(api, tokens["admin"], "led", 250, leader=1)
    runtime = get_runtime()
    runtime.fence_round()
    for b in range(4):
        runtime.sessions.touch(b, now_ms=now_ms(), metadata_offset=10**12)
    return epochs


def _shutdown_heartbeat(api: Api, token: str, broker_id: int, epoch: int) -> dict[str, Any]:
    """A heartbeat asking to shut down, from a broker that has seen every offset."""
    status, body = api.post(
        "/internal/v1/broker-heartbeat",
        {
            "broker_id": broker_id,
            "broker_epoch": epoch,
            "current_metadata_offset": 10**12,
            "want_shut_down": True,
        },
        token=token,
    )
    assert status == 200, body
    return body


def test_a_controlled_shutdown_moves_in_bounded_commits_and_is_told_to_stop_after(
    api: Api, tokens: dict[str, str], register: Callable[..., int], settings: Any
) -> None:
    settings.CP_MAX_PARTITION_CHANGES_PER_COMMIT = LIMIT
    settings.CP_MAX_SHUTDOWN_CHANGES_PER_COMMIT = LIMIT
    epochs = _four_brokers_one_leading_250(api, tokens, register)
    runtime = get_runtime()

    def shutdown_heartbeat() -> dict[str, Any]:
        return _shutdown_heartbeat(api, tokens["broker"], 1, epochs[1])

    first = shutdown_heartbeat()
    assert not first["should_shut_down"]
    assert runtime.moves_pending and _led_by(1) == 150  # 100 moved in its commit
    assert _fence_rounds_until_done() == [LIMIT, 50]  # the rest, 100 a commit
    assert _led_by(1) == 0
    assert shutdown_heartbeat()["should_shut_down"]
    assert metadata_verify() == []


def test_a_controlled_shutdown_moves_up_to_its_own_bound_in_one_commit(
    api: Api,
    tokens: dict[str, str],
    register: Callable[..., int],
    settings: Any,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The heartbeat that begins a controlled shutdown is one operation, bounded as Kafka bounds
    one (CP_MAX_SHUTDOWN_CHANGES_PER_COMMIT): a broker leading up to that many hands every
    leadership over in its one commit; what is left beyond it follows in the fencing rounds'
    own (smaller) bound."""
    settings.CP_MAX_PARTITION_CHANGES_PER_COMMIT = LIMIT
    settings.CP_MAX_SHUTDOWN_CHANGES_PER_COMMIT = 2 * LIMIT
    epochs = _four_brokers_one_leading_250(api, tokens, register)
    runtime = get_runtime()
    before = MetadataRecord.objects.count()
    built_ahead: list[bool] = []  # a commit that built its tables' statements ahead
    build_while = metadata_log._Prebuilt.build_while

    def observed(tables: Any, busy: Any) -> None:
        built_ahead.append(True)  # (no query here: the log's statements own the connection)
        build_while(tables, busy)

    monkeypatch.setattr(metadata_log._Prebuilt, "build_while", observed)
    body = _shutdown_heartbeat(api, tokens["broker"], 1, epochs[1])
    assert body["error_code"] == 0 and not body["should_shut_down"], body
    # One commit: the broker's registration change and 200 partition changes.
    assert MetadataRecord.objects.count() - before == 1 + 2 * LIMIT
    assert _led_by(1) == 50 and runtime.moves_pending
    # Moves are left for the next round, at once: that commit was shortened as a whole; the
    # round that ends them is not followed, and only its log's transaction counts.
    assert built_ahead == [True]
    assert _fence_rounds_until_done() == [50]
    assert len(built_ahead) == 1
    assert _led_by(1) == 0
    assert metadata_verify() == []


def test_an_unfencing_heartbeat_wakes_the_timer_for_its_elections(
    api: Api, tokens: dict[str, str], register: Callable[..., int]
) -> None:
    """The unfencing commits alone and leaves its elections pending: the timer, asleep for a
    whole interval (a minute here), wakes at once and elects, as Kafka elects in the unfencing's
    own batch; without the wake-up the partition would stay leaderless for that minute."""
    from tests.api.test_replication_api import BEAT, Kafka, log_end

    kafka = Kafka(api, tokens, register)
    kafka.register(1, 2)
    kafka.create_topic("woken", [[1, 2]])
    kafka.fence(1, 2)
    assert kafka.partition("woken", 0)["leader_id"] == -1
    runtime = get_runtime()
    stop = threading.Event()
    timer = threading.Thread(target=runtime.run_forever, args=(stop, 60.0), daemon=True)
    timer.start()
    try:
        deadline = time.monotonic() + 10
        while runtime.moves_pending and time.monotonic() < deadline:  # its first round
            time.sleep(0.05)
        status, body = api.post(
            BEAT, heartbeat_body(2, kafka.epochs[2], log_end()), token=tokens["broker"]
        )
        assert status == 200 and body["is_fenced"] is False, body
        deadline = time.monotonic() + 20
        while kafka.partition("woken", 0)["leader_id"] != 2:
            assert time.monotonic() < deadline, "the timer slept through the pending election"
            time.sleep(0.05)
    finally:
        stop.set()
        timer.join(timeout=10)
    assert not timer.is_alive()  # it stops within its poll, not after its interval


def _applied_once_each(request_id: str) -> None:
    """The report is gone from the table and each of its slices was written once."""
    assert not PendingReplicaStateChange.objects.exists()
    changes = MetadataRecord.objects.filter(record_type="PartitionChangeRecord")
    ids = (request_id, f"{request_id}/1", f"{request_id}/2")
    assert [changes.filter(request_id=r).count() for r in ids] == [LIMIT, LIMIT, 50]
    assert metadata_verify() == []


def test_every_slice_of_a_report_gets_a_whole_request_timeout(
    report_of_three_slices: ThreeSlices, monkeypatch: pytest.MonkeyPatch, settings: Any
) -> None:
    """A report of a million partitions is applied over half a minute: its last slices, sent
    long after the first, are still applied (each slice's deadline runs from when it is sent),
    never answered REQUEST_TIMED_OUT and dropped with the report."""
    report, _ = report_of_three_slices("slow")
    settings.CP_REQUEST_TIMEOUT_MS = 400
    runtime = get_runtime()
    handle_batch = runtime.handle_batch

    def slow_controller(
        events: Sequence[ControllerEvent], **options: bool
    ) -> list[ControllerAnswer]:
        time.sleep(0.25)  # three slices: the last one is sent over 400 ms after the first
        return handle_batch(events, **options)

    monkeypatch.setattr(runtime, "handle_batch", slow_controller)
    assert replica_state_apply_pending() == 1
    _applied_once_each(report)


def test_a_slice_whose_outcome_is_unknown_leaves_the_report_waiting_whole(
    report_of_three_slices: ThreeSlices, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A slice answered REQUEST_TIMED_OUT may or may not have been applied: the report stays
    waiting, and the next round applies the rest, each slice once."""
    report, _ = report_of_three_slices("unknown")
    runtime = get_runtime()
    handle_batch = runtime.handle_batch
    calls: list[int] = []

    def second_answer_lost(
        events: Sequence[ControllerEvent], **options: bool
    ) -> list[ControllerAnswer]:
        # applied; its answer lost, as a commit's may be
        answers = handle_batch(events, **options)
        calls.append(len(events))
        if len(calls) == 2:
            return [ControllerAnswer.refusal(OUTLIVED_ITS_DEADLINE) for _ in events]
        return answers

    monkeypatch.setattr(runtime, "handle_batch", second_answer_lost)
    assert replica_state_apply_pending() == 0
    assert PendingReplicaStateChange.objects.filter(request_id=report).exists()
    assert len(calls) == 2, "nothing sent after a slice whose outcome is unknown"
    monkeypatch.setattr(runtime, "handle_batch", handle_batch)
    assert replica_state_apply_pending() == 1
    _applied_once_each(report)
