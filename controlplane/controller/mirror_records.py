"""MirrorMaker 2 records (KIP-710): the configuration text and each flow's group state.

Kafka keeps MirrorMaker's state in the target cluster's internal topics (the Connect config topic
holds connector and task configs and target states, the group coordinator's log holds each
group's generation, leader and members). Here they are metadata records of the control plane
that holds the configuration. Heartbeats and connector statuses are not metadata and never reach
the log (the mirror app's member store keeps them).

No record carries a secret: the configuration refuses literal values for sensitive keys (they
must be config provider references, resolved on each mirror node), and task configs are derived
from the configuration without resolving anything.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any, ClassVar

from controlplane.controller.records import Record, register_record_type

STARTED = "STARTED"  # Connect's TargetState
PAUSED = "PAUSED"
TARGET_STATES = frozenset({STARTED, PAUSED})


@register_record_type
@dataclasses.dataclass(frozen=True, slots=True)
class MirrorMakerConfigRecord(Record):
    """The whole MirrorMaker 2 properties text, exactly as it was sent (references unresolved)."""

    TYPE: ClassVar[str] = "MirrorMakerConfigRecord"
    text: str


@dataclasses.dataclass(frozen=True, slots=True)
class MirrorMember:
    """A mirror node's worker in a flow's group. `member_id` is the node process's (a restarted
    node is a new member); `worker_id` is `<REST_HOST_NAME>/<SOURCE>__<TARGET>` (KIP-710)."""

    member_id: str
    worker_id: str
    rest_url: str
    session_timeout_ms: int
    joined_ms: int


@register_record_type
@dataclasses.dataclass(frozen=True, slots=True)
class MirrorGroupRecord(Record):
    """A flow's group after a membership change: a new generation, its leader and members (as
    Kafka's group coordinator writes GroupMetadataValue on each rebalance). `leader` is a
    member id, empty when the group is empty."""

    TYPE: ClassVar[str] = "MirrorGroupRecord"
    source: str
    target: str
    generation: int
    leader: str
    members: tuple[MirrorMember, ...]

    @classmethod
    def from_data(cls, data: Mapping[str, Any]) -> MirrorGroupRecord:
        return cls(
            source=str(data["source"]),
            target=str(data["target"]),
            generation=int(data["generation"]),
            leader=str(data["leader"]),
            members=tuple(MirrorMember(**member) for member in data["members"]),
        )


@dataclasses.dataclass(frozen=True, slots=True)
class WorkerAssignment:
    """What one member runs: connector names and task ids (`<connector>-<n>`, Connect's form)."""

    member_id: str
    connectors: tuple[str, ...]
    tasks: tuple[str, ...]


@register_record_type
@dataclasses.dataclass(frozen=True, slots=True)
class MirrorAssignmentRecord(Record):
    """The leader's assignment of connectors and tasks for one generation (SyncGroup)."""

    TYPE: ClassVar[str] = "MirrorAssignmentRecord"
    source: str
    target: str
    generation: int
    assignments: tuple[WorkerAssignment, ...]

    @classmethod
    def from_data(cls, data: Mapping[str, Any]) -> MirrorAssignmentRecord:
        return cls(
            source=str(data["source"]),
            target=str(data["target"]),
            generation=int(data["generation"]),
            assignments=tuple(
                WorkerAssignment(
                    member_id=str(a["member_id"]),
                    connectors=tuple(a["connectors"]),
                    tasks=tuple(a["tasks"]),
                )
                for a in data["assignments"]
            ),
        )


@register_record_type
@dataclasses.dataclass(frozen=True, slots=True)
class MirrorTaskConfigsRecord(Record):
    """A connector's task configs, persisted by the leader of `generation` (Connect's task
    config records in the config topic). Values keep their config provider references."""

    TYPE: ClassVar[str] = "MirrorTaskConfigsRecord"
    source: str
    target: str
    connector: str
    generation: int
    task_configs: tuple[dict[str, str], ...]

    @classmethod
    def from_data(cls, data: Mapping[str, Any]) -> MirrorTaskConfigsRecord:
        return cls(
            source=str(data["source"]),
            target=str(data["target"]),
            connector=str(data["connector"]),
            generation=int(data["generation"]),
            task_configs=tuple(
                {str(k): str(v) for k, v in task.items()} for task in data["task_configs"]
            ),
        )


@register_record_type
@dataclasses.dataclass(frozen=True, slots=True)
class MirrorTargetStateRecord(Record):
    """A connector's target state (Connect's TargetState): STARTED or PAUSED."""

    TYPE: ClassVar[str] = "MirrorTargetStateRecord"
    source: str
    target: str
    connector: str
    state: str


@register_record_type
@dataclasses.dataclass(frozen=True, slots=True)
class MirrorMakerConfigSnapshotRecord(Record):
    """The configuration text as a metadata snapshot carries it: with the offset it was written
    at, which the mirror nodes compare (the log's MirrorMakerConfigRecord is at its own)."""

    TYPE: ClassVar[str] = "MirrorMakerConfigSnapshotRecord"
    text: str
    offset: int


@register_record_type
@dataclasses.dataclass(frozen=True, slots=True)
class MirrorFlowSnapshotRecord(Record):
    """A flow's whole group as a metadata snapshot carries it (as Kafka's group coordinator
    writes a group whole): what the log's group, assignment, task config and target state
    records built, and the offset of the last of them. `task_configs` and `target_states` are
    by connector."""

    TYPE: ClassVar[str] = "MirrorFlowSnapshotRecord"
    source: str
    target: str
    generation: int
    leader: str
    members: tuple[MirrorMember, ...]
    assignment_generation: int
    assignments: tuple[WorkerAssignment, ...]
    task_configs: dict[str, tuple[dict[str, str], ...]]
    target_states: dict[str, str]
    offset: int

    @classmethod
    def from_data(cls, data: Mapping[str, Any]) -> MirrorFlowSnapshotRecord:
        return cls(
            source=str(data["source"]),
            target=str(data["target"]),
            generation=int(data["generation"]),
            leader=str(data["leader"]),
            members=tuple(MirrorMember(**member) for member in data["members"]),
            assignment_generation=int(data["assignment_generation"]),
            assignments=tuple(
                WorkerAssignment(
                    member_id=str(a["member_id"]),
                    connectors=tuple(a["connectors"]),
                    tasks=tuple(a["tasks"]),
                )
                for a in data["assignments"]
            ),
            task_configs={
                str(connector): tuple({str(k): str(v) for k, v in task.items()} for task in tasks)
                for connector, tasks in data["task_configs"].items()
            },
            target_states={str(k): str(v) for k, v in data["target_states"].items()},
            offset=int(data["offset"]),
        )
