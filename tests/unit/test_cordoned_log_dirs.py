"""KIP-1066's cordoned log dirs (metadata.version 4.3-IV0): a broker's heartbeats name them,
the controller records them when they change, places no new replica on a broker whose every
dir is cordoned, and writes them in Kafka's records of that level."""

from __future__ import annotations

import uuid

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from controlplane.controller.brokers import control as core
from controlplane.controller.env import BrokerSession
from controlplane.controller.errors import ApiError, Errors
from controlplane.controller.image import BrokerStatus, MetadataDelta, MetadataImage
from controlplane.controller.kraft import decode_metadata_value, kafka_record
from controlplane.controller.records import (
    BrokerRegistrationChangeRecord,
    FeatureLevelRecord,
    FencingChange,
    Listener,
    RegisterBrokerRecord,
)
from controlplane.controller.replication.topics import usable_brokers
from tests.unit.test_heartbeat_decision import LOG_DIRS

LISTENER = Listener("PLAINTEXT", "h", 9092, "PLAINTEXT")


def cluster(level: int, cordoned: tuple[str, ...] | None = None) -> MetadataDelta:
    image = MetadataImage(cluster_id="c")
    view = MetadataDelta(image)
    view.replay(FeatureLevelRecord("metadata.version", level))
    for broker_id in (1, 2):
        epoch = view.next_offset
        view.replay(
            RegisterBrokerRecord(
                broker_id, str(uuid.uuid4()), epoch, (LISTENER,), None, "broker", LOG_DIRS
            )
        )
        view.replay(BrokerRegistrationChangeRecord(broker_id, epoch, fenced=FencingChange.UNFENCE))
    if cordoned is not None:
        epoch = view.broker(1).epoch  # type: ignore[union-attr]
        view.replay(BrokerRegistrationChangeRecord(1, epoch, cordoned_log_dirs=cordoned))
    image.apply(view)
    return MetadataDelta(image)


def beat(view: MetadataDelta, cordoned: tuple[str, ...] | None) -> core.BrokerHeartbeatRequest:
    broker = view.broker(1)
    assert broker is not None
    return core.BrokerHeartbeatRequest(1, broker.epoch, 100, False, False, (), cordoned)


def sessions(view: MetadataDelta) -> dict[int, BrokerSession]:
    return {1: BrokerSession(0, 100), 2: BrokerSession(0, 100)}


def test_a_heartbeat_records_the_cordoned_dirs_when_they_change_from_4_3_iv0() -> None:
    view = cluster(30)
    result = core.process_heartbeat(view, beat(view, (LOG_DIRS[1],)), sessions=sessions(view))
    (change,) = result.records
    assert change == BrokerRegistrationChangeRecord(
        1,
        view.broker(1).epoch,
        cordoned_log_dirs=(LOG_DIRS[1],),  # type: ignore[union-attr]
    )
    view.replay(change)
    assert view.broker(1).cordoned_log_dirs == (LOG_DIRS[1],)  # type: ignore[union-attr]
    again = core.process_heartbeat(view, beat(view, (LOG_DIRS[1],)), sessions=sessions(view))
    assert again.records == []
    said_nothing = core.process_heartbeat(view, beat(view, None), sessions=sessions(view))
    assert said_nothing.records == []


def test_below_4_3_iv0_nothing_is_recorded() -> None:
    view = cluster(29)
    assert core.process_heartbeat(view, beat(view, LOG_DIRS), sessions=sessions(view)).records == []


def test_no_new_replica_goes_to_a_broker_whose_every_dir_is_cordoned() -> None:
    assert {b.broker_id for b in usable_brokers(cluster(30, (LOG_DIRS[0],)))} == {1, 2}
    assert {b.broker_id for b in usable_brokers(cluster(30, LOG_DIRS))} == {2}
    from controlplane.controller.replication.topics import _checked_assignments

    with pytest.raises(ApiError) as refused:
        _checked_assignments(cluster(30, LOG_DIRS), [(1, 2)], None)
    assert refused.value.error is Errors.INVALID_REPLICA_ASSIGNMENT
    assert "cordoned" in (refused.value.message or "")


def test_kafkas_records_carry_them_at_their_level() -> None:
    change = BrokerRegistrationChangeRecord(1, 5, cordoned_log_dirs=(LOG_DIRS[0],))
    at_30 = decode_metadata_value(kafka_record(change, 30).value)
    assert (at_30.version, at_30.fields["CordonedLogDirs"]) == (3, [uuid.UUID(LOG_DIRS[0])])
    registration = RegisterBrokerRecord(
        1, str(uuid.uuid4()), 5, (LISTENER,), None, "broker", LOG_DIRS, cordoned_log_dirs=()
    )
    at_33 = decode_metadata_value(kafka_record(registration, 33).value)
    assert (at_33.version, at_33.fields["CordonedLogDirs"]) == (4, [])
    at_29 = decode_metadata_value(kafka_record(registration, 29).value)
    assert at_29.version == 3 and "CordonedLogDirs" not in at_29.fields


CORDONED = st.none() | st.lists(st.sampled_from(LOG_DIRS), max_size=2).map(tuple)


@settings(max_examples=200, deadline=None)
@given(known=CORDONED, reported=CORDONED)
def test_the_fast_answer_is_the_controllers_with_cordoned_dirs(known, reported) -> None:
    view = cluster(33, None if known is None else tuple(sorted(set(known))))
    broker = view.broker(1)
    assert broker is not None
    request = beat(view, reported)
    status = BrokerStatus.decode(1, broker.status.encode())
    assert status == broker.status  # the session store's mirror keeps them
    fast = core.heartbeat_fast_answer(status, request)
    controller = core.process_heartbeat(view, request, sessions=sessions(view))
    if fast is not None:
        assert controller.records == [] and controller.response == fast
    else:
        assert controller.records  # sent on only because the controller writes
