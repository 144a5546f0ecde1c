"""The request channel to the controller on a real Redis, served by the real controller."""

from __future__ import annotations

import json
import threading
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from controlplane.channel import (
    REPLY_PREFIX,
    REQUESTS_KEY,
    ChannelConsumer,
    ControllerChannel,
)
from controlplane.lease import cluster_get_or_create
from controlplane.models import MetadataRecord
from controlplane.runtime import get_runtime
from tests.conftest import need_service, registration_body

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]

URL = "redis://127.0.0.1:6379/9"


@pytest.fixture
def redis_db() -> Iterator[Any]:
    need_service("Redis", "127.0.0.1", 6379)
    import redis

    client = redis.Redis.from_url(URL)
    client.flushdb()
    yield client
    client.flushdb()


def registration(broker_id: int) -> dict[str, Any]:
    return {
        "api": "BrokerRegistration",
        "payload": registration_body(broker_id, cluster_get_or_create().cluster_id),
        "principal": "User:test",
        "request_id": str(uuid.uuid4()),
    }


def test_events_that_wait_together_are_one_batch_and_each_sender_gets_its_answer(
    redis_db: Any,
) -> None:
    runtime = get_runtime()
    consumer = ChannelConsumer(URL, runtime.handle_batch)
    channel = ControllerChannel(URL, longest_wait_s=10)
    events = {broker_id: registration(broker_id) for broker_id in range(1, 9)}
    answers: dict[int, Any] = {}

    def send(broker_id: int) -> None:
        answers[broker_id] = channel.request(events[broker_id], timeout_ms=10_000)

    threads = [threading.Thread(target=send, args=(i,)) for i in events]
    for thread in threads:
        thread.start()
    while redis_db.llen(REQUESTS_KEY) < len(events):  # nobody serves yet: they all wait
        threading.Event().wait(0.01)
    assert consumer.serve_once(wait_s=1) == 8  # one batch, one commit
    for thread in threads:
        thread.join(timeout=10)
    assert {i: a["error_code"] for i, a in answers.items()} == dict.fromkeys(events, 0)
    epochs = sorted(int(a["broker_epoch"]) for a in answers.values())
    assert epochs == list(range(8))  # each got its own registration's offset
    assert MetadataRecord.objects.count() == 8
    assert len(set(MetadataRecord.objects.values_list("timestamp_ms", flat=True))) == 1


def test_no_controller_means_no_answer_in_time(redis_db: Any) -> None:
    channel = ControllerChannel(URL, longest_wait_s=1)
    assert channel.request(registration(1), timeout_ms=200) is None
    assert redis_db.llen(REQUESTS_KEY) == 1  # it waits for a controller (with its deadline)


def test_an_answer_nobody_waits_for_expires(redis_db: Any) -> None:
    event = {**registration(1), "reply_to": REPLY_PREFIX + "gone"}
    redis_db.rpush(REQUESTS_KEY, json.dumps(event))
    ChannelConsumer(URL, get_runtime().handle_batch).serve_once(wait_s=1)
    assert 0 < redis_db.ttl(REPLY_PREFIX + "gone") <= 60


def test_an_undecodable_event_is_dropped_and_the_rest_is_served(redis_db: Any) -> None:
    channel = ControllerChannel(URL, longest_wait_s=5)
    redis_db.rpush(REQUESTS_KEY, b"\xff not json", b"[1, 2]")
    answer: dict[str, Any] = {}
    event = registration(3)
    sender = threading.Thread(
        target=lambda: answer.update(channel.request(event, timeout_ms=5000) or {})
    )
    sender.start()
    while redis_db.llen(REQUESTS_KEY) < 3:
        threading.Event().wait(0.01)
    assert ChannelConsumer(URL, get_runtime().handle_batch).serve_once(wait_s=1) == 1
    sender.join(timeout=10)
    assert answer["error_code"] == 0
