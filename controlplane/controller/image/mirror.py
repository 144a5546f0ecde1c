"""MirrorMaker 2's part of the image (KIP-710): the configuration text and each flow's group.

Replays MirrorMakerConfigRecord, MirrorGroupRecord, MirrorAssignmentRecord,
MirrorTaskConfigsRecord and MirrorTargetStateRecord, and the snapshot's whole-state forms
(MirrorMakerConfigSnapshotRecord, MirrorFlowSnapshotRecord). A flow is keyed by (source, target)
alias.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from controlplane.controller.mirror_records import (
    TARGET_STATES,
    MirrorAssignmentRecord,
    MirrorFlowSnapshotRecord,
    MirrorGroupRecord,
    MirrorMakerConfigRecord,
    MirrorMakerConfigSnapshotRecord,
    MirrorMember,
    MirrorTargetStateRecord,
    MirrorTaskConfigsRecord,
    WorkerAssignment,
)
from controlplane.controller.records import NO_OFFSET, Record

FlowKey = tuple[str, str]  # (source alias, target alias)


@dataclasses.dataclass(frozen=True, slots=True)
class MirrorConfig:
    text: str
    offset: int


@dataclasses.dataclass(frozen=True, slots=True)
class FlowGroup:
    """One flow's group and what its leader persisted. Replaced whole on every change."""

    generation: int = 0
    leader: str = ""  # a member id; empty when the group is empty
    members: tuple[MirrorMember, ...] = ()
    assignment_generation: int = 0  # 0: no assignment yet
    assignments: tuple[WorkerAssignment, ...] = ()
    task_configs: Mapping[str, tuple[dict[str, str], ...]] = dataclasses.field(default_factory=dict)
    target_states: Mapping[str, str] = dataclasses.field(default_factory=dict)
    offset: int = NO_OFFSET  # the offset of the flow's last record

    def member(self, member_id: str) -> MirrorMember | None:
        return next((m for m in self.members if m.member_id == member_id), None)

    def member_by_worker(self, worker_id: str) -> MirrorMember | None:
        return next((m for m in self.members if m.worker_id == worker_id), None)

    @property
    def state(self) -> str:
        """Kafka's group states: Empty, CompletingRebalance (waiting for the leader's
        assignment of this generation), Stable."""
        if not self.members:
            return "Empty"
        if self.assignment_generation != self.generation:
            return "CompletingRebalance"
        return "Stable"

    def assignment_of(self, member_id: str) -> WorkerAssignment | None:
        if self.assignment_generation != self.generation:
            return None
        return next((a for a in self.assignments if a.member_id == member_id), None)

    def as_data(self) -> dict[str, Any]:
        return {
            "generation": self.generation,
            "leader": self.leader,
            "members": [dataclasses.asdict(m) for m in self.members],
            "assignment_generation": self.assignment_generation,
            "assignments": [
                {"member_id": a.member_id, "connectors": list(a.connectors), "tasks": list(a.tasks)}
                for a in self.assignments
            ],
            "task_configs": {k: [dict(t) for t in v] for k, v in sorted(self.task_configs.items())},
            "target_states": dict(sorted(self.target_states.items())),
            "offset": self.offset,
        }

    @classmethod
    def from_data(cls, data: Mapping[str, Any]) -> FlowGroup:
        return cls(
            generation=int(data["generation"]),
            leader=str(data["leader"]),
            members=tuple(MirrorMember(**m) for m in data["members"]),
            assignment_generation=int(data["assignment_generation"]),
            assignments=tuple(
                WorkerAssignment(a["member_id"], tuple(a["connectors"]), tuple(a["tasks"]))
                for a in data["assignments"]
            ),
            task_configs={
                str(k): tuple(dict(t) for t in v) for k, v in data["task_configs"].items()
            },
            target_states={str(k): str(v) for k, v in data["target_states"].items()},
            offset=int(data["offset"]),
        )


@dataclasses.dataclass(slots=True)
class MirrorImage:
    config: MirrorConfig | None = None
    flows: dict[FlowKey, FlowGroup] = dataclasses.field(default_factory=dict)

    def apply(self, delta: MirrorDelta) -> None:
        if delta.changed_config is not None:
            self.config = delta.changed_config
        self.flows.update(delta.changed_flows)

    def as_comparable(self) -> dict[str, Any]:
        return {
            "mirror_config": None if self.config is None else dataclasses.asdict(self.config),
            "mirror_flows": {f"{s}->{t}": g.as_data() for (s, t), g in sorted(self.flows.items())},
        }

    def records(self) -> Iterator[Record]:
        """The records that rebuild this part in an empty image: the configuration, then each
        flow whole, by (source, target). Whole-state records, since the state keeps the offsets
        it was written at and a flow's assignment may be of an older generation than its
        members."""
        if self.config is not None:
            yield MirrorMakerConfigSnapshotRecord(text=self.config.text, offset=self.config.offset)
        for (source, target), group in sorted(self.flows.items()):
            yield MirrorFlowSnapshotRecord(
                source=source,
                target=target,
                generation=group.generation,
                leader=group.leader,
                members=group.members,
                assignment_generation=group.assignment_generation,
                assignments=group.assignments,
                task_configs=dict(sorted(group.task_configs.items())),
                target_states=dict(sorted(group.target_states.items())),
                offset=group.offset,
            )


class MirrorDelta:
    """The configuration and flow groups changed over a MirrorImage."""

    def __init__(self, image: MirrorImage) -> None:
        self.image = image
        self.changed_config: MirrorConfig | None = None
        self.changed_flows: dict[FlowKey, FlowGroup] = {}

    def replayers(self) -> dict[type[Record], Callable[[Any, int], None]]:
        return {
            MirrorMakerConfigRecord: self.replay_config,
            MirrorGroupRecord: self.replay_group,
            MirrorAssignmentRecord: self.replay_assignment,
            MirrorTaskConfigsRecord: self.replay_task_configs,
            MirrorTargetStateRecord: self.replay_target_state,
            MirrorMakerConfigSnapshotRecord: self.replay_config_snapshot,
            MirrorFlowSnapshotRecord: self.replay_flow_snapshot,
        }

    # --- reads through the changes ---------------------------------------------------------
    def config(self) -> MirrorConfig | None:
        return self.changed_config if self.changed_config is not None else self.image.config

    def flow(self, key: FlowKey) -> FlowGroup:
        found = self.changed_flows.get(key) or self.image.flows.get(key)
        return found if found is not None else FlowGroup()

    def all_flows(self) -> Iterator[tuple[FlowKey, FlowGroup]]:
        for key, group in self.image.flows.items():
            if key not in self.changed_flows:
                yield key, group
        yield from self.changed_flows.items()

    # --- replay ----------------------------------------------------------------------------
    def replay_config(self, record: MirrorMakerConfigRecord, offset: int) -> None:
        self.changed_config = MirrorConfig(record.text, offset)

    def replay_group(self, record: MirrorGroupRecord, offset: int) -> None:
        key = (record.source, record.target)
        current = self.flow(key)
        if record.generation <= current.generation:
            raise ValueError(
                f"MirrorGroupRecord for {key} goes back from generation "
                f"{current.generation} to {record.generation}"
            )
        if bool(record.members) != bool(record.leader) or (
            record.leader and record.leader not in {m.member_id for m in record.members}
        ):
            raise ValueError(f"MirrorGroupRecord for {key}: its leader is not one of its members")
        self.changed_flows[key] = dataclasses.replace(
            current,
            generation=record.generation,
            leader=record.leader,
            members=record.members,
            offset=offset,
        )

    def replay_assignment(self, record: MirrorAssignmentRecord, offset: int) -> None:
        key = (record.source, record.target)
        current = self.flow(key)
        if record.generation != current.generation:
            raise ValueError(
                f"MirrorAssignmentRecord for {key} of generation {record.generation}; "
                f"the group is at {current.generation}"
            )
        members = {m.member_id for m in current.members}
        if any(a.member_id not in members for a in record.assignments):
            raise ValueError(f"MirrorAssignmentRecord for {key} names a worker not in the group")
        self.changed_flows[key] = dataclasses.replace(
            current,
            assignment_generation=record.generation,
            assignments=record.assignments,
            offset=offset,
        )

    def replay_task_configs(self, record: MirrorTaskConfigsRecord, offset: int) -> None:
        key = (record.source, record.target)
        current = self.flow(key)
        if record.generation != current.generation:
            raise ValueError(
                f"MirrorTaskConfigsRecord for {key} of generation {record.generation}; "
                f"the group is at {current.generation}"
            )
        task_configs = {**current.task_configs, record.connector: record.task_configs}
        self.changed_flows[key] = dataclasses.replace(
            current, task_configs=task_configs, offset=offset
        )

    def replay_target_state(self, record: MirrorTargetStateRecord, offset: int) -> None:
        if record.state not in TARGET_STATES:
            raise ValueError(f"MirrorTargetStateRecord with unknown state {record.state!r}")
        key = (record.source, record.target)
        current = self.flow(key)
        states = {**current.target_states, record.connector: record.state}
        self.changed_flows[key] = dataclasses.replace(current, target_states=states, offset=offset)

    def replay_config_snapshot(self, record: MirrorMakerConfigSnapshotRecord, offset: int) -> None:
        self.changed_config = MirrorConfig(record.text, record.offset)

    def replay_flow_snapshot(self, record: MirrorFlowSnapshotRecord, offset: int) -> None:
        key = (record.source, record.target)
        if bool(record.members) != bool(record.leader) or (
            record.leader and record.leader not in {m.member_id for m in record.members}
        ):
            raise ValueError(
                f"MirrorFlowSnapshotRecord for {key}: its leader is not one of its members"
            )
        if not TARGET_STATES.issuperset(record.target_states.values()):
            raise ValueError(f"MirrorFlowSnapshotRecord for {key} with an unknown target state")
        self.changed_flows[key] = FlowGroup(
            generation=record.generation,
            leader=record.leader,
            members=record.members,
            assignment_generation=record.assignment_generation,
            assignments=record.assignments,
            task_configs=dict(record.task_configs),
            target_states=dict(record.target_states),
            offset=record.offset,
        )
