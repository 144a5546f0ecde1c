"""The controller runtime on the real database: deadlines, retries, fencing of its own image."""

from __future__ import annotations

import dataclasses
import time
import uuid
from collections.abc import Sequence

import pytest

from brokers.models import Broker
from controlplane.controller.features import BOOTSTRAP_FEATURES
from controlplane.models import Cluster, MetadataRecord
from controlplane.runtime.controller import get_runtime
from controlplane.runtime.conversation import ControllerAnswer, ControllerEvent, RequestContext
from controlplane.runtime.lease import cluster_get_or_create, now_ms
from tests.conftest import registration_body

pytestmark = pytest.mark.django_db

# A new cluster's first commit starts with Kafka's bootstrap FeatureLevelRecords.
FIRST = len(BOOTSTRAP_FEATURES)


def registration_event(broker_id: int, *, deadline_ms: int | None = None) -> ControllerEvent:
    return ControllerEvent(
        "BrokerRegistration",
        registration_body(broker_id, cluster_get_or_create().cluster_id),
        RequestContext(principal="User:test", request_id=str(uuid.uuid4())),
        deadline_ms=deadline_ms,
    )


def test_an_event_past_its_deadline_is_answered_timed_out_and_not_applied():
    runtime = get_runtime()
    answer = runtime.handle(registration_event(1, deadline_ms=now_ms() - 1)).response
    assert answer["error_code"] == 7 and answer["error"] == "REQUEST_TIMED_OUT"
    assert not MetadataRecord.objects.exists() and not Broker.objects.exists()


def test_a_batch_applies_in_order_with_gap_free_offsets_and_per_event_answers():
    runtime = get_runtime()
    events = [registration_event(1), registration_event(2), registration_event(1)]
    answers = [answer.response for answer in runtime.handle_batch(events)]
    assert [a["error_code"] for a in answers] == [0, 0, 101]  # the third: a live duplicate
    assert [a.get("broker_epoch") for a in answers[:2]] == [FIRST, FIRST + 1]
    assert list(MetadataRecord.objects.values_list("offset", "request_id")) == [
        *((offset, "") for offset in range(FIRST)),
        (FIRST, events[0].context.request_id),
        (FIRST + 1, events[1].context.request_id),
    ]


def test_a_retried_request_id_answers_the_first_outcome_without_reapplying():
    runtime = get_runtime()
    event = registration_event(1)
    first = runtime.handle(event)
    again = runtime.handle(event)  # the broker's retry: the same request, the same id
    # The same answer, with the offsets the first one wrote (the audit trail's); only when the
    # controller took it differs.
    assert first.handled_ms is not None and again.handled_ms is not None
    assert first.handled_ms <= again.handled_ms
    assert dataclasses.replace(again, handled_ms=None) == dataclasses.replace(
        first, handled_ms=None
    )
    assert first.offsets == (FIRST, FIRST)
    assert MetadataRecord.objects.count() == FIRST + 1
    # Another request (a new incarnation) with that id is refused, never answered the first's.
    other = dataclasses.replace(
        event, payload=registration_body(1, cluster_get_or_create().cluster_id)
    )
    refused = runtime.handle(other)
    assert refused.error_code == 42 and refused.notes.get("request_id_reused")
    assert MetadataRecord.objects.count() == FIRST + 1


def test_a_log_that_moved_under_the_controller_fences_it_until_it_reloads():
    runtime = get_runtime()
    runtime.handle(registration_event(1))
    lease = runtime.lease
    # Someone else wrote (a split brain the lease should have prevented): the end moves on.
    Cluster.objects.filter(pk=1).update(last_offset=FIRST + 5)
    refused = runtime.handle(registration_event(2)).response
    assert refused["error"] == "NOT_CONTROLLER" and "moved" in refused["error_message"]
    assert runtime.lease is None and runtime.image is None  # stepped down, image dropped
    assert not Broker.objects.filter(pk=2).exists()
    # Its lease is still valid in the row, so it takes it back and reloads the image.
    Cluster.objects.filter(pk=1).update(last_offset=FIRST)
    again = runtime.handle(registration_event(2)).response
    assert again["error_code"] == 0 and again["broker_epoch"] == FIRST + 1
    assert runtime.lease is not None and lease is not None
    assert runtime.lease.epoch == lease.epoch  # same holder re-acquired: no new epoch


@pytest.mark.django_db(transaction=True)
def test_events_waiting_together_commit_together() -> None:
    import threading

    runtime = get_runtime()
    runtime.handle(registration_event(1))  # active, with an image
    batches: list[int] = []
    handle_batch = runtime.handle_batch

    def counted(events: Sequence[ControllerEvent]) -> list[ControllerAnswer]:
        batches.append(len(events))
        return handle_batch(events)

    runtime.handle_batch = counted  # before the batcher starts: it is handed this one
    runtime.start_batching()
    answers: dict[int, ControllerAnswer] = {}

    events = {broker_id: registration_event(broker_id) for broker_id in range(2, 12)}

    def send(broker_id: int) -> None:
        answers[broker_id] = runtime.submit(events[broker_id])

    def wait_until_waiting(count: int) -> None:
        waiting = runtime._batcher._waiting
        deadline = time.monotonic() + 10
        while waiting.qsize() != count and time.monotonic() < deadline:
            time.sleep(0.005)
        assert waiting.qsize() == count

    threads = [threading.Thread(target=send, args=(i,)) for i in range(2, 12)]
    with runtime._lock:  # the controller is busy: everything sent meanwhile waits together
        threads[0].start()
        wait_until_waiting(0)  # the batcher took the first event and waits for the controller
        for thread in threads[1:]:
            thread.start()
        wait_until_waiting(9)
    for thread in threads:
        thread.join(timeout=10)
    assert sorted(answers) == list(range(2, 12))
    assert all(a.error_code == 0 for a in answers.values())
    assert batches == [1, 9]  # the one taken first, then the nine that waited
    epochs = sorted(int(a.response["broker_epoch"]) for a in answers.values())
    assert epochs == list(range(FIRST + 1, FIRST + 11))  # gap-free offsets across batches
    assert MetadataRecord.objects.count() == FIRST + 11


@pytest.mark.django_db(transaction=True)
def test_a_failed_batch_fails_its_callers_and_the_next_batch_still_runs() -> None:
    runtime = get_runtime()
    handle_batch = runtime.handle_batch
    calls: list[int] = []

    def fails_once(events: Sequence[ControllerEvent]) -> list[ControllerAnswer]:
        calls.append(len(events))
        if len(calls) == 1:
            raise RuntimeError("the database went away")
        return handle_batch(events)

    runtime.handle_batch = fails_once  # before the batcher starts: it is handed this one
    runtime.start_batching()
    with pytest.raises(RuntimeError):
        runtime.submit(registration_event(1))
    assert runtime.submit(registration_event(1)).error_code == 0


def test_a_controller_whose_image_loads_longer_than_its_lease_still_takes_over(monkeypatch):
    """A large cluster's image may take longer to load than a lease lasts: the controller keeps
    the lease it took (nobody took it over meanwhile) and commits, instead of losing it before
    its first commit and loading again forever."""
    from controlplane.runtime import controller as runtime_module

    runtime = get_runtime()
    runtime.handle(registration_event(1))
    runtime.resign()
    real_load = runtime_module.load_image

    def slow_load(cluster_id: str, last_offset: int):
        image = real_load(cluster_id, last_offset)
        time.sleep((runtime.lease_ms + 300) / 1000)  # the lease lapses while it loads
        return image

    monkeypatch.setattr(runtime, "lease_ms", 400)
    monkeypatch.setattr(runtime_module, "load_image", slow_load)
    answer = runtime.handle(registration_event(2)).response
    assert answer["error_code"] == 0, answer
    assert Broker.objects.filter(pk=2).exists()


def test_a_controller_that_was_taken_over_while_loading_stays_standby(monkeypatch):
    from controlplane.runtime import controller as runtime_module

    runtime = get_runtime()
    runtime.handle(registration_event(1))
    runtime.resign()
    real_load = runtime_module.load_image

    def load_then_lose_it(cluster_id: str, last_offset: int):
        image = real_load(cluster_id, last_offset)
        Cluster.objects.filter(pk=1).update(
            lease_holder="another", controller_epoch=99, lease_expires_ms=now_ms() + 60_000
        )
        return image

    monkeypatch.setattr(runtime_module, "load_image", load_then_lose_it)
    answer = runtime.handle(registration_event(2)).response
    assert answer["error"] == "NOT_CONTROLLER" and "took over" in answer["error_message"]
    assert runtime.lease is None and not Broker.objects.filter(pk=2).exists()
