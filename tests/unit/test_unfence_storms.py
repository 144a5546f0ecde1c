"""Storms damp out: brokers unfenced at once are elected for in one bounded round.

An unfencing heartbeat's commit holds the unfencing alone and says elections are pending; the
controller's next round (the runtime runs it at once while moves are pending) elects every
leaderless partition a live replica can lead, for every broker unfenced meanwhile, at most
`max_moves` partitions a commit, and stops asking for more once nothing it can elect is left.
Before, each unfencing heartbeat committed its own elections (1,700 in one measured storm),
one large commit per heartbeat while other brokers' sessions lapsed behind it."""

from __future__ import annotations

from typing import Any

from controlplane.controller.dispatch import run_event
from controlplane.controller.image import MetadataDelta
from controlplane.controller.records import (
    NO_LEADER,
    BrokerRegistrationChangeRecord,
    PartitionChangeRecord,
)
from tests.unit.test_replication_core import Cluster

BROKERS = 12


def storm(max_moves: int | None = None) -> Cluster:
    """Twelve brokers, 240 partitions (RF 2); every broker fenced: all leaderless."""
    cluster = Cluster()
    cluster.register(*range(BROKERS))
    assignments = [[b % BROKERS, (b + 1) % BROKERS] for b in range(240)]
    cluster.create_topic("orders", assignments)
    for broker_id in range(BROKERS):
        cluster.fence(broker_id)
    assert all(p.leader == NO_LEADER for p in cluster.image.partitions.values())
    return cluster


def heartbeat(cluster: Cluster, broker_id: int) -> tuple[dict[str, Any], dict[str, Any], list]:
    """One unfencing heartbeat: its answer, its notes and the records of its commit."""
    offset = cluster.offset
    cluster.sessions[broker_id] = type(next(iter(cluster.sessions.values())))(cluster.now, offset)
    delta = MetadataDelta(cluster.image)
    notes: dict[str, Any] = {}
    payload = {
        "broker_id": broker_id,
        "broker_epoch": cluster.epoch(broker_id),
        "current_metadata_offset": offset,
    }
    answer = run_event(delta, "BrokerHeartbeat", payload, cluster.env(), notes=notes)
    records = [record for _, record in delta.replayed]
    cluster.records.extend(records)
    cluster.image.apply(delta)
    return answer, notes, records


def test_an_unfencing_heartbeat_commits_the_unfencing_alone_and_says_elections_are_pending():
    cluster = storm()
    answer, notes, records = heartbeat(cluster, 0)
    assert answer["is_fenced"] is False
    assert [type(r) for r in records] == [BrokerRegistrationChangeRecord]
    assert notes.get("moves_pending") is True


def test_brokers_unfenced_together_are_elected_for_in_one_round():
    cluster = storm()
    for broker_id in range(BROKERS):
        _, _, records = heartbeat(cluster, broker_id)
        assert not any(isinstance(r, PartitionChangeRecord) for r in records)
    before = cluster.offset
    answer = cluster.next_round()
    assert answer["moves_pending"] is False
    elections = cluster.records[-(cluster.offset - before) :]
    assert len(elections) == 240 and all(isinstance(r, PartitionChangeRecord) for r in elections)
    assert all(p.leader != NO_LEADER for p in cluster.image.partitions.values())
    before = cluster.offset
    assert cluster.next_round()["moves_pending"] is False and cluster.offset == before
    cluster.assert_replays()


def test_a_round_elects_at_most_max_moves_and_goes_on_until_nothing_is_left():
    cluster = storm()
    for broker_id in range(BROKERS):
        heartbeat(cluster, broker_id)
    cluster.env = _bounded(cluster.env, 100)  # type: ignore[method-assign]
    rounds = []
    while True:
        before = cluster.offset
        answer = cluster.next_round()
        rounds.append(cluster.offset - before)
        if not answer["moves_pending"]:
            break
    assert rounds == [100, 100, 40]
    assert all(p.leader != NO_LEADER for p in cluster.image.partitions.values())


def test_a_partition_no_live_replica_can_lead_leaves_nothing_pending():
    cluster = storm()
    last = BROKERS - 1  # fenced last: the last ISR member of the partitions it holds
    heartbeat(cluster, last)  # alone: the partitions whose last ISR member is down stay so
    answer = cluster.next_round()
    assert answer["moves_pending"] is False
    led = {tp for tp, p in cluster.image.partitions.items() if p.leader != NO_LEADER}
    assert led and all(cluster.image.partitions[tp].leader == last for tp in led)
    assert len(led) < len(cluster.image.partitions)
    before = cluster.offset
    assert cluster.next_round()["moves_pending"] is False and cluster.offset == before


def _bounded(env_of: Any, max_moves: int) -> Any:
    import dataclasses

    def env() -> Any:
        return dataclasses.replace(env_of(), max_partition_changes=max_moves)

    return env
