"""The request channel to the controller on a real Redis, served by the real controller."""

from __future__ import annotations

import contextlib
import dataclasses
import json
import socket
import threading
import uuid
from typing import Any

import pytest
import redis

from controlplane import services
from controlplane.controller.errors import ApiError, Errors
from controlplane.controller.features import BOOTSTRAP_FEATURES
from controlplane.models import Cluster, MetadataRecord
from controlplane.runtime import metadata_log
from controlplane.runtime.channel import ChannelConsumer, ControllerChannel, never_sent
from controlplane.runtime.controller import get_runtime
from controlplane.runtime.conversation import (
    AuditEnvelope,
    ControllerAnswer,
    ControllerEvent,
    Forwarding,
    RequestContext,
)
from controlplane.runtime.executor import DistributedExecutor
from controlplane.runtime.lease import cluster_get_or_create, now_ms
from devtools.stack import host_and_port, redis_url
from tests.audit_workload import acl
from tests.conftest import registration_body

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]

URL = redis_url()  # shared with other runs: every key goes under the test's `key_prefix`


def registration(broker_id: int) -> ControllerEvent:
    return ControllerEvent(
        "BrokerRegistration",
        registration_body(broker_id, cluster_get_or_create().cluster_id),
        RequestContext(principal="User:test", request_id=str(uuid.uuid4())),
    )


def test_events_that_wait_together_are_one_batch_and_each_sender_gets_its_answer(
    shared_redis: Any, key_prefix: str
) -> None:
    runtime = get_runtime()
    consumer = ChannelConsumer(URL, runtime.handle_batch, key_prefix=key_prefix)
    channel = ControllerChannel(URL, longest_wait_s=10, key_prefix=key_prefix)
    events = {broker_id: registration(broker_id) for broker_id in range(1, 9)}
    answers: dict[int, ControllerAnswer | None] = {}

    def send(broker_id: int) -> None:
        answers[broker_id] = channel.request(events[broker_id], timeout_ms=10_000)

    threads = [threading.Thread(target=send, args=(i,)) for i in events]
    for thread in threads:
        thread.start()
    while shared_redis.llen(channel.requests_key) < len(events):  # nobody serves yet: they all wait
        threading.Event().wait(0.01)
    assert consumer.serve_once(wait_s=1) == 8  # one batch, one commit
    for thread in threads:
        thread.join(timeout=10)
    assert all(a is not None for a in answers.values())
    got = {i: a.response for i, a in answers.items() if a is not None}
    assert {i: a["error_code"] for i, a in got.items()} == dict.fromkeys(events, 0)
    epochs = sorted(int(a["broker_epoch"]) for a in got.values())
    # each got its own registration's offset, after the log's bootstrap features
    first = len(BOOTSTRAP_FEATURES)
    assert epochs == list(range(first, first + 8))
    assert MetadataRecord.objects.count() == first + 8  # the features in the same commit
    assert len(set(MetadataRecord.objects.values_list("timestamp_ms", flat=True))) == 1


def test_no_controller_means_no_answer_in_time(shared_redis: Any, key_prefix: str) -> None:
    channel = ControllerChannel(URL, longest_wait_s=1, key_prefix=key_prefix)
    assert channel.request(registration(1), timeout_ms=200) is None
    assert (
        shared_redis.llen(channel.requests_key) == 1
    )  # it waits for a controller (with its deadline)


def test_an_answer_nobody_waits_for_expires(shared_redis: Any, key_prefix: str) -> None:
    consumer = ChannelConsumer(URL, get_runtime().handle_batch, key_prefix=key_prefix)
    event = {**registration(1).to_wire(), "reply_to": consumer.reply_prefix + "gone"}
    shared_redis.rpush(consumer.requests_key, json.dumps(event))
    consumer.serve_once(wait_s=1)
    assert 0 < shared_redis.ttl(consumer.reply_prefix + "gone") <= 60


def test_an_undecodable_event_is_dropped_and_the_rest_is_served(
    shared_redis: Any, key_prefix: str
) -> None:
    channel = ControllerChannel(URL, longest_wait_s=5, key_prefix=key_prefix)
    shared_redis.rpush(channel.requests_key, b"\xff not json", b"[1, 2]")
    answers: list[ControllerAnswer | None] = []
    event = registration(3)
    sender = threading.Thread(
        target=lambda: answers.append(channel.request(event, timeout_ms=5000))
    )
    sender.start()
    while shared_redis.llen(channel.requests_key) < 3:
        threading.Event().wait(0.01)
    consumer = ChannelConsumer(URL, get_runtime().handle_batch, key_prefix=key_prefix)
    assert consumer.serve_once(wait_s=1) == 1
    sender.join(timeout=10)
    (answer,) = answers
    assert answer is not None and answer.error_code == 0


class CutAfterBlpop:
    """A TCP proxy to the real Redis that breaks the connection once a BLPOP went through it:
    Redis took the RPUSH before it, and the sender never sees an answer."""

    def __init__(self, upstream: tuple[str, int]) -> None:
        self.upstream = upstream
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.cut = threading.Event()
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        with contextlib.suppress(OSError):
            while True:
                client, _ = self.listener.accept()
                server = socket.create_connection(self.upstream)
                threading.Thread(target=self._pipe, args=(server, client), daemon=True).start()
                threading.Thread(
                    target=self._pipe, args=(client, server, True), daemon=True
                ).start()

    def _pipe(self, source: socket.socket, sink: socket.socket, watch: bool = False) -> None:
        with contextlib.suppress(OSError):
            while chunk := source.recv(65536):
                sink.sendall(chunk)
                if watch and b"BLPOP" in chunk.upper():
                    self.cut.set()
                    source.close()
                    sink.close()
                    return

    def close(self) -> None:
        """Refuse every connection from now on (shut down first: a close alone leaves the port
        listening while `accept` blocks on it)."""
        with contextlib.suppress(OSError):
            self.listener.shutdown(socket.SHUT_RDWR)
        self.listener.close()


def test_a_channel_broken_after_the_send_is_no_answer_and_the_retry_finds_the_commit(
    shared_redis: Any, key_prefix: str
) -> None:
    """Not "not applied": the event went out, and a controller applies it; the retry (the same
    request id, as `_call_until_deadline` sends it) gets the answer of that one commit."""
    proxy = CutAfterBlpop(host_and_port(URL, 6379))
    try:
        url = URL.replace(f":{host_and_port(URL, 6379)[1]}", f":{proxy.port}", 1)
        broken = ControllerChannel(url, longest_wait_s=5, key_prefix=key_prefix)
        event = registration(7)
        assert broken.request(event, timeout_ms=5000) is None
        assert proxy.cut.is_set()
    finally:
        proxy.close()
    assert shared_redis.llen(broken.requests_key) == 1  # it went out: a controller takes it
    consumer = ChannelConsumer(URL, get_runtime().handle_batch, key_prefix=key_prefix)
    assert consumer.serve_once(wait_s=1) == 1
    channel = ControllerChannel(URL, longest_wait_s=5, key_prefix=key_prefix)
    retried: list[ControllerAnswer | None] = []
    sender = threading.Thread(
        target=lambda: retried.append(channel.request(event, timeout_ms=5000))
    )
    sender.start()
    while shared_redis.llen(channel.requests_key) < 1:
        threading.Event().wait(0.01)
    assert consumer.serve_once(wait_s=1) == 1
    sender.join(timeout=10)
    (answer,) = retried
    assert answer is not None and answer.error_code == 0
    registrations = MetadataRecord.objects.filter(record_type="RegisterBrokerRecord")
    assert registrations.count() == 1  # applied once
    assert int(answer.response["broker_epoch"]) == registrations.get().offset


def test_a_retry_refused_after_a_send_that_broke_answers_timed_out_never_not_applied(
    shared_redis: Any, key_prefix: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The first attempt went out and its connection broke; then Redis refuses every connection
    (restarting). The refused retries prove nothing of the first attempt, which a controller may
    have applied: the deadline answers REQUEST_TIMED_OUT, never NOT_CONTROLLER or a store's
    "unavailable" (both say "not applied", and a client that resends then finds its write)."""
    proxy = CutAfterBlpop(host_and_port(URL, 6379))
    url = URL.replace(f":{host_and_port(URL, 6379)[1]}", f":{proxy.port}", 1)
    channel = ControllerChannel(url, longest_wait_s=5, key_prefix=key_prefix)
    attempts: list[ControllerAnswer | Exception | None] = []
    send = channel.request

    def attempt_then_redis_goes_away(event: ControllerEvent, timeout_ms: int) -> Any:
        try:
            attempts.append(send(event, timeout_ms))
        except redis.ConnectionError as error:
            attempts.append(error)
            raise
        finally:
            proxy.close()  # every later connect is refused
        return attempts[-1]

    monkeypatch.setattr(channel, "request", attempt_then_redis_goes_away)
    monkeypatch.setattr(services, "executor", lambda: DistributedExecutor(channel))
    event = dataclasses.replace(registration(8), deadline_ms=now_ms() + 1500)
    with pytest.raises(ApiError) as answered:
        services._call_until_deadline(event)
    assert answered.value.error is Errors.REQUEST_TIMED_OUT, answered.value
    assert attempts[0] is None and proxy.cut.is_set()  # the first went out, no answer
    assert len(attempts) > 1 and all(never_sent(a) for a in attempts[1:])  # type: ignore[arg-type]
    assert shared_redis.llen(channel.requests_key) == 1  # it went out: a controller may take it


def test_a_redis_that_refuses_the_connection_means_nothing_was_sent(key_prefix: str) -> None:
    with socket.create_server(("127.0.0.1", 0)) as placeholder:
        port = placeholder.getsockname()[1]
    channel = ControllerChannel(
        f"redis://127.0.0.1:{port}/0", longest_wait_s=1, key_prefix=key_prefix
    )
    with pytest.raises(redis.ConnectionError) as refused:
        channel.request(registration(1), timeout_ms=200)
    assert never_sent(refused.value)


def acl_creation(principal: str, forwarding: Forwarding | None) -> ControllerEvent:
    rule = acl("orders", principal, "READ")
    return ControllerEvent(
        "CreateAcls",
        {"creations": [rule]},
        RequestContext(principal="User:admin", request_id=str(uuid.uuid4())),
        audit=AuditEnvelope("CreateAcls", now_ms(), forwarding),
    )


def test_a_write_a_broker_forwarded_in_kafkas_protocol_is_answered_once_the_log_holds_it(
    shared_redis: Any, key_prefix: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Held in the tables' transaction, the commit has answered the write a broker forwarded
    in an Envelope on the Kafka protocol (its client reads through the brokers, which follow
    the log), and not the same write sent to the REST API or in a REST Envelope, whose readers
    read the tables: those are answered once the tables follow."""
    tables_held, tables_go = threading.Event(), threading.Event()
    project = metadata_log._project

    def held(*args: Any) -> None:
        tables_held.set()
        assert tables_go.wait(10)
        project(*args)

    monkeypatch.setattr(metadata_log, "_project", held)
    consumer = ChannelConsumer(URL, get_runtime().handle_batch, key_prefix=key_prefix)
    channel = ControllerChannel(URL, longest_wait_s=10, key_prefix=key_prefix)
    kafka_envelope = Forwarding("User:broker", "10.0.0.1", 1, kafka_protocol=True)
    events = {
        "kafka envelope": acl_creation("User:a", kafka_envelope),
        "rest envelope": acl_creation("User:b", Forwarding("User:broker", "10.0.0.1", 1)),
        "rest": acl_creation("User:c", None),
    }
    answers: dict[str, ControllerAnswer | None] = {}

    def send(name: str) -> None:
        answers[name] = channel.request(events[name], timeout_ms=10_000)

    senders = {name: threading.Thread(target=send, args=(name,)) for name in events}
    for sender in senders.values():
        sender.start()
    while shared_redis.llen(channel.requests_key) < len(events):
        threading.Event().wait(0.01)
    serving = threading.Thread(target=consumer.serve_once, kwargs={"wait_s": 1})
    serving.start()
    assert tables_held.wait(10)
    senders["kafka envelope"].join(timeout=10)
    early = answers["kafka envelope"]
    assert early is not None and early.error_code == 0 and early.ahead_of_tables
    assert early.offsets is not None
    assert senders["rest"].is_alive() and senders["rest envelope"].is_alive()
    assert Cluster.objects.get(pk=1).projected_offset < early.offsets[1]  # the tables trail
    tables_go.set()
    serving.join(timeout=10)
    for name in ("rest", "rest envelope"):
        senders[name].join(timeout=10)
        answer = answers[name]
        assert answer is not None and answer.error_code == 0 and not answer.ahead_of_tables
        assert answer.offsets is not None
    # one batch: the tables follow its last record, whichever of the three the batch took last
    last = max(answer.offsets[1] for answer in answers.values() if answer and answer.offsets)
    assert last >= early.offsets[1]
    assert Cluster.objects.get(pk=1).projected_offset == last
