"""Rack-aware striped replica placement.

Brokers are interleaved across racks (rack 1's first broker, rack 2's first, ..., rack 1's
second, ...). Partition p's leader is the broker at (start + p) on that ring, and its followers are
taken further along with a shift that grows every full turn, skipping racks that already hold a
replica while any rack is left (Kafka's rack-aware assignment). Leaders are therefore spread
evenly and always unfenced: fenced brokers only ever hold followers, and only when there are not
enough unfenced ones. Brokers in controlled shutdown get nothing. The start comes from the topic
name, so placement is deterministic and different topics start at different brokers.
"""

from __future__ import annotations

import dataclasses
import zlib
from collections.abc import Iterable, Sequence

from controlplane.controller.errors import ApiError, Errors


@dataclasses.dataclass(frozen=True, slots=True)
class UsableBroker:
    broker_id: int
    rack: str | None
    fenced: bool


def rack_alternated(brokers: Iterable[UsableBroker]) -> list[UsableBroker]:
    by_rack: dict[str, list[UsableBroker]] = {}
    for broker in sorted(brokers, key=lambda b: b.broker_id):
        by_rack.setdefault(broker.rack or "", []).append(broker)
    racks = [by_rack[name] for name in sorted(by_rack)]
    arranged: list[UsableBroker] = []
    for turn in range(max((len(r) for r in racks), default=0)):
        arranged.extend(rack[turn] for rack in racks if turn < len(rack))
    return arranged


def place_replicas(
    brokers: Sequence[UsableBroker],
    *,
    seed_name: str,
    first_partition: int,
    num_partitions: int,
    replication_factor: int,
) -> list[tuple[int, ...]]:
    """Replica lists for partitions first_partition .. first_partition + num_partitions - 1."""
    unfenced = [b for b in brokers if not b.fenced]
    if replication_factor <= 0:
        raise ApiError(
            Errors.INVALID_REPLICATION_FACTOR,
            f"Invalid replication factor {replication_factor}: the replication factor must "
            "be positive.",
        )
    if not unfenced:
        raise ApiError(Errors.INVALID_REPLICATION_FACTOR, "All brokers are currently fenced.")
    if replication_factor > len(brokers):
        raise ApiError(
            Errors.INVALID_REPLICATION_FACTOR,
            f"The target replication factor of {replication_factor} cannot be reached because "
            f"only {len(brokers)} broker(s) are registered.",
        )
    seed = zlib.crc32(seed_name.encode())
    if len(unfenced) >= replication_factor:
        ring = rack_alternated(unfenced)
        return _striped(ring, seed, first_partition, num_partitions, replication_factor)
    # Too few unfenced brokers: the leader is unfenced, the rest fill in from the fenced ones.
    ring = rack_alternated(unfenced)
    spare = rack_alternated(b for b in brokers if b.fenced)
    placed = []
    for p in range(first_partition, first_partition + num_partitions):
        leaders = [ring[(seed + p + i) % len(ring)].broker_id for i in range(len(ring))]
        followers = [spare[(seed + p + i) % len(spare)].broker_id for i in range(len(spare))]
        placed.append(tuple((leaders + followers)[:replication_factor]))
    return placed


def _striped(
    ring: list[UsableBroker],
    seed: int,
    first_partition: int,
    num_partitions: int,
    replication_factor: int,
) -> list[tuple[int, ...]]:
    n = len(ring)
    racks = len({b.rack or "" for b in ring})
    start = seed % n
    shift_base = (seed // n) % n
    placed: list[tuple[int, ...]] = []
    for p in range(first_partition, first_partition + num_partitions):
        shift = shift_base + p // n
        first = (p + start) % n
        leader = ring[first]
        replicas = [leader.broker_id]
        used_racks = {leader.rack or ""}
        k = 0
        while len(replicas) < replication_factor:
            candidate = ring[(first + 1 + (shift * racks + k) % (n - 1)) % n] if n > 1 else leader
            k += 1
            rack = candidate.rack or ""
            if candidate.broker_id in replicas:
                continue
            if rack in used_racks and len(used_racks) < racks and k <= 2 * n:
                continue
            replicas.append(candidate.broker_id)
            used_racks.add(rack)
        placed.append(tuple(replicas))
    return placed
