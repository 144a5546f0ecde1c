"""What a topic action would do, and what one did, summarised for a person: a leader election's
plan (before it runs, as Cruise Control proposes before it executes) and its result, grouped by
outcome, reason and broker; and a new topic's placement (brokers, racks, canary partitions).

Pure: every function takes rows already read (one query for a topic's partitions, one for the
brokers) and decides with the controller's own rules from the pure core (`change_partition`,
`preferred_leader`, `BrokerRings.place`), so the preview is the controller's answer for the
state it was read in, never a second opinion.
"""

from __future__ import annotations

import dataclasses
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence

from controlplane.controller.canary.rules import CANARY_BROKER_POD, preferred_leader
from controlplane.controller.errors import ApiError, Errors
from controlplane.controller.image import PartitionRegistration
from controlplane.controller.partitions.changes import Election, change_partition
from controlplane.controller.records import NO_LEADER
from controlplane.controller.replication.placement import BrokerRings, UsableBroker

UNCLEAN = "UNCLEAN"

# Outcomes, in the order a summary lists them.
ELECTED = "elected"
NOT_NEEDED = "not needed"
NOT_POSSIBLE = "not possible"
OUTCOMES = (NOT_POSSIBLE, ELECTED, NOT_NEEDED)

# Why a partition's leadership does not move (or moves elsewhere than its preferred replica).
REASONS = {
    "LEADS": "led by its preferred replica already",
    "HAS_LEADER": "has a leader (an unclean election only elects leaderless partitions)",
    "MOVES": "moves to its preferred replica",
    "OTHER_REPLICA": "leaderless: another ISR replica leads (its preferred one cannot)",
    "UNCLEAN_REPLICA": "a replica outside the ISR leads: messages it lacks are lost",
    "UNREGISTERED": "its broker is not registered",
    "FENCED": "its broker is fenced",
    "SHUTTING_DOWN": "its broker is in controlled shutdown",
    "OFFLINE": "its replica is offline (a failed log dir)",
    "NOT_IN_ISR": "not in the ISR (still catching up)",
    "NO_LIVE_REPLICA": "no replica is on a live broker with its log dir online",
    "UNKNOWN": "the controller refused it",
}


@dataclasses.dataclass(frozen=True, slots=True)
class BrokerRow:
    broker_id: int
    rack: str | None
    fenced: bool
    in_controlled_shutdown: bool
    pod: str = "broker"

    @property
    def state(self) -> str:
        if self.fenced:
            return "FENCED"
        if self.in_controlled_shutdown:
            return "CONTROLLED_SHUTDOWN"
        return "UNFENCED"

    @property
    def active(self) -> bool:
        """Kafka's isActive: may lead (`acceptable_leaders`)."""
        return not self.fenced and not self.in_controlled_shutdown

    @property
    def canary(self) -> bool:
        return self.pod == CANARY_BROKER_POD


@dataclasses.dataclass(frozen=True, slots=True)
class PartitionRow:
    partition: int
    leader: int
    replicas: tuple[int, ...]
    isr: tuple[int, ...]
    offline_replicas: tuple[int, ...] = ()
    is_canary: bool = False


@dataclasses.dataclass(frozen=True, slots=True)
class PartitionPlan:
    """One partition: its outcome, why, the broker the group is about (the new leader, the
    leader kept, or the preferred replica that cannot lead) and where leadership goes."""

    row: PartitionRow
    outcome: str
    reason: str
    broker: int
    target: int  # the leader after the election (NO_LEADER: none)
    error: str = ""  # the error Kafka answers for it (ELECTION_NOT_NEEDED, ...); "" for none
    message: str = ""  # the controller's message, on a result

    @property
    def detail(self) -> str:
        row = self.row
        leader = "none" if row.leader == NO_LEADER else str(row.leader)
        move = f"leader {leader}"
        if self.outcome == ELECTED and self.target != row.leader:
            move += f" → {self.target}"
        isr = ",".join(map(str, row.isr))
        replicas = ",".join(map(str, row.replicas))
        text = f"{row.partition}: {move}; replicas [{replicas}], ISR [{isr}]"
        if row.offline_replicas:
            text += f", offline [{','.join(map(str, row.offline_replicas))}]"
        return text


@dataclasses.dataclass(slots=True)
class PlanGroup:
    outcome: str
    reason: str
    error: str
    broker: int
    broker_label: str
    partitions: list[PartitionPlan]

    @property
    def reason_text(self) -> str:
        return REASONS.get(self.reason, self.reason)

    @property
    def count(self) -> int:
        return len(self.partitions)

    @property
    def indexes(self) -> str:
        return ", ".join(str(p.row.partition) for p in self.partitions)

    @property
    def css(self) -> str:
        return {NOT_POSSIBLE: "danger", ELECTED: "ok", NOT_NEEDED: "muted"}[self.outcome]


@dataclasses.dataclass(slots=True)
class ElectionPlan:
    """A whole election, grouped: for the preview (before) or the result (after)."""

    topic: str
    election_type: str
    partitions: list[PartitionPlan]

    def count(self, outcome: str) -> int:
        return sum(1 for p in self.partitions if p.outcome == outcome)

    @property
    def elected(self) -> int:
        return self.count(ELECTED)

    @property
    def not_needed(self) -> int:
        return self.count(NOT_NEEDED)

    @property
    def not_possible(self) -> int:
        return self.count(NOT_POSSIBLE)

    @property
    def total(self) -> int:
        return len(self.partitions)

    def groups(self, brokers: Mapping[int, BrokerRow]) -> list[PlanGroup]:
        """By outcome (not possible first), then reason and broker, largest group first."""
        keyed: dict[tuple[str, str, str, int], list[PartitionPlan]] = {}
        for plan in self.partitions:
            keyed.setdefault((plan.outcome, plan.reason, plan.error, plan.broker), []).append(plan)
        groups = [
            PlanGroup(outcome, reason, error, broker, broker_label(broker, brokers), plans)
            for (outcome, reason, error, broker), plans in keyed.items()
        ]
        groups.sort(key=lambda g: (OUTCOMES.index(g.outcome), -g.count, g.reason, g.broker))
        return groups

    @property
    def by_broker(self) -> list[tuple[int, int]]:
        """Where the elected partitions' leadership goes: (broker, partitions), most first."""
        moved = Counter(p.target for p in self.partitions if p.outcome == ELECTED)
        return sorted(moved.items(), key=lambda item: (-item[1], item[0]))

    def sentence(self) -> str:
        """`12 elected (broker 1: 8, broker 2: 4), 3 not needed, 2 not possible`."""
        text = f"{self.elected} elected"
        if self.by_broker:
            text += " (" + ", ".join(f"to broker {b}: {n}" for b, n in self.by_broker) + ")"
        return f"{text}, {self.not_needed} not needed, {self.not_possible} not possible"


def broker_label(broker_id: int, brokers: Mapping[int, BrokerRow]) -> str:
    if broker_id == NO_LEADER:
        return "no broker"
    broker = brokers.get(broker_id)
    if broker is None:
        return f"broker {broker_id} (not registered)"
    rack = f", rack {broker.rack}" if broker.rack else ""
    return f"broker {broker_id} ({broker.state}{rack})"


def _registration(row: PartitionRow) -> PartitionRegistration:
    return PartitionRegistration(
        replicas=row.replicas,
        isr=row.isr,
        leader=row.leader,
        offline_replicas=row.offline_replicas,
        is_canary=row.is_canary,
    )


def _why_not(broker_id: int, row: PartitionRow, brokers: Mapping[int, BrokerRow]) -> str:
    """Why `broker_id` cannot lead `row`: the first of the controller's conditions it fails
    (`change_partition`'s valid leader: in the ISR, online, on an active broker)."""
    broker = brokers.get(broker_id)
    if broker is None:
        return "UNREGISTERED"
    if broker.fenced:
        return "FENCED"
    if broker.in_controlled_shutdown:
        return "SHUTTING_DOWN"
    if broker_id in row.offline_replicas:
        return "OFFLINE"
    if broker_id not in row.isr:
        return "NOT_IN_ISR"
    return "UNKNOWN"


def plan_partition(
    row: PartitionRow, brokers: Mapping[int, BrokerRow], election_type: str
) -> PartitionPlan:
    """What ElectLeaders would answer for this partition (`elections._elect_one`), and why."""
    canary = frozenset(b for b, broker in brokers.items() if broker.canary)
    registration = _registration(row)
    wanted = preferred_leader(registration, canary)
    unclean = election_type == UNCLEAN
    if not unclean and row.leader == wanted:
        return PartitionPlan(
            row, NOT_NEEDED, "LEADS", row.leader, row.leader, "ELECTION_NOT_NEEDED"
        )
    if unclean and row.leader != NO_LEADER:
        return PartitionPlan(
            row, NOT_NEEDED, "HAS_LEADER", row.leader, row.leader, "ELECTION_NOT_NEEDED"
        )

    def acceptable(broker_id: int) -> bool:
        broker = brokers.get(broker_id)
        return broker is not None and broker.active

    record = change_partition(
        ("", row.partition),
        registration,
        acceptable=acceptable,
        election=Election.UNCLEAN if unclean else Election.PREFERRED,
        canary_brokers=canary,
    )
    if record is None or record.leader == NO_LEADER:
        if unclean:
            return PartitionPlan(
                row, NOT_POSSIBLE, "NO_LIVE_REPLICA", NO_LEADER, NO_LEADER,
                "ELIGIBLE_LEADERS_NOT_AVAILABLE",
            )  # fmt: skip
        reason = _why_not(wanted, row, brokers)
        return PartitionPlan(
            row, NOT_POSSIBLE, reason, wanted, NO_LEADER, "PREFERRED_LEADER_NOT_AVAILABLE"
        )
    target = record.leader
    if unclean:
        reason = "MOVES" if target in row.isr else "UNCLEAN_REPLICA"
    else:
        reason = "MOVES" if target == wanted else "OTHER_REPLICA"
    return PartitionPlan(row, ELECTED, reason, target, target)


def plan_election(
    topic: str,
    rows: Iterable[PartitionRow],
    brokers: Mapping[int, BrokerRow],
    election_type: str,
) -> ElectionPlan:
    return ElectionPlan(
        topic, election_type, [plan_partition(row, brokers, election_type) for row in rows]
    )


def election_result(
    topic: str,
    election_type: str,
    answered: Mapping[int, tuple[int, str]],
    rows_now: Mapping[int, PartitionRow],
    brokers: Mapping[int, BrokerRow],
) -> ElectionPlan:
    """An ElectLeaders answer (`answered`: partition -> (error code, message)), explained by
    the partitions as they are after it: an elected partition's broker is its new leader, one
    that needed nothing its leader, one that could not the replica that could not lead."""
    plans = []
    for partition, (code, message) in sorted(answered.items()):
        row = rows_now.get(partition) or PartitionRow(partition, NO_LEADER, (), ())
        if code == Errors.NONE:
            plans.append(PartitionPlan(row, ELECTED, "MOVES", row.leader, row.leader))
            continue
        if code == Errors.ELECTION_NOT_NEEDED:
            reason = "HAS_LEADER" if election_type == UNCLEAN else "LEADS"
            plans.append(
                PartitionPlan(
                    row, NOT_NEEDED, reason, row.leader, row.leader, Errors(code).name, message
                )
            )
            continue
        # Not elected: the state it was left in says why (the preview's rule on it now).
        now = plan_partition(row, brokers, election_type) if row.replicas else None
        reason = now.reason if now is not None and now.outcome == NOT_POSSIBLE else "UNKNOWN"
        broker = now.broker if now is not None and now.outcome == NOT_POSSIBLE else NO_LEADER
        try:
            error = Errors(code).name
        except ValueError:
            error = f"UNKNOWN_ERROR_CODE_{code}"
        plans.append(PartitionPlan(row, NOT_POSSIBLE, reason, broker, NO_LEADER, error, message))
    return ElectionPlan(topic, election_type, plans)


# --- a new topic's placement ------------------------------------------------------------------
@dataclasses.dataclass(frozen=True, slots=True)
class PlacedPartition:
    partition: int
    replicas: tuple[int, ...]
    racks: tuple[str, ...]
    canary: bool
    isolated: bool
    fenced: tuple[int, ...]  # replicas on fenced brokers: out of the ISR from the start

    @property
    def leader(self) -> int:
        return self.replicas[0]


@dataclasses.dataclass(frozen=True, slots=True)
class BrokerShare:
    broker_id: int
    rack: str
    state: str
    replicas: int
    leaders: int
    canary: bool


@dataclasses.dataclass(frozen=True, slots=True)
class Placement:
    partitions: list[PlacedPartition]
    brokers: list[BrokerShare]
    error: str = ""  # the controller's refusal, when it could not place them

    @property
    def racks(self) -> int:
        return len({b.rack for b in self.brokers})

    @property
    def same_rack(self) -> int:
        """Partitions with two replicas on one rack although another rack has none of them."""
        total = self.racks
        return sum(1 for p in self.partitions if len(set(p.racks)) < min(len(p.racks), total))

    @property
    def on_fenced(self) -> int:
        return sum(1 for p in self.partitions if p.fenced)


def placement(
    topic: str,
    brokers: Sequence[BrokerRow],
    *,
    num_partitions: int,
    replication_factor: int,
    canary: Sequence[int],
) -> Placement:
    """Where CreateTopics would put the replicas: the controller's `BrokerRings.place` over the
    brokers it would use (registered, not shutting down), read-only."""
    usable = [
        UsableBroker(b.broker_id, b.rack, b.fenced, b.canary)
        for b in brokers
        if not b.in_controlled_shutdown
    ]
    try:
        placed = BrokerRings(usable).place(
            seed_name=topic,
            first_partition=0,
            num_partitions=num_partitions,
            replication_factor=replication_factor,
            canary=canary,
        )
    except ApiError as error:
        return Placement([], [], error.message or error.error.name)
    by_id = {b.broker_id: b for b in brokers}
    canary_set = frozenset(canary)
    partitions = [
        PlacedPartition(
            partition=index,
            replicas=replicas,
            racks=tuple(by_id[r].rack or "—" for r in replicas),
            canary=index in canary_set,
            isolated=is_isolated,
            fenced=tuple(r for r in replicas if by_id[r].fenced),
        )
        for index, (replicas, is_isolated) in enumerate(
            zip(placed.replicas, placed.isolated, strict=True)
        )
    ]
    replica_counts = Counter(r for p in partitions for r in p.replicas)
    leader_counts = Counter(p.leader for p in partitions)
    shares = [
        BrokerShare(
            b.broker_id,
            b.rack or "—",
            b.state,
            replica_counts[b.broker_id],
            leader_counts[b.broker_id],
            b.canary,
        )
        for b in brokers
        if not b.in_controlled_shutdown
    ]
    return Placement(partitions, shares)
