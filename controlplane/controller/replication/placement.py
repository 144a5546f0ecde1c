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
import functools
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
    ring = _Ring.of(brokers)
    ring.check(replication_factor)
    ordinals = range(first_partition, first_partition + num_partitions)
    return _place(ring, seed_name, ordinals, replication_factor)


@dataclasses.dataclass(frozen=True, slots=True)
class _Ring:
    """Brokers a stripe goes over: how many, the unfenced ones rack-alternated (the leaders
    and followers), and the fenced ones (followers only, when too few are unfenced)."""

    size: int
    unfenced: list[UsableBroker]
    spare: list[UsableBroker]

    @classmethod
    def of(cls, brokers: Sequence[UsableBroker]) -> _Ring:
        return cls(
            len(brokers),
            rack_alternated(b for b in brokers if not b.fenced),
            rack_alternated(b for b in brokers if b.fenced),
        )

    def check(self, replication_factor: int) -> None:
        if replication_factor <= 0:
            raise ApiError(
                Errors.INVALID_REPLICATION_FACTOR,
                f"Invalid replication factor {replication_factor}: the replication factor must "
                "be positive.",
            )
        if not self.unfenced:
            raise ApiError(Errors.INVALID_REPLICATION_FACTOR, "All brokers are currently fenced.")
        if replication_factor > self.size:
            raise ApiError(
                Errors.INVALID_REPLICATION_FACTOR,
                f"The target replication factor of {replication_factor} cannot be reached "
                f"because only {self.size} broker(s) are registered.",
            )


class BrokerRings:
    """The rings placement stripes over one set of usable brokers (the canary ones, the
    regular ones, all of them), each arranged once: a request that places many topics places
    each over the same brokers."""

    def __init__(self, brokers: Sequence[UsableBroker]) -> None:
        self._brokers = brokers

    @functools.cached_property
    def _everyone(self) -> _Ring:
        return _Ring.of(self._brokers)

    @functools.cached_property
    def _canary(self) -> _Ring:
        return _Ring.of([b for b in self._brokers if b.canary and not b.fenced])

    @functools.cached_property
    def _regular(self) -> _Ring:
        return _Ring.of([b for b in self._brokers if not b.canary])

    @functools.cached_property
    def _canary_ids(self) -> frozenset[int]:
        return frozenset(b.broker_id for b in self._brokers if b.canary)

    def place(
        self,
        *,
        seed_name: str,
        first_partition: int,
        num_partitions: int,
        replication_factor: int,
        canary: Collection[int] = (),
        isolated_before: int = 0,
    ) -> Placed:
        """Canary-aware placement of partitions first_partition .. + num_partitions - 1, of
        which `canary` (indexes) are canary partitions; `isolated_before` counts the topic's
        existing isolated canary partitions (an expansion continues their stripes)."""
        self._everyone.check(replication_factor)
        canary = frozenset(canary)
        can_isolate = bool(canary) and len(self._canary.unfenced) >= replication_factor
        regular = self._regular
        if len(regular.unfenced) < replication_factor:
            regular = self._everyone  # too few regular brokers: use the canary ones too
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
        placed_canary = iter(_place(self._canary, seed_name, canary_ordinals, replication_factor))
        placed_regular = iter(_place(regular, seed_name, regular_ordinals, replication_factor))
        replicas = [next(placed_canary if c else placed_regular) for c in in_canary_ring]
        canary_ids = self._canary_ids
        isolated = [
            i in canary and all(r in canary_ids for r in assigned)
            for i, assigned in zip(indexes, replicas, strict=True)
        ]
        return Placed(replicas, isolated)


def _place(
    ring: _Ring,
    seed_name: str,
    ordinals: Sequence[int],
    replication_factor: int,
) -> list[tuple[int, ...]]:
    """Replica lists for the partitions at `ordinals` of the stripes over `ring`."""
    if not ordinals:
        return []
    ring.check(replication_factor)
    seed = zlib.crc32(seed_name.encode())
    unfenced = ring.unfenced
    if len(unfenced) >= replication_factor:
        return _striped(unfenced, seed, ordinals, replication_factor)
    # Too few unfenced brokers: the leader is unfenced, the rest fill in from the fenced ones.
    spare = ring.spare
    placed = []
    for p in ordinals:
        leaders = [unfenced[(seed + p + i) % len(unfenced)].broker_id for i in range(len(unfenced))]
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
