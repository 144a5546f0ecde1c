"""The broker lifecycle's pure core: registration, the heartbeat state machine, fencing."""

from __future__ import annotations

import uuid

import pytest

from controlplane.controller.brokers import control as core
from controlplane.controller.dispatch import run_event
from controlplane.controller.env import DEFAULT_SESSION_TIMEOUT_MS, BrokerSession, ControllerEnv
from controlplane.controller.errors import ApiError, Errors, InvalidStateTransition
from controlplane.controller.image import (
    BrokerControlState,
    BrokerRegistration,
    MetadataDelta,
    MetadataImage,
    replay_log,
)
from controlplane.controller.records import (
    BrokerRegistrationChangeRecord,
    FencingChange,
    Listener,
    RegisterBrokerRecord,
    UnregisterBrokerRecord,
    record_from_data,
)

S = BrokerControlState
CLUSTER = "cluster-one"
LISTENER = Listener("PLAINTEXT", "localhost", 9092, "PLAINTEXT")


def registration(broker_id: int = 1, *, incarnation: str | None = None, **overrides: object):
    fields = dict(
        broker_id=broker_id,
        cluster_id=CLUSTER,
        incarnation_id=incarnation or str(uuid.uuid4()),
        listeners=(LISTENER,),
        rack="r1",
        pod="broker",
        log_dirs=(str(uuid.uuid4()),),
    )
    fields.update(overrides)
    return core.BrokerRegistrationRequest(**fields)


def broker(state: BrokerControlState, *, epoch: int = 10, cs_offset: int = -1):
    return BrokerRegistration(
        broker_id=1,
        incarnation_id=str(uuid.uuid4()),
        epoch=epoch,
        listeners=(LISTENER,),
        rack=None,
        pod="broker",
        log_dirs=(),
        fenced=state in (S.FENCED, S.SHUTDOWN_NOW),
        in_controlled_shutdown=state in (S.CONTROLLED_SHUTDOWN, S.SHUTDOWN_NOW),
        controlled_shutdown_offset=cs_offset,
    )


def beat(offset: int = 100, *, fence: bool = False, shut_down: bool = False, epoch: int = 10):
    return core.BrokerHeartbeatRequest(1, epoch, offset, fence, shut_down)


def delta() -> MetadataDelta:
    return MetadataDelta(MetadataImage(cluster_id=CLUSTER))


# --- the decision table (Kafka's BrokerHeartbeatManagerTest.testCalculateNextBrokerState) ----


@pytest.mark.parametrize(
    ("state", "request_", "leaderships", "lowest_active", "expected"),
    [
        (S.FENCED, beat(5), False, 0, S.FENCED),  # not caught up with its registration
        (S.FENCED, beat(10), False, 0, S.UNFENCED),  # caught up: unfenced
        (S.FENCED, beat(100, fence=True), False, 0, S.FENCED),
        (S.FENCED, beat(100, shut_down=True), False, 0, S.SHUTDOWN_NOW),
        (S.UNFENCED, beat(), False, 0, S.UNFENCED),
        (S.UNFENCED, beat(fence=True), False, 0, S.FENCED),
        (S.UNFENCED, beat(fence=True, shut_down=True), True, 0, S.SHUTDOWN_NOW),
        (S.UNFENCED, beat(shut_down=True), True, 0, S.CONTROLLED_SHUTDOWN),
        (S.UNFENCED, beat(shut_down=True), False, 0, S.SHUTDOWN_NOW),
        (S.CONTROLLED_SHUTDOWN, beat(shut_down=True), True, 10**9, S.CONTROLLED_SHUTDOWN),
        (S.CONTROLLED_SHUTDOWN, beat(shut_down=True), False, 49, S.CONTROLLED_SHUTDOWN),
        (S.CONTROLLED_SHUTDOWN, beat(shut_down=True), False, 50, S.SHUTDOWN_NOW),
        # Fenced in a controlled shutdown: asked to shut down until it registers again, whatever
        # its heartbeats say (Kafka's records clear the flag only with a new registration).
        (S.SHUTDOWN_NOW, beat(), False, 10**9, S.SHUTDOWN_NOW),
        (S.SHUTDOWN_NOW, beat(fence=True), False, 10**9, S.SHUTDOWN_NOW),
        (S.SHUTDOWN_NOW, beat(shut_down=True), False, 10**9, S.SHUTDOWN_NOW),
    ],
)
def test_next_broker_state(state, request_, leaderships, lowest_active, expected):
    current = broker(state, cs_offset=50 if state is S.CONTROLLED_SHUTDOWN else -1)
    assert (
        core.next_broker_state(
            current, request_, has_leaderships=leaderships, lowest_active_offset=lowest_active
        )
        is expected
    )


@pytest.mark.parametrize("current", list(S))
@pytest.mark.parametrize("target", list(S))
def test_transition_table_is_enforced(current, target):
    allowed = current == target or target in core.BROKER_TRANSITIONS[current]
    if allowed:
        core.check_transition(current, target)
    else:
        with pytest.raises(InvalidStateTransition) as raised:
            core.check_transition(current, target)
        assert raised.value.error is Errors.INVALID_REQUEST
        assert current.value in str(raised.value) and target.value in str(raised.value)


def test_same_state_produces_no_records():
    for state in (S.FENCED, S.UNFENCED, S.CONTROLLED_SHUTDOWN):
        assert core.transition_records(broker(state), state) == []


def test_fenced_to_shutdown_now_writes_nothing_it_is_already_fenced():
    assert core.transition_records(broker(S.FENCED), S.SHUTDOWN_NOW) == []


def test_invalid_transition_from_fenced_to_controlled_shutdown_is_refused():
    with pytest.raises(InvalidStateTransition):
        core.transition_records(broker(S.FENCED), S.CONTROLLED_SHUTDOWN)


# --- registration (Kafka's ClusterControlManager) ---------------------------------------------


def env(now_ms: int = 1_000_000, sessions=None, activated_ms: int = 0) -> ControllerEnv:
    return ControllerEnv(now_ms=now_ms, activated_ms=activated_ms, sessions=sessions or {})


def test_registration_epoch_is_the_offset_of_its_record_and_starts_fenced():
    d = delta()
    d.replay(RegisterBrokerRecord(7, str(uuid.uuid4()), 0, (LISTENER,), None, "broker", ()))
    result = core.register_broker(d, registration(1), sessions={}, now_ms=0)
    (record,) = result.records
    assert isinstance(record, RegisterBrokerRecord)
    assert record.broker_epoch == 1 == d.next_offset
    assert record.fenced is True
    assert result.response == {"error_code": 0, "error_message": None, "broker_epoch": 1}


def test_wrong_cluster_id_is_inconsistent_cluster_id():
    with pytest.raises(ApiError) as raised:
        core.register_broker(delta(), registration(cluster_id="other"), sessions={}, now_ms=0)
    assert raised.value.error is Errors.INCONSISTENT_CLUSTER_ID
    assert "Expected cluster ID cluster-one, but got cluster ID other" in str(raised.value)


def test_other_incarnation_with_a_live_session_is_a_duplicate_registration():
    d = delta()
    first = registration(1)
    run_event(d, "BrokerRegistration", _payload(first), env())
    live = {1: BrokerSession(last_contact_ms=999_000, metadata_offset=-1)}
    response = run_event(d, "BrokerRegistration", _payload(registration(1)), env(sessions=live))
    assert response["error_code"] == Errors.DUPLICATE_BROKER_REGISTRATION
    assert d.last_offset == 0


def test_other_incarnation_after_the_session_lapsed_registers_with_a_new_epoch():
    d = delta()
    run_event(d, "BrokerRegistration", _payload(registration(1)), env())
    lapsed = {1: BrokerSession(last_contact_ms=0, metadata_offset=-1)}
    response = run_event(d, "BrokerRegistration", _payload(registration(1)), env(sessions=lapsed))
    assert response["error_code"] == 0 and response["broker_epoch"] == 1
    registered = d.broker(1)
    assert registered is not None
    assert registered.epoch == 1 and registered.fenced


def test_same_incarnation_keeps_its_epoch_and_writes_nothing():
    d = delta()
    request = registration(1)
    first = run_event(d, "BrokerRegistration", _payload(request), env())
    live = {1: BrokerSession(last_contact_ms=999_000, metadata_offset=-1)}
    again = run_event(d, "BrokerRegistration", _payload(request), env(sessions=live))
    assert again["broker_epoch"] == first["broker_epoch"] == 0
    assert d.last_offset == 0


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"pod": "zookeeper"}, "Unknown pod"),
        ({"broker_id": -1}, "must not be negative"),
        ({"log_dirs": ("not-a-uuid",)}, "not a UUID"),
        ({"listeners": (LISTENER, LISTENER)}, "unique"),
        ({"listeners": (Listener("X", "h", 1, "CARRIER_PIGEON"),)}, "security protocol"),
    ],
)
def test_invalid_registrations(overrides, message):
    with pytest.raises(ApiError) as raised:
        core.register_broker(delta(), registration(**overrides), sessions={}, now_ms=0)
    assert raised.value.error is Errors.INVALID_REGISTRATION
    assert message in str(raised.value)


# --- heartbeats, expiry, unregistration -----------------------------------------------------


def registered_delta(n: int = 1) -> MetadataDelta:
    d = delta()
    for broker_id in range(n):
        run_event(d, "BrokerRegistration", _payload(registration(broker_id)), env())
    return d


def test_heartbeat_with_unknown_broker_or_wrong_epoch_is_stale_broker_epoch():
    d = registered_delta()
    unknown = run_event(d, "BrokerHeartbeat", _beat(5, 0, 0), env())
    wrong = run_event(d, "BrokerHeartbeat", _beat(0, 7, 0), env())
    assert unknown["error_code"] == wrong["error_code"] == Errors.STALE_BROKER_EPOCH
    assert "Expected broker epoch 0, but got broker epoch 7" in wrong["error_message"]


def test_caught_up_heartbeat_unfences_once_then_changes_nothing():
    d = registered_delta()
    first = run_event(d, "BrokerHeartbeat", _beat(0, 0, 0), env())
    assert first == {
        "error_code": 0,
        "error_message": None,
        "is_caught_up": True,
        "is_fenced": False,
        "should_shut_down": False,
    }
    assert [type(r) for _, r in d.replayed][-1] is BrokerRegistrationChangeRecord
    offset = d.last_offset
    run_event(d, "BrokerHeartbeat", _beat(0, 0, 5), env())
    assert d.last_offset == offset  # a heartbeat that changes nothing writes nothing


def test_controlled_shutdown_waits_for_active_brokers_to_reach_its_offset():
    d = registered_delta(2)
    for broker_id in (0, 1):
        run_event(d, "BrokerHeartbeat", _beat(broker_id, broker_id, 10), env())
    sessions = {0: BrokerSession(1, 3), 1: BrokerSession(1, 3)}
    # Broker 0 has no leaderships yet: Kafka goes straight to SHUTDOWN_NOW in that case.
    response = run_event(
        d, "BrokerHeartbeat", _beat(0, 0, 10, shut_down=True), env(sessions=sessions)
    )
    assert response["should_shut_down"] is True
    assert d.broker(0).fenced


def test_a_controlled_shutdown_waits_for_the_active_brokers_not_for_the_leaving_one():
    """Kafka's lowestActiveOffset: the brokers still unfenced and not shutting down must have
    seen the moves; the leaving broker's own offset (it is applying the loss of its
    leaderships) holds nothing up."""
    d = registered_delta(3)
    for broker_id in range(3):
        run_event(d, "BrokerHeartbeat", _beat(broker_id, broker_id, 10), env())
    topic = {"name": "led-by-0", "assignments": [{"partition_index": 0, "broker_ids": [0, 1]}]}
    run_event(d, "CreateTopics", {"topics": [topic]}, env())
    asked = run_event(d, "BrokerHeartbeat", _beat(0, 0, 10, shut_down=True), env())
    assert asked["should_shut_down"] is False and d.broker(0).in_controlled_shutdown
    moved = d.last_offset
    assert d.broker(0).controlled_shutdown_offset <= moved

    def again(sessions: dict[int, BrokerSession]) -> dict[str, object]:
        return run_event(
            d, "BrokerHeartbeat", _beat(0, 0, moved, shut_down=True), env(sessions=sessions)
        )

    behind = moved - 2  # before the shutdown's records
    assert (
        again(
            {0: BrokerSession(1, behind), 1: BrokerSession(1, moved), 2: BrokerSession(1, behind)}
        )["should_shut_down"]
        is False
    )  # broker 2 is active and has not seen the moves
    assert d.broker(0).fenced is False
    assert (
        again(
            {0: BrokerSession(1, behind), 1: BrokerSession(1, moved), 2: BrokerSession(1, moved)}
        )["should_shut_down"]
        is True
    )
    assert d.broker(0).fenced


def test_fence_stale_brokers_fences_only_lapsed_unfenced_brokers():
    d = registered_delta(3)
    for broker_id in range(3):
        run_event(d, "BrokerHeartbeat", _beat(broker_id, broker_id, 10), env())
    sessions = {
        0: BrokerSession(last_contact_ms=1_000_000, metadata_offset=5),  # fresh
        1: BrokerSession(last_contact_ms=1, metadata_offset=5),  # lapsed
    }  # broker 2 unknown to the tracker: it gets a full session from the activation
    active_since = 1_000_000
    response = run_event(
        d, "FenceStaleBrokers", {}, env(1_000_500, sessions, activated_ms=active_since)
    )
    assert response["fenced_brokers"] == [1]
    assert [d.broker(i).fenced for i in range(3)] == [False, True, False]
    offset = d.last_offset
    again = run_event(d, "FenceStaleBrokers", {}, env(1_000_600, sessions, active_since))
    assert again["fenced_brokers"] == [] and d.last_offset == offset
    later = active_since + DEFAULT_SESSION_TIMEOUT_MS + 1
    last = run_event(d, "FenceStaleBrokers", {}, env(later, sessions, active_since))
    assert last["fenced_brokers"] == [0, 2]  # silent since the activation: lapsed too


def test_unregister_removes_the_broker_and_unknown_is_broker_id_not_registered():
    d = registered_delta(1)
    assert run_event(d, "UnregisterBroker", {"broker_id": 0}, env())["error_code"] == 0
    assert d.broker(0) is None
    assert isinstance(d.replayed[-1][1], UnregisterBrokerRecord)
    again = run_event(d, "UnregisterBroker", {"broker_id": 0}, env())
    assert again["error_code"] == Errors.BROKER_ID_NOT_REGISTERED


def test_records_round_trip_through_json_and_replay_equals_state():
    d = registered_delta(2)
    run_event(d, "BrokerHeartbeat", _beat(0, 0, 10), env())
    run_event(d, "BrokerHeartbeat", _beat(1, 1, 10, fence=True), env())
    run_event(d, "UnregisterBroker", {"broker_id": 1}, env())
    image = MetadataImage(cluster_id=CLUSTER)
    image.apply(d)
    decoded = [record_from_data(r.TYPE, r.to_data()) for _, r in d.replayed]
    assert decoded == [r for _, r in d.replayed]
    assert replay_log(CLUSTER, decoded).as_comparable() == image.as_comparable()


def test_a_fenced_controlled_shutdown_lasts_until_the_broker_registers_again():
    """Kafka's rule: a fence record keeps the controlled-shutdown flag (only a new
    registration clears it), so the broker's own image and this one agree; its heartbeats,
    whatever they ask, are answered "shut down" and change nothing."""
    d = registered_delta(1)
    run_event(d, "BrokerHeartbeat", _beat(0, 0, 10), env())
    d.replay(BrokerRegistrationChangeRecord(0, 0, in_controlled_shutdown=1))
    assert d.broker(0).control_state is S.CONTROLLED_SHUTDOWN
    d.replay(BrokerRegistrationChangeRecord(0, 0, fenced=FencingChange.FENCE))
    assert d.broker(0).fenced and d.broker(0).in_controlled_shutdown
    assert d.broker(0).control_state is S.SHUTDOWN_NOW
    offset = d.last_offset
    for beat_ in (_beat(0, 0, 10**6), _beat(0, 0, 10**6, fence=True)):
        answer = run_event(d, "BrokerHeartbeat", beat_, env())
        assert answer["should_shut_down"] is True and answer["is_fenced"] is True
    assert d.last_offset == offset  # no record: a heartbeat cannot take the flag back
    run_event(d, "BrokerRegistration", _payload(registration(0)), env())
    assert not d.broker(0).in_controlled_shutdown
    assert d.broker(0).control_state is S.FENCED


def test_replaying_a_change_for_an_unregistered_broker_is_refused():
    with pytest.raises(ValueError, match="not registered"):
        delta().replay(BrokerRegistrationChangeRecord(3, 0, fenced=FencingChange.FENCE))


def _payload(request: core.BrokerRegistrationRequest) -> dict[str, object]:
    return {
        "broker_id": request.broker_id,
        "cluster_id": request.cluster_id,
        "incarnation_id": request.incarnation_id,
        "listeners": [vars_of(listener) for listener in request.listeners],
        "rack": request.rack,
        "pod": request.pod,
        "log_dirs": list(request.log_dirs),
    }


def vars_of(listener: Listener) -> dict[str, object]:
    return {
        "name": listener.name,
        "host": listener.host,
        "port": listener.port,
        "security_protocol": listener.security_protocol,
    }


def _beat(
    broker_id: int, epoch: int, offset: int, *, fence: bool = False, shut_down: bool = False
) -> dict[str, object]:
    return {
        "broker_id": broker_id,
        "broker_epoch": epoch,
        "current_metadata_offset": offset,
        "want_fence": fence,
        "want_shut_down": shut_down,
    }
