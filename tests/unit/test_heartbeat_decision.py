"""One heartbeat decision: the web node's fast answer is the controller's answer.

The web node answers a heartbeat alone (`heartbeat_fast_answer`) from the broker's status, without
knowing which partitions the broker leads nor the offsets the other brokers have seen; the
controller decides with those facts (`process_heartbeat`). Whatever the cluster, an answer the web
node gives must be the one the controller would give, and the controller must write nothing.
"""

from __future__ import annotations

import uuid

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from controlplane.controller.brokers import control as core
from controlplane.controller.env import BrokerSession
from controlplane.controller.image import (
    BrokerControlState,
    BrokerStatus,
    MetadataDelta,
    MetadataImage,
)
from controlplane.controller.records import (
    BrokerRegistrationChangeRecord,
    ControlledShutdownChange,
    FencingChange,
    Listener,
    PartitionRecord,
    RegisterBrokerRecord,
    TopicRecord,
)

S = BrokerControlState
CLUSTER = "heartbeat-cluster"
LISTENER = Listener("PLAINTEXT", "localhost", 9092, "PLAINTEXT")
LOG_DIRS = (str(uuid.UUID(int=1)), str(uuid.UUID(int=2)))
BROKER, PEER = 0, 1  # the broker that beats, and another unfenced one it may share a partition with


def status(state: BrokerControlState, *, epoch: int = 10, dirs: tuple[str, ...] = ()):
    return BrokerStatus(
        broker_id=BROKER,
        epoch=epoch,
        fenced=state in (S.FENCED, S.SHUTDOWN_NOW),
        in_controlled_shutdown=state in (S.CONTROLLED_SHUTDOWN, S.SHUTDOWN_NOW),
        controlled_shutdown_offset=-1 if state in (S.FENCED, S.UNFENCED) else 20,
        offline_log_dirs=dirs,
    )


def beat(offset: int = 100, *, fence=False, shut_down=False, dirs: tuple[str, ...] = ()):
    return core.BrokerHeartbeatRequest(BROKER, 10, offset, fence, shut_down, dirs)


# --- the one builder ------------------------------------------------------------------------


def test_heartbeat_request_reads_a_body_and_defaults_what_a_broker_leaves_out():
    body = {"broker_id": 3, "broker_epoch": 7, "current_metadata_offset": 9}
    assert core.heartbeat_request(body) == core.BrokerHeartbeatRequest(3, 7, 9, False, False, ())
    full = {**body, "want_fence": True, "want_shut_down": True, "offline_log_dirs": list(LOG_DIRS)}
    assert core.heartbeat_request(full) == core.BrokerHeartbeatRequest(
        3, 7, 9, True, True, LOG_DIRS
    )


# --- what the status and the request decide alone -------------------------------------------


@pytest.mark.parametrize(
    ("state", "request_", "decided"),
    [
        (S.FENCED, beat(5), S.FENCED),  # behind its registration
        (S.FENCED, beat(10), S.UNFENCED),
        (S.FENCED, beat(fence=True), S.FENCED),
        (S.FENCED, beat(shut_down=True), S.SHUTDOWN_NOW),
        (S.UNFENCED, beat(), S.UNFENCED),
        (S.UNFENCED, beat(fence=True), S.FENCED),
        (S.UNFENCED, beat(fence=True, shut_down=True), S.SHUTDOWN_NOW),
        (S.UNFENCED, beat(shut_down=True), None),  # leaderships decide: controlled or now
        (S.CONTROLLED_SHUTDOWN, beat(shut_down=True), None),  # leaderships and offsets decide
        (S.CONTROLLED_SHUTDOWN, beat(), None),
        (S.SHUTDOWN_NOW, beat(), S.SHUTDOWN_NOW),  # until it registers again
        (S.SHUTDOWN_NOW, beat(fence=True), S.SHUTDOWN_NOW),
    ],
)
def test_state_decided_by_request_leaves_the_cluster_dependent_cases_open(state, request_, decided):
    assert core.state_decided_by_request(status(state), request_) is decided


@pytest.mark.parametrize(
    ("state", "request_", "answer"),
    [
        (S.UNFENCED, beat(), {"is_caught_up": True, "is_fenced": False, "should_shut_down": False}),
        (S.FENCED, beat(5), {"is_caught_up": False, "is_fenced": True, "should_shut_down": False}),
        # Already fenced: shutting down now writes nothing, the web node says so itself.
        (
            S.FENCED,
            beat(shut_down=True),
            {"is_caught_up": True, "is_fenced": True, "should_shut_down": True},
        ),
        (
            S.SHUTDOWN_NOW,
            beat(),
            {"is_caught_up": True, "is_fenced": True, "should_shut_down": True},
        ),
    ],
)
def test_fast_answer_for_heartbeats_that_change_nothing(state, request_, answer):
    expected = {"error_code": 0, "error_message": None, **answer}
    assert core.heartbeat_fast_answer(status(state), request_) == expected


@pytest.mark.parametrize(
    ("state", "request_"),
    [
        (S.FENCED, beat(10)),  # unfences: a record
        (S.UNFENCED, beat(fence=True)),  # fences: a record
        (S.UNFENCED, beat(shut_down=True)),  # only the leaderships tell what it moves to
        (S.CONTROLLED_SHUTDOWN, beat(shut_down=True)),  # only the cluster tells when it may go
        (S.UNFENCED, beat(dirs=LOG_DIRS[:1])),  # a log dir went offline: a record
    ],
)
def test_no_fast_answer_when_the_heartbeat_may_change_something(state, request_):
    assert core.heartbeat_fast_answer(status(state), request_) is None


def test_offline_log_dirs_compare_as_a_set():
    known = status(S.UNFENCED, dirs=LOG_DIRS)
    reported = beat(dirs=(LOG_DIRS[1], LOG_DIRS[0], LOG_DIRS[1]))
    assert core.heartbeat_fast_answer(known, reported) is not None


# --- the property: the fast answer is the controller's --------------------------------------


def cluster_view(
    state: BrokerControlState, *, leads: bool, offline_dirs: tuple[str, ...]
) -> MetadataDelta:
    """BROKER in `state`, leading a partition or not, beside an unfenced PEER."""
    view = MetadataDelta(MetadataImage(cluster_id=CLUSTER))
    for broker_id in (BROKER, PEER):
        epoch = view.next_offset
        view.replay(
            RegisterBrokerRecord(
                broker_id, str(uuid.uuid4()), epoch, (LISTENER,), None, "broker", LOG_DIRS
            )
        )
        view.replay(BrokerRegistrationChangeRecord(broker_id, epoch, fenced=FencingChange.UNFENCE))
    if leads:
        topic_id = str(uuid.uuid4())
        view.replay(TopicRecord("t", topic_id))
        view.replay(PartitionRecord(0, topic_id, (BROKER, PEER), (BROKER, PEER), leader=BROKER))
    epoch = registered(view).epoch
    if state is S.CONTROLLED_SHUTDOWN:
        shutting_down = ControlledShutdownChange.IN_CONTROLLED_SHUTDOWN
        view.replay(
            BrokerRegistrationChangeRecord(BROKER, epoch, in_controlled_shutdown=shutting_down)
        )
    elif state is S.FENCED:
        view.replay(BrokerRegistrationChangeRecord(BROKER, epoch, fenced=FencingChange.FENCE))
    if offline_dirs:
        view.replay(BrokerRegistrationChangeRecord(BROKER, epoch, offline_log_dirs=offline_dirs))
    return view


def registered(view: MetadataDelta):
    broker = view.broker(BROKER)
    assert broker is not None
    return broker


OFFLINE_DIRS = st.lists(st.sampled_from(LOG_DIRS), max_size=3).map(tuple)


@settings(max_examples=400, deadline=None)
@given(
    state=st.sampled_from([S.FENCED, S.UNFENCED, S.CONTROLLED_SHUTDOWN]),
    leads=st.booleans(),
    known_dirs=OFFLINE_DIRS,
    offset_past_epoch=st.integers(min_value=-3, max_value=12),
    want_fence=st.booleans(),
    want_shut_down=st.booleans(),
    reported_dirs=OFFLINE_DIRS,
    peer_offset=st.integers(min_value=-1, max_value=20),
)
def test_the_fast_answer_when_given_is_the_controllers_and_writes_nothing(
    state,
    leads,
    known_dirs,
    offset_past_epoch,
    want_fence,
    want_shut_down,
    reported_dirs,
    peer_offset,
):
    view = cluster_view(state, leads=leads, offline_dirs=tuple(sorted(set(known_dirs))))
    broker = registered(view)
    request = core.BrokerHeartbeatRequest(
        BROKER,
        broker.epoch,
        broker.epoch + offset_past_epoch,
        want_fence,
        want_shut_down,
        reported_dirs,
    )
    sessions = {
        BROKER: BrokerSession(0, request.current_metadata_offset),
        PEER: BrokerSession(0, peer_offset),
    }
    # The web node holds the status the session store mirrors, not the registration.
    fast = core.heartbeat_fast_answer(broker.status, request)
    controller = core.process_heartbeat(view, request, sessions=sessions)
    if fast is not None:
        assert controller.records == []
        assert controller.response == fast
    elif core.state_decided_by_request(broker.status, request) is not None:
        # Sent on although the status decided it: only because the controller writes.
        assert controller.records
