"""A request id is applied once, however its copies reach the controller (issue 15).

Copies of one request id meet in one batch when a client retries while its first attempt still
waits, or when a web node re-sends an event whose answer did not come. The first copy is applied;
every later copy answers its response and writes nothing. A second write of an id that slipped
past those checks fails its commit loudly and is refused, never applied silently.
"""

from __future__ import annotations

import dataclasses
import itertools
import logging
import uuid
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from audit.models import AuditEvent
from controlplane.controller.errors import ApiError
from controlplane.models import AppliedRequest, Cluster, MetadataRecord
from controlplane.runtime.controller import ControllerRuntime, get_runtime
from controlplane.runtime.conversation import (
    AppliedWrite,
    ControllerAnswer,
    ControllerEvent,
    RequestContext,
)
from controlplane.runtime.lease import cluster_get_or_create, now_ms
from controlplane.runtime.metadata_log import DuplicateWrite, log_commit
from controlplane.runtime.replay import duplicate_writes, metadata_verify
from controlplane.runtime.sessions import session_store
from controlplane.runtime.single_writer import projection_writes_allowed
from tests.conftest import registration_body

pytestmark = pytest.mark.django_db

SET_RETENTION = "IncrementalAlterConfigs"


def retention_event(request_id: str, value: int) -> ControllerEvent:
    config = {"name": "log.retention.ms", "config_operation": "SET", "value": str(value)}
    return ControllerEvent(
        SET_RETENTION,
        {
            "resources": [{"resource_type": "BROKER", "resource_name": "", "configs": [config]}],
            "validate_only": False,
        },
        RequestContext(principal="User:admin", client_id="dedup-test", request_id=request_id),
    )


def records_of(request_id: str) -> list[tuple[int, str]]:
    return list(
        MetadataRecord.objects.filter(request_id=request_id)
        .order_by("offset")
        .values_list("offset", "record_type")
    )


def without_handled(answer: ControllerAnswer) -> ControllerAnswer:
    return dataclasses.replace(answer, handled_ms=None)


def retention_now() -> str | None:
    image = get_runtime().image
    assert image is not None
    return image.configs.get(("BROKER", ""), {}).get("log.retention.ms")


@pytest.mark.parametrize("copies", [2, 3])
def test_copies_of_a_request_id_in_one_batch_apply_once_and_answer_alike(copies: int) -> None:
    runtime = get_runtime()
    request_id = f"dup-{uuid.uuid4().hex}"
    other = f"other-{uuid.uuid4().hex}"
    # The copies ask the same (a client's retry, a web node's resend): the first copy is
    # applied, the others answer alike, and another request between them is applied as usual;
    # a copy asking for something else with the same id is refused (issue 34), never answered
    # the first one's answer.
    events = [retention_event(request_id, 1000)]
    for n in range(1, copies):
        events += [retention_event(other, 5000)] if n == 1 else []
        events.append(retention_event(request_id, 1000))
    events.append(retention_event(request_id, 4242))
    answers = runtime.handle_batch(events)
    reused = answers[-1]
    assert reused.error_code == 42 and reused.notes.get("request_id_reused")
    answers = answers[:-1]
    events = events[:-1]

    mine = [a for e, a in zip(events, answers, strict=True) if e.context.request_id == request_id]
    assert len(mine) == copies
    assert all(a.response["responses"][0]["error_code"] == 0 for a in mine)
    first = without_handled(mine[0])
    assert all(without_handled(a) == first for a in mine[1:])
    ((offset, record_type),) = records_of(request_id)
    assert record_type == "ConfigRecord" and first.offsets == (offset, offset)
    assert len(records_of(other)) == 1
    assert AppliedRequest.objects.filter(request_id=request_id).count() == 1
    assert duplicate_writes() == []


def test_a_copy_in_a_later_batch_answers_the_stored_response() -> None:
    runtime = get_runtime()
    request_id = f"dup-{uuid.uuid4().hex}"
    first = runtime.handle(retention_event(request_id, 1000))
    again = runtime.handle_batch([retention_event(request_id, 1000)] * 2)
    assert [without_handled(a) for a in again] == [without_handled(first)] * 2
    assert len(records_of(request_id)) == 1
    # Another body with that id, in a later batch: refused, nothing written (issue 34).
    other = runtime.handle(retention_event(request_id, 2000))
    assert other.error_code == 42 and other.notes.get("request_id_reused")
    assert len(records_of(request_id)) == 1 and retention_now() == "1000"


def test_state_idempotent_events_are_not_deduplicated() -> None:
    """Heartbeats and the controller's own timer events are evaluated afresh every time."""
    runtime = get_runtime()
    cluster_id = cluster_get_or_create().cluster_id
    registered = runtime.handle(
        ControllerEvent(
            "BrokerRegistration",
            registration_body(1, cluster_id),
            RequestContext(principal="User:broker", request_id="reg-1"),
        )
    ).response
    beat = ControllerEvent(
        "BrokerHeartbeat",
        {
            "broker_id": 1,
            "broker_epoch": registered["broker_epoch"],
            "current_metadata_offset": registered["broker_epoch"],  # caught up to it
            "want_fence": False,
            "want_shut_down": False,
            "offline_log_dirs": [],
        },
        RequestContext(principal="User:broker", request_id="beat-1"),
    )
    unfenced, again = runtime.handle_batch([beat, beat])
    assert unfenced.response["is_fenced"] is False and again.response["is_fenced"] is False
    assert len(records_of("beat-1")) == 1  # the second changed nothing: no record


def test_a_write_whose_id_slipped_past_the_lookup_fails_its_commit_and_is_refused(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    runtime = get_runtime()
    request_id = f"dup-{uuid.uuid4().hex}"
    first = runtime.handle(retention_event(request_id, 1000))
    # The lookup of applied request ids misses (as a stale cache or a racing path would): the
    # commit itself must refuse the second write instead of ignoring the key conflict.
    monkeypatch.setattr("controlplane.runtime.controller._applied_responses", lambda events: {})
    other = f"other-{uuid.uuid4().hex}"
    with caplog.at_level(logging.ERROR, logger="controlplane.controller"):
        again, newer = runtime.handle_batch(
            [retention_event(request_id, 2000), retention_event(other, 3000)]
        )
    assert any("already applied" in r.getMessage() for r in caplog.records)
    refused = again.response
    assert (
        refused["error"] == "UNKNOWN_SERVER_ERROR" and "already applied" in refused["error_message"]
    )
    assert newer.response["responses"][0]["error_code"] == 0  # the rest of the batch committed
    assert len(records_of(request_id)) == 1 and len(records_of(other)) == 1
    assert retention_now() == "3000"
    assert first.offsets == (records_of(request_id)[0][0],) * 2
    assert runtime.is_active()  # a refused event does not cost the controller its lease


def test_the_commit_refuses_two_writes_of_one_request_id() -> None:
    runtime = get_runtime()
    runtime.handle(retention_event(f"warm-{uuid.uuid4().hex}", 1))
    assert runtime.lease is not None and runtime.image is not None
    from controlplane.controller.image import MetadataDelta
    from controlplane.controller.records import ConfigRecord

    delta = MetadataDelta(runtime.image)
    end = runtime.image.last_offset
    context = RequestContext(principal="User:admin", request_id="twice")
    for value in ("1", "2"):
        delta.replay(ConfigRecord("BROKER", "", "log.retention.ms", value))
    writes = [
        AppliedWrite(context, SET_RETENTION, end + 1, end + 1, ControllerAnswer({})),
        AppliedWrite(context, SET_RETENTION, end + 2, end + 2, ControllerAnswer({})),
    ]
    with pytest.raises(DuplicateWrite) as raised:
        log_commit(lease=runtime.lease, delta=delta, writes=writes)
    assert raised.value.request_ids == ["twice"]
    assert isinstance(raised.value, ApiError)
    assert records_of("twice") == [] and not AppliedRequest.objects.filter(request_id="twice")


def test_verify_reports_request_ids_applied_more_than_once() -> None:
    runtime = get_runtime()
    for n in range(3):
        runtime.handle(retention_event(f"once-{n}", 100 + n))
    assert duplicate_writes() == [] and metadata_verify() == []
    # A log written before the fix: a second ConfigRecord of `once-1` in a later commit.
    ((offset, _),) = records_of("once-0")
    original = MetadataRecord.objects.get(offset=offset)
    last = MetadataRecord.objects.order_by("-offset").first()
    assert last is not None
    with projection_writes_allowed():  # a log the controller could not write any more
        MetadataRecord.objects.create(
            offset=last.offset + 1,
            record_type=original.record_type,
            controller_epoch=original.controller_epoch,
            timestamp_ms=original.timestamp_ms,
            principal=original.principal,
            request_id="once-1",
            data=original.data,
        )
    ((first_offset, _), _) = records_of("once-1")
    (problem,) = duplicate_writes()
    assert "once-1" in problem and f"{first_offset}" in problem and f"{last.offset + 1}" in problem
    assert problem in metadata_verify()


def test_one_audit_row_per_applied_request_id(api: Any, tokens: dict[str, str]) -> None:
    body = {
        "resources": [
            {
                "resource_type": "BROKER",
                "resource_name": "",
                "configs": [
                    {"name": "log.retention.ms", "config_operation": "SET", "value": "777"}
                ],
            }
        ]
    }
    headers = {"X-Request-ID": "audit-once"}
    for _ in range(3):  # the client retries twice with the same id
        status, answer = api.post(
            "/api/v1/incremental-alter-configs", body, token=tokens["admin"], headers=headers
        )
        assert status == 200 and answer["responses"][0]["error_code"] == 0
    (event,) = AuditEvent.objects.filter(request_id="audit-once")
    ((offset, _),) = records_of("audit-once")
    assert (event.outcome, event.first_offset, event.last_offset) == ("SUCCESS", offset, offset)
    # A refusal is not a write: each refused attempt keeps its own row.
    for _ in range(2):
        status, _ = api.post(
            "/api/v1/incremental-alter-configs",
            body,
            token=tokens["alice"],
            headers={"X-Request-ID": "refused-twice"},
        )
        assert status == 200
    assert AuditEvent.objects.filter(request_id="refused-twice").count() == 2


# --- random interleavings across batches and controller changes ------------------------------

Step = tuple[str, int, int]  # (what, a number, a number)
steps = st.lists(
    st.one_of(
        st.tuples(st.just("send"), st.integers(1, 3), st.integers(0, 1_000)),  # copies, where
        st.tuples(st.just("batch"), st.integers(0, 1), st.integers(1, 8)),  # controller, size
        st.tuples(st.just("resend"), st.integers(0, 1_000), st.integers(0, 1_000)),
        st.tuples(st.just("pause"), st.integers(0, 1), st.integers(0, 0)),  # lease lapses
    ),
    min_size=1,
    max_size=40,
)


VALUES = itertools.count(10_000)  # every write sets a new value: none is a no-op


class Interleaving:
    """Senders, a shuffled queue of event copies, and two controllers that take turns."""

    def __init__(self) -> None:
        self.tag = uuid.uuid4().hex[:8]
        cluster_get_or_create()
        Cluster.objects.filter(pk=1).update(lease_expires_ms=0)  # the last example's are gone
        self.controllers = [
            ControllerRuntime(
                node_id=f"{self.tag}-{n}",
                controller_id=3000 + n,
                lease_ms=60_000,
                session_timeout_ms=9_000,
                sessions=session_store(),
            )
            for n in (0, 1)
        ]
        self.sent: list[ControllerEvent] = []  # one event per request id
        self.waiting: list[ControllerEvent] = []  # copies in the channel, in its order
        self.answers: dict[str, list[ControllerAnswer]] = {}

    def run(self, step: Step) -> None:
        what, a, b = step
        if what == "send":
            event = retention_event(f"{self.tag}-{len(self.sent)}", next(VALUES))
            self.sent.append(event)
            for copy in range(a):
                self.waiting.insert((b + copy) % (len(self.waiting) + 1), event)
        elif what == "resend" and self.sent:  # a late retry, or the web node's re-send
            event = self.sent[a % len(self.sent)]
            self.waiting.insert(b % (len(self.waiting) + 1), event)
        elif what == "batch":
            self.batch(self.controllers[a], b)
        elif what == "pause":  # controller `a` stops past its lease: the other may take over
            Cluster.objects.filter(pk=1, lease_holder=self.controllers[a].node_id).update(
                lease_expires_ms=now_ms() - 1
            )

    def batch(self, controller: ControllerRuntime, size: int) -> None:
        taken, self.waiting = self.waiting[:size], self.waiting[size:]
        for event, answer in zip(taken, controller.handle_batch(taken), strict=True):
            if answer.response.get("error") == "NOT_CONTROLLER":
                self.waiting.append(event)  # the sender retries with the same request id
            else:
                self.answers.setdefault(event.context.request_id, []).append(answer)

    def drain(self) -> None:
        for _ in range(50):
            if not self.waiting:
                return
            for controller in self.controllers:
                self.batch(controller, len(self.waiting))
        raise AssertionError(f"{len(self.waiting)} event(s) never answered")


@settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(script=steps)
def test_any_interleaving_of_copies_applies_each_request_id_at_most_once(
    script: list[Step],
) -> None:
    world = Interleaving()
    for step in script:
        world.run(step)
    world.drain()
    for event in world.sent:
        request_id = event.context.request_id
        written = records_of(request_id)
        assert len(written) <= 1, (request_id, written)
        answers = [without_handled(a) for a in world.answers.get(request_id, [])]
        applied = [
            a for a in answers if a.response.get("responses", [{}])[0].get("error_code") == 0
        ]
        if applied:  # acknowledged: written exactly once, and every copy answered alike
            assert len(written) == 1 and applied[0].offsets == (written[0][0],) * 2
            assert all(a == applied[0] for a in answers)
    assert duplicate_writes() == []
    assert metadata_verify() == []


def test_a_request_id_reused_with_another_body_is_refused_never_answered_for_the_other(
    api: Any, tokens: dict[str, str], register: Any
) -> None:
    """Issue 34: a principal reusing its own request id with another body got HTTP 500
    (CreateTopics: the stored answer named another topic) or another request's answer
    (DeleteTopics). The same body is still a retry (its stored answer); another body, or
    another RPC, is INVALID_REQUEST with HTTP 422, and writes nothing."""
    for broker_id in range(3):
        register(broker_id, unfence=True)

    def create(name: str) -> tuple[int, Any]:
        body = {"topics": [{"name": name, "num_partitions": 1, "replication_factor": 1}]}
        return api.post(
            "/api/v1/create-topics",
            body,
            token=tokens["admin"],
            headers={"X-Request-ID": "reused-1"},
        )

    status, first = create("orders")
    assert status == 200 and first["topics"][0]["error_code"] == 0
    assert create("orders") == (200, first)  # a retry: the stored answer
    status, other = create("payments")
    assert status == 422, other
    assert (other["error_code"], other["error"]) == (42, "INVALID_REQUEST")
    assert "reused-1" in other["error_message"]
    status, deleted = api.post(
        "/api/v1/delete-topics",
        {"topics": [{"name": "orders"}]},
        token=tokens["admin"],
        headers={"X-Request-ID": "reused-1"},
    )
    assert status == 422 and deleted["error_code"] == 42
    assert {kind for _, kind in records_of("reused-1")} == {"TopicRecord", "PartitionRecord"}
    status, topics = api.get("/api/v1/topics", token=tokens["admin"])
    names = {t["name"] for t in topics["results"]}
    assert "orders" in names and "payments" not in names
