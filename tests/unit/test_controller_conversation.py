"""The controller conversation, typed: events and answers on the wire, the notes set apart from
the response a client gets, what a retry may answer again, the caller's trail of one request, and
the request channel's decoding of what it takes off Redis."""

from __future__ import annotations

import dataclasses
import json
import logging
from collections.abc import Mapping
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from controlplane.controller.errors import ApiError, Errors
from controlplane.runtime.channel import ChannelConsumer, _decode
from controlplane.runtime.conversation import (
    CONTROLLER_PRINCIPAL,
    AuditEnvelope,
    ControllerAnswer,
    ControllerEvent,
    Forwarding,
    RequestContext,
    RequestTrail,
)
from controlplane.runtime.metadata_log import _stored_answer

# --- strategies: what JSON carries -------------------------------------------------------------

names = st.text(min_size=1, max_size=12)
scalars = st.none() | st.booleans() | st.integers() | st.text(max_size=12)
json_values = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(names, inner, max_size=3),
    max_leaves=8,
)
json_objects = st.dictionaries(names, json_values, max_size=4)
offsets = st.tuples(st.integers(0, 10**12), st.integers(0, 10**12))

forwardings = st.builds(
    Forwarding, principal=names, host=st.text(max_size=12), broker_id=st.none() | st.integers()
)
audits = st.builds(
    AuditEnvelope,
    rpc=names,
    started_ms=st.integers(0, 10**13),
    forwarding=st.none() | forwardings,
    refused=st.dictionaries(names, st.lists(json_objects, max_size=2), max_size=2),
)
contexts = st.builds(
    RequestContext,
    principal=names,  # an empty principal is the controller's own on the wire
    client_id=st.text(max_size=12),
    client_host=st.text(max_size=12),
    request_id=st.text(max_size=12),
)
events = st.builds(
    ControllerEvent,
    api=names,
    payload=json_objects,
    context=contexts,
    deadline_ms=st.none() | st.integers(),
    sent_ms=st.none() | st.integers(),
    queued_ms=st.none() | st.integers(),
    audit=st.none() | audits,
)
answers = st.builds(
    ControllerAnswer,
    response=json_objects,
    offsets=st.none() | offsets,
    audited=st.booleans(),
    handled_ms=st.none() | st.integers(),
    notes=json_objects,
)


def through_json(wire: Mapping[str, Any]) -> Any:
    return json.loads(json.dumps(wire))


# --- on the wire -------------------------------------------------------------------------------


@given(event=events)
def test_an_event_comes_back_from_its_wire_form_as_it_was_sent(event: ControllerEvent) -> None:
    assert ControllerEvent.from_wire(event.to_wire()) == event
    assert ControllerEvent.from_wire(through_json(event.to_wire())) == event


@given(answer=answers)
def test_an_answer_comes_back_from_its_wire_form_as_it_was_given(answer: ControllerAnswer) -> None:
    assert ControllerAnswer.from_wire(answer.to_wire()) == answer
    assert ControllerAnswer.from_wire(through_json(answer.to_wire())) == answer


def test_an_old_shaped_event_reads_as_the_event_it_was() -> None:
    """The keys the untyped events had: what a web node of the previous release sends."""
    event = ControllerEvent.from_wire(
        {
            "api": "IncrementalAlterConfigs",
            "payload": {"resources": []},
            "principal": "User:admin",
            "client_id": "tool",
            "client_host": "10.0.0.1",
            "request_id": "r-1",
            "deadline_ms": 2000,
            "sent_ms": 1000,
            "audit": {
                "rpc": "Envelope",
                "started_ms": 999,
                "forwarding": {"principal": "User:broker", "host": "10.0.0.2", "broker_id": 3},
                "refused": {"responses": [{"error_code": 29}]},
            },
        }
    )
    assert event == ControllerEvent(
        "IncrementalAlterConfigs",
        {"resources": []},
        RequestContext("User:admin", "tool", "10.0.0.1", "r-1"),
        deadline_ms=2000,
        sent_ms=1000,
        audit=AuditEnvelope(
            "Envelope",
            999,
            Forwarding("User:broker", "10.0.0.2", 3),
            {"responses": [{"error_code": 29}]},
        ),
    )
    assert event.queued_ms is None and event.remembered


def test_the_timers_bare_event_is_the_controllers_own_and_not_remembered() -> None:
    event = ControllerEvent.from_wire(
        {"api": "FenceStaleBrokers", "principal": "", "payload": None}
    )
    assert event == ControllerEvent("FenceStaleBrokers")
    assert event.context.principal == CONTROLLER_PRINCIPAL and not event.remembered
    # A request id alone does not make a heartbeat remembered: it is evaluated afresh each time.
    beat = ControllerEvent("BrokerHeartbeat", context=RequestContext(request_id="b-1"))
    assert not beat.remembered
    assert ControllerEvent("CreateTopics", context=RequestContext(request_id="t-1")).remembered


def test_numbers_that_are_not_integers_are_dropped_not_guessed() -> None:
    event = ControllerEvent.from_wire(
        {"api": "CreateTopics", "deadline_ms": "5", "sent_ms": True, "queued_ms": 1.5}
    )
    assert (event.deadline_ms, event.sent_ms, event.queued_ms) == (None, None, None)


def test_queued_stamps_only_when_it_was_queued() -> None:
    event = ControllerEvent("CreateTopics", {"topics": []}, sent_ms=5)
    assert event.queued(42) == dataclasses.replace(event, queued_ms=42)
    assert event.queued_ms is None  # frozen: the sender's event is left as it was


MALFORMED_EVENTS = [
    pytest.param({}, id="no api"),
    pytest.param({"payload": {}}, id="no api, a payload"),
    pytest.param({"api": "CreateTopics", "payload": [1, 2]}, id="payload not an object"),
    pytest.param({"api": "CreateTopics", "payload": "topics"}, id="payload a string"),
    pytest.param({"api": "CreateTopics", "audit": {"started_ms": 1}}, id="audit without its rpc"),
    pytest.param({"api": "CreateTopics", "audit": {"rpc": "CreateTopics"}}, id="no started_ms"),
    pytest.param(
        {"api": "CreateTopics", "audit": {"rpc": "CreateTopics", "started_ms": "soon"}},
        id="started_ms not a number",
    ),
    pytest.param(
        {"api": "CreateTopics", "audit": {"rpc": "CreateTopics", "started_ms": [1]}},
        id="started_ms a list",
    ),
    pytest.param(
        {"api": "CreateTopics", "audit": {"rpc": "CreateTopics", "started_ms": float("nan")}},
        id="started_ms NaN",
    ),
    pytest.param(
        {"api": "CreateTopics", "audit": {"rpc": "CreateTopics", "started_ms": float("inf")}},
        id="started_ms Infinity",
    ),
    pytest.param(
        {
            "api": "Envelope",
            "audit": {"rpc": "Envelope", "started_ms": 1, "forwarding": {"principal": "User:b"}},
        },
        id="forwarding without its host",
    ),
    pytest.param(
        {
            "api": "Envelope",
            "audit": {
                "rpc": "Envelope",
                "started_ms": 1,
                "forwarding": {"principal": "User:b", "host": "h", "rack": "r1"},
            },
        },
        id="forwarding with a field it has not",
    ),
]


@pytest.mark.parametrize("wire", MALFORMED_EVENTS)
def test_a_malformed_event_is_refused_with_a_decoding_error(wire: dict[str, Any]) -> None:
    with pytest.raises((ValueError, KeyError, TypeError)):
        ControllerEvent.from_wire(wire)


wire_fields = st.sampled_from(
    ["api", "payload", "principal", "request_id", "deadline_ms", "sent_ms", "audit", "other"]
)
wire_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.dictionaries(
            st.sampled_from(["rpc", "started_ms", "forwarding", "principal", "host", "refused"]),
            inner,
            max_size=4,
        )
    ),
    max_leaves=10,
)


@given(wire=st.dictionaries(wire_fields, wire_values, max_size=6))
def test_any_json_object_is_an_event_or_a_decoding_error(wire: dict[str, Any]) -> None:
    """Whatever lies in the channel: an event, or one of the errors its decoder catches."""
    try:
        event = ControllerEvent.from_wire(wire)
    except (ValueError, KeyError, TypeError):
        return
    assert ControllerEvent.from_wire(event.to_wire()) == event


MALFORMED_ANSWERS = [
    pytest.param({}, id="no response"),
    pytest.param({"response": 5}, id="response not an object"),
    pytest.param({"response": {}, "offsets": 7}, id="offsets not a pair"),
    pytest.param({"response": {}, "offsets": ["a", "b"]}, id="offsets not numbers"),
]


@pytest.mark.parametrize("wire", MALFORMED_ANSWERS)
def test_a_malformed_answer_is_refused_with_a_decoding_error(wire: dict[str, Any]) -> None:
    with pytest.raises((ValueError, KeyError, TypeError)):
        ControllerAnswer.from_wire(wire)


# --- the core's notes, a retry's stored answer -------------------------------------------------


def test_an_answer_stored_before_answers_were_typed_sets_its_notes_apart() -> None:
    legacy = {
        "error_code": 0,
        "expiry_timestamp_ms": 9,
        "_token_id": "t",
        "_offsets": [3, 3],
        "_audited": True,
    }
    answer = _stored_answer(json.dumps(legacy), 3, 3, False, "{}")
    assert answer.response == {"error_code": 0, "expiry_timestamp_ms": 9}
    assert answer.notes == {"token_id": "t"} and answer.audited and answer.offsets == (3, 3)


def test_a_stored_answer_reads_its_columns() -> None:
    answer = _stored_answer({"error_code": 0}, 4, 6, True, {"token_id": "t"})
    assert answer == ControllerAnswer(
        {"error_code": 0}, offsets=(4, 6), audited=True, notes={"token_id": "t"}
    )


def test_a_refusal_answers_the_errors_fields_and_nothing_else() -> None:
    answer = ControllerAnswer.refusal(ApiError(Errors.NOT_CONTROLLER, "not me"))
    assert answer.not_controller and answer.error_code == Errors.NOT_CONTROLLER
    assert answer.response["error_message"] == "not me"
    assert answer.offsets is None and not answer.audited and not answer.notes
    assert ControllerAnswer({"error_code": 0}).error_code == 0
    assert ControllerAnswer({"error_code": None}).error_code == 0
    assert not ControllerAnswer({"error_code": 0}).not_controller


def test_the_stored_response_withholds_the_hmac() -> None:
    answer = ControllerAnswer(
        {"error_code": 0, "token_id": "tid", "hmac": "c2VjcmV0"},
        offsets=(4, 5),
        audited=True,
        handled_ms=1234,
        notes={"token_id": "tid"},
    )
    stored = answer.storable_response()
    assert "c2VjcmV0" not in json.dumps(stored)
    assert stored == {"error_code": 0, "token_id": "tid", "hmac": None}
    assert answer.response["hmac"] == "c2VjcmV0"  # the client's own answer still carries it once


@given(answer=answers)
def test_a_response_without_a_secret_is_stored_as_it_is(answer: ControllerAnswer) -> None:
    plain = {k: v for k, v in answer.response.items() if k != "hmac"}
    assert dataclasses.replace(answer, response=plain).storable_response() == plain


# --- the caller's trail ------------------------------------------------------------------------


def test_took_merges_the_offsets_audit_and_notes_of_every_answer() -> None:
    trail = RequestTrail(rpc="CreateTopics", started_ms=1)
    trail.took(ControllerAnswer({}, offsets=(5, 7), notes={"token_id": "a"}))
    assert (trail.first_offset, trail.last_offset, trail.audited) == (5, 7, False)
    trail.took(ControllerAnswer({}, offsets=(3, 4), audited=True, notes={"other": 1}))
    trail.took(ControllerAnswer({"error_code": 41}))  # a refusal wrote nothing
    trail.took(ControllerAnswer({}, offsets=(9, 9), notes={"token_id": "b"}))
    assert (trail.first_offset, trail.last_offset) == (3, 9)  # min first, max last
    assert trail.audited  # once audited in a commit, the request stays audited
    assert trail.notes == {"token_id": "b", "other": 1}  # the later note wins


@given(ranges=st.lists(st.none() | offsets, max_size=6), audited=st.lists(st.booleans()))
def test_took_spans_every_range_it_was_given(
    ranges: list[tuple[int, int] | None], audited: list[bool]
) -> None:
    trail = RequestTrail()
    flags = audited + [False] * len(ranges)
    for span, flag in zip(ranges, flags, strict=False):
        trail.took(ControllerAnswer({}, offsets=span, audited=flag))
    written = [span for span in ranges if span is not None]
    assert trail.first_offset == (min(s[0] for s in written) if written else None)
    assert trail.last_offset == (max(s[1] for s in written) if written else None)
    assert trail.audited == any(flags[: len(ranges)])


def test_the_envelope_carries_what_the_handler_refused() -> None:
    assert RequestTrail().envelope() is None  # not an audited admin request
    forwarding = Forwarding("User:broker", "10.0.0.2", 1)
    trail = RequestTrail(rpc="Envelope", started_ms=7, forwarding=forwarding)
    trail.refuse(answer_key="topics", items=[{"name": "a", "error_code": 29}])
    trail.refuse(answer_key="topics", items=[])  # nothing refused: nothing noted
    trail.refuse(answer_key="topics", items=[{"name": "b", "error_code": 29}])
    envelope = trail.envelope()
    assert envelope == AuditEnvelope(
        "Envelope",
        7,
        forwarding,
        {"topics": [{"name": "a", "error_code": 29}, {"name": "b", "error_code": 29}]},
    )
    assert envelope is not None and envelope.refused is not trail.refused  # a copy travels


def test_the_trail_travels_with_the_context_but_is_never_compared() -> None:
    trail = RequestTrail(rpc="CreateTopics")
    assert RequestContext("User:a", request_id="r", trail=trail) == RequestContext(
        "User:a", request_id="r"
    )
    assert RequestContext("User:a", request_id="r").key == ("User:a", "r")
    assert "trail" not in ControllerEvent("X", context=RequestContext(trail=trail)).to_wire()


# --- the request channel's decoding ------------------------------------------------------------


def raw(wire: Any) -> bytes:
    return json.dumps(wire).encode()


def test_decode_gives_the_event_and_where_its_answer_goes() -> None:
    event = ControllerEvent(
        "CreateTopics", {"topics": []}, RequestContext("User:a", request_id="r")
    )
    assert _decode(raw({**event.to_wire(), "reply_to": "cp:controller:reply:x"})) == (
        event,
        "cp:controller:reply:x",
    )
    assert _decode(raw(event.to_wire())) == (event, None)  # nobody waits for its answer
    assert _decode(raw({**event.to_wire(), "reply_to": 5})) == (event, None)


UNDECODABLE = [
    pytest.param(b"\xff not json", id="not UTF-8"),
    pytest.param(b"{not json", id="not JSON"),
    pytest.param(b"[1, 2]", id="a list"),
    pytest.param(b'"CreateTopics"', id="a string"),
    pytest.param(b"null", id="null"),
    pytest.param(raw({"payload": {}, "reply_to": "cp:controller:reply:x"}), id="no api"),
    pytest.param(raw({"api": "CreateTopics", "payload": [1]}), id="payload a list"),
    pytest.param(
        raw({"api": "CreateTopics", "audit": {"rpc": "CreateTopics"}}), id="audit incomplete"
    ),
    pytest.param(
        b'{"api": "CreateTopics", "audit": {"rpc": "CreateTopics", "started_ms": Infinity}}',
        id="started_ms Infinity",
    ),
]


@pytest.mark.parametrize("message", UNDECODABLE)
def test_decode_drops_an_undecodable_event_and_says_so(
    message: bytes, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.ERROR, logger="controlplane.controller"):
        assert _decode(message) is None
    assert "dropped an undecodable event" in caplog.text


class FakeRedis:
    """The few list commands the consumer uses, in memory."""

    def __init__(self, waiting: list[bytes]) -> None:
        self.waiting = waiting
        self.replies: dict[str, list[str]] = {}
        self.expiring: set[str] = set()
        self.values: dict[str, str] = {}

    def set(self, key: str, value: str) -> None:
        self.values[key] = value

    def blpop(self, keys: list[str], timeout: float) -> tuple[bytes, bytes] | None:
        return (keys[0].encode(), self.waiting.pop(0)) if self.waiting else None

    def lpop(self, key: str, count: int) -> list[bytes]:
        taken, self.waiting = self.waiting[:count], self.waiting[count:]
        return taken

    def pipeline(self, transaction: bool) -> FakeRedis:
        return self

    def rpush(self, key: str, value: str) -> None:
        self.replies.setdefault(key, []).append(value)

    def expire(self, key: str, seconds: int) -> None:
        self.expiring.add(key)

    def execute(self) -> None:
        pass


def test_the_consumer_serves_what_it_can_decode_and_answers_each_sender() -> None:
    seen: list[ControllerEvent] = []

    def handle_batch(batch: Any, on_logged: Any = None) -> list[ControllerAnswer]:
        seen.extend(batch)
        return [ControllerAnswer({"api": e.api}, offsets=(1, 2)) for e in batch]

    consumer = ChannelConsumer("redis://127.0.0.1:1/0", handle_batch, key_prefix="t:")
    first = ControllerEvent("CreateTopics", context=RequestContext("User:a", request_id="1"))
    second = ControllerEvent("DeleteTopics", context=RequestContext("User:a", request_id="2"))
    fake = FakeRedis(
        [
            raw({**first.to_wire(), "reply_to": "t:controller:reply:1"}),
            b"\xff not json",
            raw({**second.to_wire(), "reply_to": "elsewhere:2"}),  # not a reply key: no answer
            b"[1, 2]",
        ]
    )
    consumer.redis = fake
    assert consumer.serve_once(wait_s=0) == 2
    assert seen == [first, second]
    (reply,) = fake.replies["t:controller:reply:1"]
    assert ControllerAnswer.from_wire(json.loads(reply)) == ControllerAnswer(
        {"api": "CreateTopics"}, offsets=(1, 2)
    )
    assert set(fake.replies) == fake.expiring == {"t:controller:reply:1"}
    assert consumer.serve_once(wait_s=0) == 0  # nothing waits any more
    # It said once that it serves the channel (a token of its own): senders waiting on another
    # controller retry to it.
    (token,) = fake.values.values()
    assert list(fake.values) == ["t:controller:serving"] and len(token) == 32
