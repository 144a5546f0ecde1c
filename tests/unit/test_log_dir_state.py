"""The one model of a log dir's and a replica's state (issue 25), from the pure core.

A dir is offline while the broker's latest heartbeat names it, back online when a heartbeat no
longer does or the broker registers anew, unknown while the broker is fenced; AlterReplicaState
marks replicas offline (not dirs). A replica is offline when marked, or on a fenced broker. One
failure told by AlterReplicaState and then by the heartbeat is one incident.
"""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from controlplane.controller.health import (
    HealthIndex,
    LogDirState,
    log_dir_states,
)
from controlplane.controller.timeline import Kind, Severity
from tests.unit.test_timeline_core import DIRS, Controller

UUIDS = st.uuids().map(str)


@given(
    log_dirs=st.lists(UUIDS, max_size=5, unique=True),
    extra=st.lists(UUIDS, max_size=2),
    picks=st.lists(st.booleans(), min_size=5, max_size=5),
    fenced=st.booleans(),
)
def test_every_dir_has_one_state(
    log_dirs: list[str], extra: list[str], picks: list[bool], fenced: bool
) -> None:
    offline = [d for d, pick in zip(log_dirs, picks, strict=False) if pick] + extra
    states = log_dir_states(log_dirs, offline, fenced)
    shown = dict(states)
    assert len(shown) == len(states)  # each dir once
    assert [d for d, _ in states[: len(log_dirs)]] == log_dirs  # in the registration's order
    for d, state in states:
        if d in offline:
            assert state is LogDirState.OFFLINE
        elif fenced:
            assert state is LogDirState.UNKNOWN  # a fenced broker's dirs are not "online"
        else:
            assert state is LogDirState.ONLINE
    # The count the API, the health index and /metrics give: the dirs named, once each.
    assert sum(s is LogDirState.OFFLINE for _, s in states) == len(set(offline))


def figures(controller: Controller) -> tuple[int, int, int]:
    """(offline log dirs, offline replicas, broker 3's offline log dirs), counted afresh."""
    index = HealthIndex.build(controller.image, controller.static)
    broker = index.brokers.get(3)
    return (
        index.totals.offline_log_dirs,
        index.totals.counts.offline_replicas,
        broker.offline_log_dirs if broker else 0,
    )


def report_offline(controller: Controller, broker_id: int, partitions: list[int]) -> None:
    controller.run(
        "AlterReplicaState",
        {
            "broker_id": broker_id,
            "broker_epoch": controller.epochs[broker_id],
            "new_state": 1,
            "topics": [{"name": "orders", "partitions": partitions}],
        },
    )


def test_a_repaired_dir_is_online_though_a_replica_waits_for_its_leader() -> None:
    controller = Controller()
    for broker_id in range(4):
        controller.register(broker_id)
    controller.create("orders", [[1, 2, 3], [2, 3, 1], [3, 1, 2]])
    report_offline(controller, 3, [0, 1, 2])
    # Replicas offline, and the dir too: reported by AlterReplicaState (CONTRACT), which named
    # none here, so Kafka's DirectoryId.LOST until a heartbeat names it.
    assert figures(controller) == (1, 3, 1)
    told = controller.heartbeat(3, offline_log_dirs=[DIRS[3][0]])
    assert figures(controller) == (1, 3, 1)
    # The heartbeat told the same failure: one incident (the report's), not two.
    assert told is not None and told.kind is Kind.LOG_DIR_FAILURE
    assert told.severity is Severity.INFO
    # Repaired: the heartbeat no longer names it. The replicas stay offline until a leader
    # takes them back into its ISR; the dir is online (it once stayed "1 offline": issue 25).
    back = controller.heartbeat(3, offline_log_dirs=[])
    assert back is not None and back.kind is Kind.LOG_DIR_RECOVERY
    assert figures(controller) == (0, 3, 0)
    # A new incarnation clears both.
    controller.heartbeat(3, offline_log_dirs=[DIRS[3][1]])
    assert figures(controller)[0] == 1
    controller.heartbeat(3, want_fence=True)  # it stops; its session is gone
    del controller.sessions[3]
    controller.register(3)
    assert figures(controller)[:2] == (0, 0)


def test_a_heartbeat_first_failure_is_one_incident_too() -> None:
    controller = Controller()
    for broker_id in range(4):
        controller.register(broker_id)
    controller.create("orders", [[1, 2, 3]])
    # The heartbeat may come first (AlterReplicaState waits for the controller): the report,
    # with the partitions' leaders, is the incident.
    named = controller.heartbeat(2, offline_log_dirs=[DIRS[2][1]])
    assert named is not None and named.kind is Kind.LOG_DIR_FAILURE
    assert named.severity is Severity.INFO
    _, reported = controller.run(
        "AlterReplicaState",
        {
            "broker_id": 2,
            "broker_epoch": controller.epochs[2],
            "new_state": 1,
            "topics": [{"name": "orders", "partitions": [0]}],
        },
    )
    assert reported is not None and reported.kind is Kind.LOG_DIR_FAILURE
    assert reported.severity is Severity.WARNING
    # A broker holding nothing: no report follows, the heartbeat's is the incident.
    alone = controller.heartbeat(0, offline_log_dirs=[DIRS[0][0]])
    assert alone is not None and alone.severity is Severity.WARNING


def test_replicas_on_a_fenced_broker_are_offline_and_its_dirs_unknown() -> None:
    controller = Controller()
    for broker_id in range(4):
        controller.register(broker_id)
    controller.create("orders", [[1, 2, 3], [2, 3, 1], [3, 1, 2]])
    controller.heartbeat(3, want_fence=True)
    broker = controller.image.broker(3)
    assert broker is not None and broker.fenced
    index = HealthIndex.build(controller.image, controller.static)
    assert index.brokers[3].offline_replicas == 3  # every replica it holds
    assert index.totals.counts.offline_replicas == 3
    assert index.totals.offline_log_dirs == 0
    assert log_dir_states(broker.log_dirs, broker.offline_log_dirs, broker.fenced) == [
        (d, LogDirState.UNKNOWN) for d in DIRS[3]
    ]
    # A replica both marked and on a fenced broker is one offline replica.
    report_offline(controller, 2, [0])
    controller.heartbeat(2, want_fence=True)
    index = HealthIndex.build(controller.image, controller.static)
    assert index.totals.counts.offline_replicas == 6
    assert index.totals.counts.offline_partitions == 0  # broker 1 holds every partition
