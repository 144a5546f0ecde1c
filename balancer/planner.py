"""The balancer's plans: which replicas to move where, from goals in a fixed order. Pure: plain
data in, plain data out (no Django, no I/O), so the same plan comes from the same cluster.

The goals, in their order (an earlier goal is never given up for a later one):

1. **Rack awareness**: a partition's replicas on as many racks as the cluster has (up to its
   replica count); a move never puts two replicas on one rack while another rack is free.
2. **Canary pods** (KIP-1095): canary partitions on `canary-broker` brokers, the others off
   them, wherever a pool has enough usable brokers for a partition's replicas. A plan that names
   a broker (drain, fill) keeps to that broker's pool, and leaves it only when the pool cannot
   hold a partition (availability first, as the placement of new partitions does).
3. **Replicas per broker**: within each pool, every usable broker within one replica of the
   others.
4. **Leaders per broker**: the preferred leaders (each partition's first replica) spread the
   same way, by reordering replicas (a reorder moves no data; the controller's preferred-leader
   election then moves leadership).
5. **Replicas per log dir**: where brokers tie, the one with fewer replicas per online log dir
   takes the replica.
6. **Never below min.insync.replicas during a move**: a partition whose ISR is below its
   min.insync.replicas, that has no leader or that is being moved already is left where it is
   (a move adds the new replicas before it removes the old ones, so a move of a healthy
   partition never shrinks its ISR).

Three plans: `rebalance` (every goal, over the whole cluster), `drain` (every replica off one
broker, to decommission it; UnregisterBroker follows once it is stopped), `fill` (a new broker
takes its share of replicas and preferred leaders). A plan that cannot improve the cluster has
no moves and says why.
"""

from __future__ import annotations

import dataclasses
import heapq
from collections import defaultdict
from collections.abc import Collection, Iterable, Mapping, Sequence

TopicPartition = tuple[str, int]
MAX_MOVES = 100_000  # a plan's moves at most (a larger imbalance takes a second plan)


@dataclasses.dataclass(frozen=True, slots=True)
class BrokerInfo:
    broker_id: int
    rack: str | None = None
    canary: bool = False  # pod canary-broker (KIP-1095)
    log_dirs: int = 1  # online log dirs
    usable: bool = True  # registered, unfenced, not shutting down: it can take replicas


@dataclasses.dataclass(frozen=True, slots=True)
class PartitionInfo:
    topic: str
    partition: int
    replicas: tuple[int, ...]
    isr: tuple[int, ...] = ()
    leader: int = -1
    is_canary: bool = False
    min_isr: int = 1
    reassigning: bool = False

    @property
    def tp(self) -> TopicPartition:
        return (self.topic, self.partition)

    @property
    def movable(self) -> bool:
        """Goal 6: healthy enough to move (led, at or above min ISR, not moving already)."""
        return not self.reassigning and self.leader >= 0 and len(self.isr) >= self.min_isr


@dataclasses.dataclass(frozen=True, slots=True)
class Move:
    topic: str
    partition: int
    before: tuple[int, ...]
    after: tuple[int, ...]

    @property
    def reorder_only(self) -> bool:
        return set(self.before) == set(self.after)

    def as_dict(self) -> dict[str, object]:
        return {
            "topic": self.topic,
            "partition": self.partition,
            "before": list(self.before),
            "after": list(self.after),
        }


@dataclasses.dataclass(frozen=True, slots=True)
class Plan:
    goal: str
    broker_id: int | None
    moves: tuple[Move, ...]
    skew_before: dict[str, object]
    skew_after: dict[str, object]
    message: str

    @property
    def partitions_touched(self) -> int:
        return len(self.moves)


class PlanRefused(ValueError):
    """The plan cannot be made as asked (an unknown broker, a drain with nowhere to go)."""

    def __init__(self, message: str, *, unknown_broker: bool = False) -> None:
        super().__init__(message)
        self.unknown_broker = unknown_broker


class _State:
    """The assignment being planned: each partition's replicas, and the counts the goals read."""

    def __init__(self, brokers: Sequence[BrokerInfo], partitions: Sequence[PartitionInfo]) -> None:
        self.brokers = {b.broker_id: b for b in brokers}
        self.partitions = {p.tp: p for p in partitions}
        self.replicas: dict[TopicPartition, list[int]] = {
            p.tp: list(p.replicas) for p in partitions
        }
        # Each broker's partitions, in the order given (dicts keep it: the same plan every time).
        self.on: dict[int, dict[TopicPartition, None]] = defaultdict(dict)
        self.preferred: dict[int, int] = defaultdict(int)
        self.moved: set[TopicPartition] = set()
        for p in partitions:
            for broker_id in p.replicas:
                self.on[broker_id][p.tp] = None
            if p.replicas:
                self.preferred[p.replicas[0]] += 1
        self.racks = {b.rack for b in brokers if b.usable and b.rack is not None}
        self.excluded: set[int] = set()  # a drained broker takes nothing
        self._pools: dict[bool, tuple[int, frozenset[str]]] = {}

    # --- the constraints (goals 1, 2) ---------------------------------------------------------
    def _pool(self, canary: bool) -> tuple[int, frozenset[str]]:
        """A pool's usable brokers (how many) and their racks; read once (the exclusions are
        set before any planning)."""
        found = self._pools.get(canary)
        if found is None:
            members = [
                b
                for b in self.brokers.values()
                if b.usable and b.canary == canary and b.broker_id not in self.excluded
            ]
            found = (len(members), frozenset(b.rack for b in members if b.rack is not None))
            self._pools[canary] = found
        return found

    def pool_of(self, partition: PartitionInfo) -> bool | None:
        """The pool (canary or not) the partition belongs in, None when that pool cannot hold
        its replicas (it may then go anywhere)."""
        size, _ = self._pool(partition.is_canary)
        return partition.is_canary if size >= len(partition.replicas) else None

    def racks_for(self, partition: PartitionInfo) -> frozenset[str] | set[str]:
        """The racks the partition's replicas may spread over: its pool's (every rack when it
        may go anywhere)."""
        pool = self.pool_of(partition)
        return self.racks if pool is None else self._pool(pool)[1]

    def fits(self, tp: TopicPartition, leaving: int, broker_id: int) -> bool:
        """Whether `broker_id` may take the replica of `tp` that `leaving` holds."""
        broker = self.brokers.get(broker_id)
        current = self.replicas[tp]
        if (
            broker is None
            or not broker.usable
            or broker_id in self.excluded
            or broker_id in current
        ):
            return False
        partition = self.partitions[tp]
        pool = self.pool_of(partition)
        if pool is not None and broker.canary != pool:
            return False
        return self._rack_fits(current, leaving, broker, self.racks_for(partition))

    def _rack_fits(
        self, current: list[int], leaving: int, broker: BrokerInfo, racks: Collection[str]
    ) -> bool:
        """Goal 1: the move leaves the partition on as many racks as it can be (or, already
        short of that, on no fewer than it is)."""
        if not racks:
            return True  # no racks: nothing to spread
        before = self._rack_count(current, racks)
        after = self._rack_count([*(r for r in current if r != leaving), broker.broker_id], racks)
        return after >= min(before, len(current), len(racks))

    def _rack_count(self, replicas: Iterable[int], racks: Collection[str]) -> int:
        return len({self.brokers[r].rack for r in replicas if r in self.brokers} & set(racks))

    def violations(self, tp: TopicPartition) -> list[int]:
        """The replicas of `tp` that break goal 1 or 2 where a broker could fix it."""
        partition = self.partitions[tp]
        current = self.replicas[tp]
        pool = self.pool_of(partition)
        wrong = [
            r
            for r in current
            if pool is not None and r in self.brokers and self.brokers[r].canary != pool
        ]
        racks = self.racks_for(partition)
        if racks and self._rack_count(current, racks) < min(len(current), len(racks)):
            # Short of racks: every replica beyond the first on its rack is in the way.
            seen: set[str | None] = set()
            for r in current:
                rack = self.brokers[r].rack if r in self.brokers else None
                if (rack in seen or rack not in racks) and r not in wrong:
                    wrong.append(r)
                seen.add(rack)
        return wrong

    # --- moving --------------------------------------------------------------------------------
    def move(self, tp: TopicPartition, leaving: int, joining: int) -> None:
        current = self.replicas[tp]
        position = current.index(leaving)
        if position == 0:
            self.preferred[leaving] -= 1
            self.preferred[joining] += 1
        current[position] = joining
        self.on[leaving].pop(tp, None)
        self.on[joining][tp] = None
        self.moved.add(tp)

    def reorder(self, tp: TopicPartition, first: int) -> None:
        current = self.replicas[tp]
        self.preferred[current[0]] -= 1
        self.preferred[first] += 1
        current.remove(first)
        current.insert(0, first)
        self.moved.add(tp)

    def load(self, broker_id: int) -> tuple[int, float]:
        """How loaded a broker is: replicas (goal 3), then replicas per log dir (goal 5)."""
        count = len(self.on.get(broker_id, ()))
        dirs = max(1, self.brokers[broker_id].log_dirs) if broker_id in self.brokers else 1
        return count, count / dirs

    def best_home(self, tp: TopicPartition, leaving: int) -> int | None:
        """Where the replica `leaving` holds goes: a broker it fits on, the one that spreads
        the partition over the most racks, then the least loaded (goals 1, 3, 5)."""
        candidates = [b for b in self.brokers if self.fits(tp, leaving, b)]
        if not candidates:
            return None
        racks = self.racks_for(self.partitions[tp])
        kept = [r for r in self.replicas[tp] if r != leaving]

        def spread(b: int) -> int:
            return self._rack_count([*kept, b], racks) if racks else 0

        return min(candidates, key=lambda b: (-spread(b), *self.load(b), b))

    def moves(self) -> list[Move]:
        found = []
        for tp in self.moved:
            partition = self.partitions[tp]
            after = tuple(self.replicas[tp])
            if after != partition.replicas:
                found.append(Move(tp[0], tp[1], partition.replicas, after))
        return sorted(found, key=lambda m: (m.topic, m.partition))


# --- skew: what the plan is judged by --------------------------------------------------------
def skew(
    brokers: Sequence[BrokerInfo],
    assignment: Mapping[TopicPartition, Sequence[int]],
    partitions: Mapping[TopicPartition, PartitionInfo],
) -> dict[str, object]:
    """The cluster's imbalance: replicas and preferred leaders per usable broker (their spread,
    max - min, within each pool), replicas per log dir, and the partitions breaking the rack and
    canary goals."""
    usable = [b for b in brokers if b.usable]
    replicas: dict[int, int] = {b.broker_id: 0 for b in usable}
    leaders: dict[int, int] = {b.broker_id: 0 for b in usable}
    for current in assignment.values():
        for position, broker_id in enumerate(current):
            if broker_id in replicas:
                replicas[broker_id] += 1
                if position == 0:
                    leaders[broker_id] += 1
    state = _State(brokers, list(partitions.values()))
    state.replicas = {tp: list(r) for tp, r in assignment.items()}
    rack = canary = 0
    for tp in assignment:
        wrong = state.violations(tp)
        if not wrong:
            continue
        partition = partitions[tp]
        pool = state.pool_of(partition)
        if pool is not None and any(
            r in state.brokers and state.brokers[r].canary != pool for r in assignment[tp]
        ):
            canary += 1
        else:
            rack += 1
    per_dir = {b.broker_id: round(replicas[b.broker_id] / max(1, b.log_dirs), 2) for b in usable}
    return {
        "replicas": replicas,
        "leaders": leaders,
        "replica_spread": _pool_spread(usable, replicas),
        "leader_spread": _pool_spread(usable, leaders),
        "replicas_per_log_dir_spread": round(
            max(per_dir.values(), default=0) - min(per_dir.values(), default=0), 2
        ),
        "rack_violations": rack,
        "canary_violations": canary,
    }


def _pool_spread(usable: Sequence[BrokerInfo], counts: Mapping[int, int]) -> int:
    """The largest max - min of `counts` within one pool (canary brokers, the others)."""
    spread = 0
    for pool in (True, False):
        values = [counts[b.broker_id] for b in usable if b.canary == pool]
        if values:
            spread = max(spread, max(values) - min(values))
    return spread


# --- the three plans -------------------------------------------------------------------------
def plan_rebalance(
    brokers: Sequence[BrokerInfo],
    partitions: Sequence[PartitionInfo],
    *,
    max_moves: int = MAX_MOVES,
) -> Plan:
    state = _State(brokers, partitions)
    _fix_violations(state)
    for pool in (True, False):
        _balance_replicas(state, pool, max_moves)
        _balance_leaders(state, pool)
    return _finished("rebalance", None, brokers, partitions, state, max_moves)


def plan_drain(
    brokers: Sequence[BrokerInfo], partitions: Sequence[PartitionInfo], broker_id: int
) -> Plan:
    """Every replica off `broker_id`, each to the least loaded broker its goals allow; refused
    when one has nowhere to go (a half-drained broker cannot be decommissioned)."""
    known = {b.broker_id for b in brokers}
    if broker_id not in known:
        raise PlanRefused(f"Broker {broker_id} is not registered.", unknown_broker=True)
    state = _State(brokers, partitions)
    state.excluded.add(broker_id)
    stuck = []
    for tp in sorted(state.on.get(broker_id, {})):
        home = state.best_home(tp, broker_id)
        if home is None:
            stuck.append(f"{tp[0]}-{tp[1]}")
            continue
        state.move(tp, broker_id, home)
    if stuck:
        raise PlanRefused(
            f"Broker {broker_id} cannot be drained: {len(stuck)} partition(s) have nowhere to "
            f"go ({', '.join(stuck[:5])}{', ...' if len(stuck) > 5 else ''}); add a broker "
            "or lower their replication factor first."
        )
    return _finished("drain", broker_id, brokers, partitions, state, MAX_MOVES)


def plan_fill(
    brokers: Sequence[BrokerInfo],
    partitions: Sequence[PartitionInfo],
    broker_id: int,
    *,
    max_moves: int = MAX_MOVES,
) -> Plan:
    """`broker_id` takes replicas from the most loaded brokers of its pool until it holds its
    share, then its share of preferred leaders."""
    target = next((b for b in brokers if b.broker_id == broker_id), None)
    if target is None:
        raise PlanRefused(f"Broker {broker_id} is not registered.", unknown_broker=True)
    if not target.usable:
        raise PlanRefused(
            f"Broker {broker_id} is fenced or shutting down: it cannot take replicas."
        )
    state = _State(brokers, partitions)
    pool_brokers = [b.broker_id for b in brokers if b.usable and b.canary == target.canary]
    total = sum(len(state.on.get(b, ())) for b in pool_brokers)
    share = total // max(1, len(pool_brokers))
    donors = [(-len(state.on.get(b, ())), b) for b in pool_brokers if b != broker_id]
    heapq.heapify(donors)
    while len(state.on.get(broker_id, ())) < share and donors and len(state.moved) < max_moves:
        count, donor = heapq.heappop(donors)
        if -count <= len(state.on.get(broker_id, ())) + 1:
            break
        tp = _movable_from(state, donor, broker_id)
        if tp is None:
            continue  # nothing of this donor may go there; the others may still give
        state.move(tp, donor, broker_id)
        heapq.heappush(donors, (-len(state.on[donor]), donor))
    _balance_leaders(state, target.canary)
    return _finished("fill", broker_id, brokers, partitions, state, max_moves)


def _movable_from(state: _State, donor: int, joining: int) -> TopicPartition | None:
    """A partition on `donor` whose replica there may move to `joining`: one it is not the
    first replica of first (no leadership moves), in the order the partitions came."""
    held = state.on.get(donor, {})
    for leads in (False, True):
        for tp in held:
            if (state.replicas[tp][0] == donor) != leads or not state.partitions[tp].movable:
                continue
            if state.fits(tp, donor, joining):
                return tp
    return None


def _fix_violations(state: _State) -> None:
    """Goals 1 and 2: each replica on the wrong rack or pool, to a broker that fixes it."""
    for tp in sorted(state.partitions):
        if not state.partitions[tp].movable:
            continue
        for leaving in state.violations(tp):
            home = state.best_home(tp, leaving)
            if home is not None:
                state.move(tp, leaving, home)


def _balance_replicas(state: _State, pool: bool, max_moves: int) -> None:
    """Goal 3 within a pool: from the most to the least loaded broker, one replica at a time,
    until every broker is within one replica of the others (or nothing more may move)."""
    members = [b.broker_id for b in state.brokers.values() if b.usable and b.canary == pool]
    if len(members) < 2:
        return
    stuck: set[int] = set()
    while len(state.moved) < max_moves:
        ranked = sorted(members, key=lambda b: (*state.load(b), b))
        heavy = next((b for b in reversed(ranked) if b not in stuck), None)
        if heavy is None:
            return
        light = ranked[0]
        if len(state.on.get(heavy, ())) - len(state.on.get(light, ())) <= 1:
            return
        tp = None
        for candidate in ranked[: max(1, len(ranked) // 2)]:
            if len(state.on.get(heavy, ())) - len(state.on.get(candidate, ())) <= 1:
                break
            tp = _movable_from(state, heavy, candidate)
            if tp is not None:
                state.move(tp, heavy, candidate)
                break
        if tp is None:
            stuck.add(heavy)  # nothing it holds may go anywhere lighter


def _balance_leaders(state: _State, pool: bool) -> None:
    """Goal 4 within a pool: a partition whose first replica's broker leads more than its share
    puts a replica on a broker that leads fewer first (a reorder; canary partitions keep the
    order their elections use)."""
    members = {b.broker_id for b in state.brokers.values() if b.usable and b.canary == pool}
    if len(members) < 2:
        return
    total = sum(state.preferred.get(b, 0) for b in members)
    ceiling = -(-total // len(members))
    floor = total // len(members)
    for tp in sorted(state.partitions):
        partition = state.partitions[tp]
        current = state.replicas[tp]
        if not current or partition.is_canary or not partition.movable:
            continue
        first = current[0]
        if first not in members or state.preferred[first] <= ceiling:
            continue
        better = [
            r
            for r in current[1:]
            if r in members and state.preferred[r] < floor and r in partition.isr
        ]
        if better:
            state.reorder(tp, min(better, key=lambda r: (state.preferred[r], r)))


def _finished(
    goal: str,
    broker_id: int | None,
    brokers: Sequence[BrokerInfo],
    partitions: Sequence[PartitionInfo],
    state: _State,
    max_moves: int,
) -> Plan:
    moves = state.moves()[:max_moves]
    by_tp = {p.tp: p for p in partitions}
    before = skew(brokers, {p.tp: p.replicas for p in partitions}, by_tp)
    after_assignment = {p.tp: p.replicas for p in partitions}
    after_assignment.update({(m.topic, m.partition): m.after for m in moves})
    after = skew(brokers, after_assignment, by_tp)
    if moves:
        data = sum(1 for m in moves if not m.reorder_only)
        message = (
            f"{len(moves)} partition(s) to change: {data} move data, "
            f"{len(moves) - data} only reorder their replicas."
        )
    elif goal == "drain":
        message = f"Broker {broker_id} holds no replicas: nothing to move."
    else:
        message = "The cluster cannot be improved by this plan: nothing to move."
    return Plan(goal, broker_id, tuple(moves), before, after, message)


def brokers_involved(moves: Iterable[Move]) -> set[int]:
    return {b for m in moves for b in (*m.before, *m.after)}
