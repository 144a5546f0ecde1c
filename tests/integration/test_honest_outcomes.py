"""Honest outcomes (issue 33): a write that may have been applied is never answered "not
applied". NOT_CONTROLLER only when nothing reached a controller that could apply it; otherwise
REQUEST_TIMED_OUT (outcome unknown), on every door (they all call `controller_call`)."""

from __future__ import annotations

import threading
import uuid
from collections.abc import Iterator, Sequence
from typing import Any

import pytest
from django.conf import settings
from django.db import connection

from controlplane import services
from controlplane.controller.errors import ApiError, Errors
from controlplane.models import MetadataRecord
from controlplane.runtime.channel import ChannelConsumer, ControllerChannel
from controlplane.runtime.controller import ControllerRuntime, get_runtime
from controlplane.runtime.conversation import ControllerAnswer, ControllerEvent, RequestContext
from controlplane.runtime.executor import DistributedExecutor
from controlplane.runtime.lease import cluster_get_or_create
from controlplane.runtime.sessions import session_store
from devtools.stack import _admin_connection, redis_url
from tests.conftest import need_postgres, registration_body

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]

URL = redis_url()


def registration(broker_id: int) -> dict[str, Any]:
    return registration_body(broker_id, cluster_get_or_create().cluster_id)


def standby_runtime() -> ControllerRuntime:
    """A second controller of the same cluster: while the first holds the lease it answers
    every event NOT_CONTROLLER (it applies nothing)."""
    return ControllerRuntime(
        node_id="standby-" + uuid.uuid4().hex[:6],
        controller_id=2,
        lease_ms=settings.CP_LEASE_MS,
        session_timeout_ms=settings.CP_BROKER_SESSION_TIMEOUT_MS,
        sessions=session_store(),
    )


class Serving:
    """The controller side of the request channel, served in a thread: the first batch by a
    controller that commits it and dies before answering, the rest by `then` (or nobody)."""

    def __init__(self, key_prefix: str, then: ControllerRuntime | None) -> None:
        self.key_prefix = key_prefix
        self.then = then
        self.stop = threading.Event()
        self.died_after_commit: list[list[ControllerAnswer]] = []
        self.thread = threading.Thread(target=self._serve, daemon=True)

    def _dies_after_commit(
        self, events: Sequence[ControllerEvent], on_logged: object = None
    ) -> list[ControllerAnswer]:
        # dies before any answer, even those given once the log holds the batch
        self.died_after_commit.append(get_runtime().handle_batch(events))
        raise RuntimeError("killed between its commit and its answer")

    def _serve(self) -> None:
        dying = ChannelConsumer(URL, self._dies_after_commit, key_prefix=self.key_prefix)
        while not self.stop.is_set() and not dying.serve_once(wait_s=0.2):
            pass
        if self.then is None:
            return
        standby = ChannelConsumer(URL, self.then.handle_batch, key_prefix=self.key_prefix)
        while not self.stop.is_set():
            standby.serve_once(wait_s=0.2)

    def __enter__(self) -> Serving:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        self.thread.join(timeout=10)


@pytest.fixture
def distributed(key_prefix: str, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """The web side of the distributed setup: events travel on the real request channel
    (Redis); one attempt waits at most half a second for its answer."""
    channel = ControllerChannel(URL, longest_wait_s=5, key_prefix=key_prefix)
    monkeypatch.setattr(services, "executor", lambda: DistributedExecutor(channel))
    monkeypatch.setattr(services, "ATTEMPT_TIMEOUT_MS", 500)
    yield


def call(broker_id: int, timeout_ms: int = 3000) -> dict[str, Any]:
    return services.controller_call(
        api="BrokerRegistration",
        payload=registration(broker_id),
        context=RequestContext(principal="User:broker", request_id=str(uuid.uuid4())),
        timeout_ms=timeout_ms,
    )


def test_a_write_committed_by_a_controller_that_died_before_answering_is_not_said_unapplied(
    distributed: None, key_prefix: str
) -> None:
    """The controller commits, dies before its answer; the retries reach a controller without
    the lease (NOT_CONTROLLER) until the deadline. The write is in the log: the answer must be
    REQUEST_TIMED_OUT, not NOT_CONTROLLER (which told kafka-python to retry into
    TOPIC_ALREADY_EXISTS)."""
    get_runtime().ensure_active()
    with Serving(key_prefix, then=standby_runtime()) as serving, pytest.raises(ApiError) as raised:
        call(broker_id=1)
    assert serving.died_after_commit, "the first controller never took the event"
    assert raised.value.error is Errors.REQUEST_TIMED_OUT
    assert "may have been applied" in (raised.value.message or "")
    assert MetadataRecord.objects.filter(record_type="RegisterBrokerRecord").count() == 1


def test_not_controller_when_no_controller_could_have_applied_it(
    distributed: None, key_prefix: str
) -> None:
    get_runtime().ensure_active()  # the lease is held by a controller that serves nothing
    standby = standby_runtime()
    consumer = ChannelConsumer(URL, standby.handle_batch, key_prefix=key_prefix)
    stop = threading.Event()

    def serve() -> None:
        while not stop.is_set():
            consumer.serve_once(wait_s=0.2)

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        with pytest.raises(ApiError) as raised:
            call(broker_id=2, timeout_ms=1500)
    finally:
        stop.set()
        thread.join(timeout=10)
    assert raised.value.error is Errors.NOT_CONTROLLER
    assert not MetadataRecord.objects.exists()


def test_a_commit_that_fails_at_its_commit_answers_request_timed_out_and_reloads(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The server goes away as the COMMIT is sent (its session terminated): the controller
    cannot know whether the records are in the log. It answers REQUEST_TIMED_OUT and drops its
    image; the sender's retry with the same request id then applies it exactly once."""
    need_postgres()
    runtime = get_runtime()
    runtime.ensure_active()
    original_commit = connection.commit
    terminated: list[int] = []

    def commit_as_the_server_dies() -> None:
        if not terminated and not connection.in_atomic_block:
            pid = connection.connection.info.backend_pid
            with _admin_connection() as admin:
                admin.execute("SELECT pg_terminate_backend(%s)", [pid])
            terminated.append(pid)
        original_commit()

    monkeypatch.setattr(connection, "commit", commit_as_the_server_dies)
    context = RequestContext(principal="User:broker", request_id=str(uuid.uuid4()))
    event = ControllerEvent("BrokerRegistration", registration(3), context)
    answer = runtime.handle(event)
    assert terminated
    assert answer.error_code == Errors.REQUEST_TIMED_OUT
    assert answer.outcome_unknown and not answer.not_controller
    assert runtime.image is None  # it cannot know its state: it loads again
    monkeypatch.setattr(connection, "commit", original_commit)
    connection.close()
    retried = runtime.handle(event)
    assert retried.error_code == 0
    assert MetadataRecord.objects.filter(record_type="RegisterBrokerRecord").count() == 1


def test_a_sender_retries_at_once_when_another_controller_serves_the_channel(
    key_prefix: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A controller takes the event and dies with it (nothing committed, nothing answered);
    another starts serving the channel. One attempt alone would wait past the request's
    deadline (REQUEST_TIMED_OUT); the sender sees the new controller, gives the attempt up and
    its retry is answered by the new one: the write is applied, once."""
    channel = ControllerChannel(URL, longest_wait_s=60, key_prefix=key_prefix)
    monkeypatch.setattr(services, "executor", lambda: DistributedExecutor(channel))
    monkeypatch.setattr(services, "ATTEMPT_TIMEOUT_MS", 60_000)
    runtime = get_runtime()
    runtime.ensure_active()
    taken: list[ControllerEvent] = []

    def dies_with_the_batch(
        events: Sequence[ControllerEvent], on_logged: object = None
    ) -> list[ControllerAnswer]:
        taken.extend(events)
        raise RuntimeError("killed as it took the batch")

    stop = threading.Event()

    def serve() -> None:
        dying = ChannelConsumer(URL, dies_with_the_batch, key_prefix=key_prefix)
        while not stop.is_set() and not dying.serve_once(wait_s=0.2):
            pass
        successor = ChannelConsumer(URL, runtime.handle_batch, key_prefix=key_prefix)
        try:
            while not stop.is_set():
                successor.serve_once(wait_s=0.2)
        finally:
            connection.close()  # this thread's own: the test database is dropped after

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        answer = call(broker_id=4, timeout_ms=10_000)
    finally:
        stop.set()
        thread.join(timeout=10)
    assert [event.api for event in taken] == ["BrokerRegistration"]
    assert answer["error_code"] == 0 and answer["broker_epoch"] >= 0
    assert MetadataRecord.objects.filter(record_type="RegisterBrokerRecord").count() == 1
