"""Each flow's group of mirror workers, coordinated by the control plane (as Kafka's group
coordinator coordinates a Connect cluster): membership, generations, one leader, and what the
leader persists (assignments, task configs); connectors' target states; the configuration.

Pure: every function takes the metadata view and plain data and returns records and a response.
A membership change (join, leave, a session that lapsed) makes a new generation; the leader is
kept while it stays a member, else the earliest member to have joined leads. Writes of the
leader carry its generation: a stale one is refused with ILLEGAL_GENERATION, so a leader that
was paused past its session can never overwrite what the new leader decided. Heartbeats are not
handled here: they change nothing, so they never reach the controller (the mirror app's member
store records them) and the controller's timer expires members whose session lapsed.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Mapping, Sequence
from typing import Any

from controlplane.controller.errors import ApiError, Errors, InvalidStateTransition
from controlplane.controller.image import MetadataDelta
from controlplane.controller.image.mirror import FlowGroup, FlowKey, MirrorDelta
from controlplane.controller.mirror.config import (
    CONNECTORS,
    Flow,
    MirrorConfigError,
    MirrorMakerConfig,
    is_sensitive,
    mirror_config_parse,
)
from controlplane.controller.mirror.references import is_single_reference
from controlplane.controller.mirror.task_configs import task_config_problems
from controlplane.controller.mirror_records import (
    TARGET_STATES,
    MirrorAssignmentRecord,
    MirrorGroupRecord,
    MirrorMakerConfigRecord,
    MirrorMember,
    MirrorTargetStateRecord,
    MirrorTaskConfigsRecord,
    WorkerAssignment,
)
from controlplane.controller.records import Record
from controlplane.controller.result import ControllerResult

EMPTY, COMPLETING_REBALANCE, STABLE = "Empty", "CompletingRebalance", "Stable"
# The group state machine as data (Kafka's group states; a membership change is decided at once,
# so there is no PreparingRebalance): which states a group may move to from each.
GROUP_TRANSITIONS: Mapping[str, frozenset[str]] = {
    EMPTY: frozenset({COMPLETING_REBALANCE}),
    COMPLETING_REBALANCE: frozenset({EMPTY, STABLE}),
    STABLE: frozenset({EMPTY, COMPLETING_REBALANCE}),
}
MAX_TASKS = 10_000
OK: dict[str, Any] = {"error_code": 0, "error": "NONE", "error_message": None}


def check_group_transition(current: str, target: str) -> None:
    """Same state is a no-op; anything the table does not list is refused."""
    if current != target and target not in GROUP_TRANSITIONS[current]:
        raise InvalidStateTransition("mirror group", current, target)


@functools.lru_cache(maxsize=8)
def config_of_text(text: str) -> MirrorMakerConfig | None:
    """A stored configuration text, read (cached: the text changes rarely)."""
    try:
        return mirror_config_parse(text)
    except MirrorConfigError:
        return None  # stored texts were validated; an older rule may refuse one now


def stored_config(view: MirrorDelta) -> MirrorMakerConfig | None:
    stored = view.config()
    return None if stored is None else config_of_text(stored.text)


def _flow(view: MirrorDelta, payload: Mapping[str, Any]) -> FlowKey:
    source, target = str(payload["source"]), str(payload["target"])
    config = stored_config(view)
    if config is None or config.flow(source, target) is None:
        raise ApiError(
            Errors.INVALID_REQUEST,
            f"No replication flow {source}->{target} in the MirrorMaker configuration.",
        )
    return source, target


def group_answer(key: FlowKey, group: FlowGroup, member_id: str = "") -> dict[str, Any]:
    """What a member learns of its group (its own assignment when it has one)."""
    leader = group.member(group.leader)
    assignment = group.assignment_of(member_id) if member_id else None
    return {
        **OK,
        "source": key[0],
        "target": key[1],
        "generation": group.generation,
        "state": group.state,
        "member_id": member_id,
        "leader_id": group.leader,
        "leader_worker_id": leader.worker_id if leader else "",
        "leader_url": leader.rest_url if leader else "",
        "members": [
            {"member_id": m.member_id, "worker_id": m.worker_id, "rest_url": m.rest_url}
            for m in group.members
        ],
        "assignment": None
        if assignment is None
        else {"connectors": list(assignment.connectors), "tasks": list(assignment.tasks)},
    }


def _new_generation(
    key: FlowKey, group: FlowGroup, members: Sequence[MirrorMember]
) -> MirrorGroupRecord:
    ids = [m.member_id for m in members]
    leader = group.leader if group.leader in ids else (ids[0] if ids else "")
    after = EMPTY if not members else COMPLETING_REBALANCE
    check_group_transition(group.state, after)
    return MirrorGroupRecord(key[0], key[1], group.generation + 1, leader, tuple(members))


def _live(member: MirrorMember, contacts: Mapping[str, int], now_ms: int) -> bool:
    last = max(member.joined_ms, int(contacts.get(member.member_id, 0)))
    return now_ms - last <= member.session_timeout_ms


def _answered(view: MetadataDelta, records: list[Record], key: FlowKey, member_id: str) -> Any:
    """The group as it will be after `records` (replayed by the caller afterwards)."""
    group = view.mirror_delta.flow(key)
    for record in records:
        if isinstance(record, MirrorGroupRecord):
            group = dataclasses.replace(
                group, generation=record.generation, leader=record.leader, members=record.members
            )
    return group_answer(key, group, member_id)


def join_group(view: MetadataDelta, payload: Mapping[str, Any], now_ms: int) -> ControllerResult:
    """JoinGroup: a worker enters its flow's group (a new generation), or finds itself there.

    A worker id held by a live member of another member id is refused (FENCED_INSTANCE_ID, as
    Kafka fences a static member's duplicate); once that session lapsed, the newcomer replaces
    it."""
    key = _flow(view.mirror_delta, payload)
    group = view.mirror_delta.flow(key)
    joining = MirrorMember(
        member_id=str(payload["member_id"]),
        worker_id=str(payload["worker_id"]),
        rest_url=str(payload["rest_url"]),
        session_timeout_ms=int(payload["session_timeout_ms"]),
        joined_ms=now_ms,
    )
    contacts: Mapping[str, int] = payload.get("contacts") or {}
    same = group.member(joining.member_id)
    if same is not None and dataclasses.replace(same, joined_ms=now_ms) == joining:
        return ControllerResult([], group_answer(key, group, joining.member_id))
    holder = group.member_by_worker(joining.worker_id)
    if (
        holder is not None
        and holder.member_id != joining.member_id
        and _live(holder, contacts, now_ms)
    ):
        raise ApiError(
            Errors.FENCED_INSTANCE_ID,
            f"Worker id {joining.worker_id} belongs to a live member of flow "
            f"{key[0]}->{key[1]}; it can join once that member leaves or its session lapses.",
        )
    kept = [m for m in group.members if m.member_id != joining.member_id and m is not holder]
    record = _new_generation(key, group, [*kept, joining])
    return ControllerResult([record], _answered(view, [record], key, joining.member_id))


def leave_group(view: MetadataDelta, payload: Mapping[str, Any]) -> ControllerResult:
    key = (str(payload["source"]), str(payload["target"]))
    group = view.mirror_delta.flow(key)
    member_id = str(payload["member_id"])
    if group.member(member_id) is None:
        return ControllerResult([], group_answer(key, group))  # gone already: a no-op
    record = _new_generation(key, group, [m for m in group.members if m.member_id != member_id])
    return ControllerResult([record], _answered(view, [record], key, ""))


def expire_members(
    view: MetadataDelta, payload: Mapping[str, Any], now_ms: int
) -> ControllerResult:
    """The controller's timer: members whose session lapsed leave their groups.

    `payload["contacts"]` maps "source->target" to {member id: last heartbeat ms}."""
    records: list[Record] = []
    expired: dict[str, list[str]] = {}
    contacts_by_flow: Mapping[str, Mapping[str, int]] = payload.get("contacts") or {}
    for key, group in sorted(view.mirror_delta.all_flows()):
        contacts = contacts_by_flow.get(f"{key[0]}->{key[1]}", {})
        live = [m for m in group.members if _live(m, contacts, now_ms)]
        if len(live) != len(group.members):
            records.append(_new_generation(key, group, live))
            expired[f"{key[0]}->{key[1]}"] = [m.member_id for m in group.members if m not in live]
    return ControllerResult(records, {**OK, "expired_members": expired})


def _leader_write(view: MetadataDelta, payload: Mapping[str, Any]) -> tuple[FlowKey, FlowGroup]:
    """The checks of every write a leader makes: its membership, its generation, leadership."""
    key = _flow(view.mirror_delta, payload)
    group = view.mirror_delta.flow(key)
    member_id = str(payload["member_id"])
    if group.member(member_id) is None:
        raise ApiError(
            Errors.UNKNOWN_MEMBER_ID, f"{member_id} is not a member of {key[0]}->{key[1]}."
        )
    generation = int(payload["generation"])
    if generation != group.generation:
        raise ApiError(
            Errors.ILLEGAL_GENERATION,
            f"Generation {generation} is stale: the group of {key[0]}->{key[1]} is at "
            f"generation {group.generation}.",
        )
    if member_id != group.leader:
        raise ApiError(
            Errors.REBALANCE_IN_PROGRESS,
            f"Only the leader of generation {generation} writes for {key[0]}->{key[1]}.",
        )
    return key, group


def sync_group(view: MetadataDelta, payload: Mapping[str, Any]) -> ControllerResult:
    """SyncGroup: the leader's assignment of the current generation's connectors and tasks."""
    key, group = _leader_write(view, payload)
    members = {m.member_id for m in group.members}
    assignments = tuple(
        WorkerAssignment(
            str(a["member_id"]),
            tuple(str(c) for c in a["connectors"]),
            tuple(str(t) for t in a["tasks"]),
        )
        for a in payload["assignments"]
    )
    given_connectors = [c for a in assignments for c in a.connectors]
    given_tasks = [t for a in assignments for t in a.tasks]
    known_tasks = {
        f"{connector}-{i}"
        for connector, configs in group.task_configs.items()
        for i in range(len(configs))
    }
    problems = [
        *(f"{a.member_id} is not a member" for a in assignments if a.member_id not in members),
        *(f"unknown connector {c}" for c in given_connectors if c not in CONNECTORS),
        *(f"unknown task {t}" for t in given_tasks if t not in known_tasks),
    ]
    if len(set(given_connectors)) != len(given_connectors) or len(set(given_tasks)) != len(
        given_tasks
    ):
        problems.append("a connector or task is assigned twice")
    if problems:
        raise ApiError(Errors.INVALID_REQUEST, "Assignment refused: " + "; ".join(problems[:5]))
    if group.assignment_generation == group.generation and group.assignments == assignments:
        return ControllerResult([], group_answer(key, group, group.leader))
    check_group_transition(group.state, STABLE)
    record = MirrorAssignmentRecord(key[0], key[1], group.generation, assignments)
    answer = group_answer(
        key,
        dataclasses.replace(group, assignment_generation=group.generation, assignments=assignments),
        group.leader,
    )
    return ControllerResult([record], answer)


def put_task_configs(view: MetadataDelta, payload: Mapping[str, Any]) -> ControllerResult:
    """The leader persists a connector's task configs (Connect's putTaskConfigs): only those
    the connector derives for the flow from the stored configuration (so a follower's post
    cannot point both clusters at its poster's URL), posted by a member of the group.

    `poster_member_id` (default: the leader) is the member whose connector computed them, a
    follower when they came to the leader's REST server; its worker id goes to the audit trail
    in the notes, from the group (what the leader claims of it must agree)."""
    key, group = _leader_write(view, payload)
    connector = str(payload["connector"])
    if connector not in CONNECTORS:
        raise ApiError(Errors.INVALID_REQUEST, f"Connector {connector} not found.")
    poster = _poster(key, group, payload, connector)
    task_configs = tuple(
        {str(k): str(v) for k, v in task.items()} for task in payload["task_configs"]
    )
    if len(task_configs) > MAX_TASKS:
        raise ApiError(Errors.INVALID_REQUEST, f"At most {MAX_TASKS} tasks per connector.")
    secrets = sorted(
        {
            k
            for task in task_configs
            for k, v in task.items()
            if is_sensitive(k) and v.strip() and not is_single_reference(v)
        }
    )
    if secrets:
        raise ApiError(
            Errors.INVALID_CONFIG,
            f"Task configs hold a literal secret ({', '.join(secrets[:5])}): only config "
            "provider references are stored.",
        )
    config = stored_config(view.mirror_delta)
    assert config is not None  # _leader_write found the flow in it
    problems = task_config_problems(config, Flow(*key), connector, task_configs)
    if problems:
        raise ApiError(
            Errors.INVALID_CONFIG,
            f"Task configs of {connector} posted by {poster.worker_id} are not what it derives "
            f"from the stored configuration: {'; '.join(problems)}.",
        )
    answer = {**OK, "connector": connector, "tasks": len(task_configs)}
    notes = {"poster_worker_id": poster.worker_id, "poster_member_id": poster.member_id}
    if group.task_configs.get(connector) == task_configs:
        return ControllerResult([], answer, notes=notes)
    record = MirrorTaskConfigsRecord(key[0], key[1], connector, group.generation, task_configs)
    return ControllerResult([record], answer, notes=notes)


def _poster(
    key: FlowKey, group: FlowGroup, payload: Mapping[str, Any], connector: str
) -> MirrorMember:
    """The member whose connector computed the task configs: a member of this generation, and
    the one running the connector once this generation's assignment is made."""
    member_id = str(payload.get("poster_member_id") or payload["member_id"])
    poster = group.member(member_id)
    claimed = str(payload.get("poster_worker_id") or "")
    if poster is None or (claimed and claimed != poster.worker_id):
        raise ApiError(
            Errors.INVALID_REQUEST,
            f"Task configs of {key[0]}->{key[1]} posted by {(claimed or member_id)[:255]}: not "
            f"a member of generation {group.generation}.",
        )
    runs = [a.member_id for a in group.assignments if connector in a.connectors]
    if group.assignment_generation == group.generation and runs and runs[0] != poster.member_id:
        raise ApiError(
            Errors.INVALID_REQUEST,
            f"Task configs of {connector} posted by {poster.worker_id}: it does not run "
            f"{connector} in generation {group.generation}.",
        )
    return poster


def alter_target_state(view: MetadataDelta, payload: Mapping[str, Any]) -> ControllerResult:
    """Pause or resume a flow's connectors (all of them unless `connectors` names some)."""
    key = _flow(view.mirror_delta, payload)
    state = str(payload["state"])
    if state not in TARGET_STATES:
        raise ApiError(Errors.INVALID_REQUEST, f"Unknown target state {state}.")
    connectors = list(payload.get("connectors") or CONNECTORS)
    unknown = [c for c in connectors if c not in CONNECTORS]
    if unknown:
        raise ApiError(Errors.INVALID_REQUEST, f"Connector {unknown[0]} not found.")
    group = view.mirror_delta.flow(key)
    records: list[Record] = [
        MirrorTargetStateRecord(key[0], key[1], connector, state)
        for connector in sorted(set(connectors))
        if group.target_states.get(connector, "STARTED") != state
    ]
    return ControllerResult(records, {**OK, "state": state, "connectors": sorted(set(connectors))})


def alter_config(view: MetadataDelta, payload: Mapping[str, Any]) -> ControllerResult:
    """Store a validated MirrorMaker configuration text exactly as sent (no-op when unchanged)."""
    text = str(payload["text"])
    try:
        config = mirror_config_parse(text)
    except MirrorConfigError as error:
        raise ApiError(Errors.INVALID_CONFIG, "; ".join(error.problems)) from None
    flows = [flow.name for flow in config.flows()]
    stored = view.mirror_delta.config()
    if stored is not None and stored.text == text:
        return ControllerResult([], {**OK, "flows": flows, "changed": False})
    return ControllerResult(
        [MirrorMakerConfigRecord(text)], {**OK, "flows": flows, "changed": True}
    )
