"""A heartbeat that changes its broker's state waits for a busy controller only so long
(`CP_HEARTBEAT_PATIENCE_MS`): then it is answered with the broker's state as committed, and the
controller applies it in its turn, with every heartbeat that queued meanwhile, in one commit.
The real request channel on a real Redis, served by this process's real controller; "busy" is
a controller that has not taken its queue yet (nothing served until the test says so)."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

import pytest

from brokers import services
from brokers.models import Broker
from controlplane import services as controller_services
from controlplane.models import MetadataRecord
from controlplane.runtime.channel import ChannelConsumer, ControllerChannel
from controlplane.runtime.controller import get_runtime
from controlplane.runtime.conversation import ControllerEvent, RequestContext
from controlplane.runtime.executor import DistributedExecutor
from controlplane.runtime.lease import cluster_get_or_create
from devtools.stack import redis_url
from tests.conftest import heartbeat_body, registration_body

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]

URL = redis_url()
BROKERS = (1, 2, 3)
CAUGHT_UP = 10**12


@pytest.fixture
def channel(key_prefix: str, monkeypatch: pytest.MonkeyPatch) -> Iterator[ControllerChannel]:
    """The web node's executor is the request channel (a distributed deployment's)."""
    channel = ControllerChannel(URL, longest_wait_s=10, key_prefix=key_prefix)
    monkeypatch.setattr(controller_services, "executor", lambda: DistributedExecutor(channel))
    controller_services.BUSY_CONTROLLER.found_free()
    yield channel
    controller_services.BUSY_CONTROLLER.found_free()


@pytest.fixture
def consumer(key_prefix: str) -> ChannelConsumer:
    return ChannelConsumer(URL, get_runtime().handle_batch, key_prefix=key_prefix)


def registered() -> dict[int, int]:
    """Brokers registered (on the controller itself), fenced: none heartbeated yet."""
    runtime, cluster_id = get_runtime(), cluster_get_or_create().cluster_id
    epochs = {}
    for broker_id in BROKERS:
        event = ControllerEvent(
            "BrokerRegistration",
            registration_body(broker_id, cluster_id),
            RequestContext(principal="User:test"),
        )
        epochs[broker_id] = int(runtime.handle(event).response["broker_epoch"])
    return epochs


def beat(broker_id: int, epoch: int) -> dict[str, Any]:
    return services.broker_heartbeat(
        payload=heartbeat_body(broker_id, epoch, CAUGHT_UP, want_fence=False),
        context=RequestContext(principal="User:broker"),
    )


def unfence_offsets() -> list[tuple[int, int]]:
    return list(
        MetadataRecord.objects.filter(
            record_type="BrokerRegistrationChangeRecord", data__fenced=-1
        ).values_list("offset", "timestamp_ms")
    )


def test_a_busy_controllers_heartbeats_are_answered_as_committed_and_applied_in_one_commit(
    settings: Any, channel: ControllerChannel, consumer: ChannelConsumer, shared_redis: Any
) -> None:
    settings.CP_HEARTBEAT_PATIENCE_MS = 50
    epochs = registered()
    for broker_id, epoch in epochs.items():
        answer = beat(broker_id, epoch)
        # Not "unfenced" (not committed yet), not an error (the heartbeat is not refused).
        assert (answer["error_code"], answer["is_fenced"]) == (0, True), answer
        # Found busy: the next heartbeats are queued without waiting the patience again.
        assert controller_services.BUSY_CONTROLLER.patience_ms(50) == 1
    assert shared_redis.llen(channel.requests_key) == len(BROKERS)  # each waits its turn
    assert Broker.objects.filter(fenced=True).count() == len(BROKERS)
    assert unfence_offsets() == []

    assert consumer.serve_once(wait_s=1) == len(BROKERS)  # one batch
    controller_services.BUSY_CONTROLLER.found_free()  # a moment later
    assert Broker.objects.filter(fenced=True).count() == 0
    unfenced = unfence_offsets()
    assert len(unfenced) == len(BROKERS)
    assert len({timestamp for _, timestamp in unfenced}) == 1  # one commit

    for broker_id, epoch in epochs.items():  # the next heartbeat learns it
        assert beat(broker_id, epoch)["is_fenced"] is False
    assert shared_redis.llen(channel.requests_key) == 0


def test_a_controller_that_answers_in_time_is_heard_and_no_patience_waits_for_it(
    settings: Any, channel: ControllerChannel, consumer: ChannelConsumer
) -> None:
    epochs = registered()
    stop = threading.Event()

    def serve() -> None:
        while not stop.is_set():
            consumer.serve_once(wait_s=0.05)

    server = threading.Thread(target=serve, daemon=True)
    server.start()
    try:
        settings.CP_HEARTBEAT_PATIENCE_MS = 10_000
        assert beat(1, epochs[1])["is_fenced"] is False  # the controller's own answer
        settings.CP_HEARTBEAT_PATIENCE_MS = 0  # no patience: wait for the answer
        assert beat(2, epochs[2])["is_fenced"] is False
    finally:
        stop.set()
        server.join(timeout=10)
    assert set(Broker.objects.filter(fenced=False).values_list("broker_id", flat=True)) == {1, 2}
