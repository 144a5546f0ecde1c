"""Rack-aware striped replica placement.

Brokers are interleaved across racks (rack 1's first broker, rack 2's first, ..., rack 1's
second, ...). Partition p's leader is the broker at (start + p) on that ring, and its followers are
taken further along with a shift that grows every full turn, skipping racks that already hold a
replica while any rack is left (Kafka's rack-aware assignment). Leaders are therefore spread
evenly and always unfenced: fenced brokers only ever hold followers, and only when there are not
enough unfenced ones. Brokers in controlled shutdown get nothing. The start comes from the topic
name, so placement is deterministic and different topics start at different brokers.

Canary isolation (KIP-1095): canary partitions are striped over the unfenced canary brokers
alone when there are at least as many as the replication factor; otherwise they are placed like
every other partition (availability over isolation). Every other partition avoids canary
brokers while enough unfenced regular brokers exist. Each group is striped by its own ordinal
(the partition's rank among the topic's partitions of that group), so leaders spread evenly
inside the canary set as outside it.
"""

from __future__ import annotations

import dataclasses
import itertools
import zlib
from collections.abc import Collection, Iterable, Sequence

from controlplane.controller.errors import ApiError, Errors


@dataclasses.dataclass(frozen=True, slots=True)
class UsableBroker:
    broker_id: int
    rack: str | None
    fenced: bool
    canary: bool = False  # pod canary-broker (KIP-1095)


@dataclasses.dataclass(frozen=True, slots=True)
class Placed:
    """New partitions' replicas, in index order, and which canary ones are isolated."""

    replicas: list[tuple[int, ...]]
    isolated: list[bool]


def rack_alternated(brokers: Iterable[UsableBroker]) -> list[UsableBroker]:
    by_rack: dict[str, list[UsableBroker]] = {}
    for broker in sorted(brokers, key=_broker_id):
        by_rack.setdefault(broker.rack or "", []).append(broker)
    if len(by_rack) <= 1:  # one rack (or none named): the brokers in id order
        return next(iter(by_rack.values()), [])
    racks = [by_rack[name] for name in sorted(by_rack)]
    return [b for turn in itertools.zip_longest(*racks) for b in turn if b is not None]


def _broker_id(broker: UsableBroker) -> int:
    return broker.broker_id


def place_replicas(
    brokers: Sequence[UsableBroker],
    *,
    seed_name: str,
    first_partition: int,
    num_partitions: int,
    replication_factor: int,
) -> list[tuple[int, ...]]:
    """Replica lists for partitions first_partition .. first_partition + num_partitions - 1,
    over all of `brokers` (no canary isolation)."""
    _check(brokers, replication_factor)
    ordinals = range(first_partition, first_partition + num_partitions)
    return _place(brokers, seed_name, ordinals, replication_factor)


def place_partitions(
    brokers: Sequence[UsableBroker],
    *,
    seed_name: str,
    first_partition: int,
    num_partitions: int,
    replication_factor: int,
    canary: Collection[int] = (),
    isolated_before: int = 0,
) -> Placed:
    """Canary-aware placement of partitions first_partition .. + num_partitions - 1, of which
    `canary` (indexes) are canary partitions; `isolated_before` counts the topic's existing
    isolated canary partitions (an expansion continues their stripes)."""
    _check(brokers, replication_factor)
    canary = frozenset(canary)
    canary_ring = [b for b in brokers if b.canary and not b.fenced]
    can_isolate = bool(canary) and len(canary_ring) >= replication_factor
    regular = [b for b in brokers if not b.canary]
    if sum(1 for b in regular if not b.fenced) < replication_factor:
        regular = list(brokers)  # too few regular brokers: use the canary ones too
    indexes = range(first_partition, first_partition + num_partitions)
    in_canary_ring = [can_isolate and i in canary for i in indexes]
    canary_ordinals: list[int] = []
    regular_ordinals: list[int] = []
    isolated_count = isolated_before
    for index, on_canary in zip(indexes, in_canary_ring, strict=True):
        if on_canary:
            canary_ordinals.append(isolated_count)
            isolated_count += 1
        else:
            regular_ordinals.append(index - isolated_count)
    placed_canary = iter(_place(canary_ring, seed_name, canary_ordinals, replication_factor))
    placed_regular = iter(_place(regular, seed_name, regular_ordinals, replication_factor))
    replicas = [next(placed_canary if c else placed_regular) for c in in_canary_ring]
    canary_ids = {b.broker_id for b in brokers if b.canary}
    isolated = [
        i in canary and all(r in canary_ids for r in assigned)
        for i, assigned in zip(indexes, replicas, strict=True)
    ]
    return Placed(replicas, isolated)


def _check(brokers: Sequence[UsableBroker], replication_factor: int) -> None:
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


def _place(
    brokers: Sequence[UsableBroker],
    seed_name: str,
    ordinals: Sequence[int],
    replication_factor: int,
) -> list[tuple[int, ...]]:
    """Replica lists for the partitions at `ordinals` of the stripes over `brokers`."""
    if not ordinals:
        return []
    _check(brokers, replication_factor)
    unfenced = [b for b in brokers if not b.fenced]
    seed = zlib.crc32(seed_name.encode())
    if len(unfenced) >= replication_factor:
        return _striped(rack_alternated(unfenced), seed, ordinals, replication_factor)
    # Too few unfenced brokers: the leader is unfenced, the rest fill in from the fenced ones.
    ring = rack_alternated(unfenced)
    spare = rack_alternated(b for b in brokers if b.fenced)
    placed = []
    for p in ordinals:
        leaders = [ring[(seed + p + i) % len(ring)].broker_id for i in range(len(ring))]
        followers = [spare[(seed + p + i) % len(spare)].broker_id for i in range(len(spare))]
        placed.append(tuple((leaders + followers)[:replication_factor]))
    return placed


def _striped(
    ring: list[UsableBroker],
    seed: int,
    ordinals: Sequence[int],
    replication_factor: int,
) -> list[tuple[int, ...]]:
    n = len(ring)
    racks = len({b.rack or "" for b in ring})
    start = seed % n
    shift_base = (seed // n) % n
    placed: list[tuple[int, ...]] = []
    for p in ordinals:
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
