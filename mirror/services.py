"""MirrorMaker 2 writes (KIP-710): the only code that builds the mirror's controller events, and
the group heartbeat, which changes no metadata and never reaches the controller.

Mirror nodes are members of their flows' groups here: they join (a new generation), heartbeat
(answered from the projection; the member store records the contact and the member's status
report), and their leader syncs assignments and persists task configs, fenced by generation.
Each member of a generation gets the flow's session key, which signs the internal requests
between the flow's REST servers (Connect's InternalRequestSignature): an HMAC of the flow and
generation keyed with the control plane's secret key, never stored, logged or exported.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import time
from collections.abc import Mapping
from typing import Any

from django.conf import settings

from controlplane.controller.errors import Errors
from controlplane.controller.image.mirror import FlowGroup
from controlplane.controller.mirror.group import group_answer
from controlplane.runtime.conversation import RequestContext
from controlplane.runtime.lease import now_ms
from controlplane.runtime.notifier import notifier
from controlplane.services import controller_call
from mirror import selectors
from mirror.members import Report, member_store

GROUP_PREFIX = "mm2-"
MAX_WAIT_MS = 30_000


def mirror_flow_name(*, source: str, target: str) -> str:
    return f"{source}->{target}"


def mirror_group_id(*, source: str, target: str) -> str:
    """The GROUP resource a flow's group is audited as: `mm2-<source>-><target>`."""
    return GROUP_PREFIX + mirror_flow_name(source=source, target=target)


def mirror_session_key(*, source: str, target: str, generation: int) -> str:
    """The flow's session key for one generation (base64): it changes with every rebalance."""
    message = f"mirror-session-key/{source}->{target}/{generation}".encode()
    digest = hmac.new(settings.SECRET_KEY.encode(), message, hashlib.sha256).digest()
    return base64.b64encode(digest).decode()


def _call(api: str, payload: dict[str, Any], context: RequestContext) -> dict[str, Any]:
    return controller_call(api=api, payload=payload, context=context)


def mirror_config_alter(*, text: str, context: RequestContext) -> dict[str, Any]:
    return _call("AlterMirrorConfig", {"text": text}, context)


def mirror_target_state_alter(
    *, source: str, target: str, state: str, connectors: list[str], context: RequestContext
) -> dict[str, Any]:
    payload = {"source": source, "target": target, "state": state, "connectors": connectors}
    return _call("AlterMirrorTargetState", payload, context)


def _with_session_key(answer: dict[str, Any]) -> dict[str, Any]:
    if answer.get("error_code") == 0 and answer.get("member_id"):
        answer["session_key"] = mirror_session_key(
            source=answer["source"], target=answer["target"], generation=answer["generation"]
        )
    return answer


def mirror_group_join(
    *,
    source: str,
    target: str,
    member_id: str,
    worker_id: str,
    rest_url: str,
    session_timeout_ms: int,
    context: RequestContext,
) -> dict[str, Any]:
    flow = mirror_flow_name(source=source, target=target)
    store = member_store()
    contacts = {m: int(r.get("contact_ms", 0)) for m, r in store.reports([flow])[flow].items()}
    answer = _call(
        "JoinMirrorGroup",
        {
            "source": source,
            "target": target,
            "member_id": member_id,
            "worker_id": worker_id,
            "rest_url": rest_url,
            "session_timeout_ms": session_timeout_ms,
            "contacts": contacts,
        },
        context,
    )
    if answer.get("error_code") == 0:
        store.touch(flow, member_id, now_ms=now_ms(), report={"worker_id": worker_id})
    return _with_session_key(answer)


def mirror_group_leave(
    *, source: str, target: str, member_id: str, context: RequestContext
) -> dict[str, Any]:
    payload = {"source": source, "target": target, "member_id": member_id}
    answer = _call("LeaveMirrorGroup", payload, context)
    member_store().forget(mirror_flow_name(source=source, target=target), [member_id])
    return answer


def mirror_group_sync(
    *,
    source: str,
    target: str,
    member_id: str,
    generation: int,
    assignments: list[dict[str, Any]],
    context: RequestContext,
) -> dict[str, Any]:
    payload = {
        "source": source,
        "target": target,
        "member_id": member_id,
        "generation": generation,
        "assignments": assignments,
    }
    return _with_session_key(_call("SyncMirrorGroup", payload, context))


def mirror_task_configs_put(
    *,
    source: str,
    target: str,
    member_id: str,
    generation: int,
    connector: str,
    task_configs: list[dict[str, str]],
    context: RequestContext,
    poster_member_id: str = "",
    poster_worker_id: str = "",
) -> dict[str, Any]:
    """The leader persists a connector's task configs; the controller keeps only those the
    connector derives from the stored configuration, posted by a member of the generation
    (`poster_member_id`, default the leader), whom the audit trail names."""
    payload = {
        "source": source,
        "target": target,
        "member_id": member_id,
        "generation": generation,
        "connector": connector,
        "task_configs": task_configs,
        "poster_member_id": poster_member_id or member_id,
        "poster_worker_id": poster_worker_id,
    }
    return _call("PutMirrorTaskConfigs", payload, context)


def _heartbeat_answer(
    source: str, target: str, member_id: str, group: FlowGroup, config_offset: int
) -> dict[str, Any]:
    if group.member(member_id) is None:
        return {
            "error_code": int(Errors.UNKNOWN_MEMBER_ID),
            "error": Errors.UNKNOWN_MEMBER_ID.name,
            "error_message": f"{member_id} is not a member of {source}->{target}: join again.",
            "generation": group.generation,
            "config_offset": config_offset,
        }
    answer = _with_session_key(group_answer((source, target), group, member_id))
    current = group.assignment_generation == group.generation
    reports = member_store().reports([mirror_flow_name(source=source, target=target)])
    answer.update(
        {
            "flow_offset": group.offset,
            "config_offset": config_offset,
            "task_configs": {k: [dict(t) for t in v] for k, v in group.task_configs.items()},
            "target_states": dict(group.target_states),
            "assignments": [
                {"member_id": a.member_id, "connectors": list(a.connectors), "tasks": list(a.tasks)}
                for a in (group.assignments if current else ())
            ],
            # The members' connector and task states (for each REST server's status views).
            "member_statuses": {
                member: {"connectors": r.get("connectors", {}), "tasks": r.get("tasks", {})}
                for member, r in next(iter(reports.values()), {}).items()
                if group.member(member) is not None
            },
        }
    )
    return answer


def mirror_member_heartbeat(
    *,
    source: str,
    target: str,
    member_id: str,
    report: Report,
    known_flow_offset: int,
    known_config_offset: int,
    wait_ms: int,
) -> dict[str, Any]:
    """Record the member's contact and report, then answer its group as the projection has it;
    with `wait_ms`, wait (long poll) until the flow or the configuration moves past what the
    member knows. Writes no metadata."""
    flow = mirror_flow_name(source=source, target=target)
    member_store().touch(flow, member_id, now_ms=now_ms(), report=report)
    deadline = time.monotonic() + min(max(wait_ms, 0), MAX_WAIT_MS) / 1000
    while True:
        generation = notifier.tables_generation
        group = selectors.mirror_flow_group(source=source, target=target)
        config_offset = selectors.mirror_config_offset()
        changed = group.offset != known_flow_offset or config_offset != known_config_offset
        remaining = deadline - time.monotonic()
        if changed or group.member(member_id) is None or remaining <= 0:
            return _heartbeat_answer(source, target, member_id, group, config_offset)
        notifier.wait_tables(generation, remaining)


def mirror_members_forget(*, expired: Mapping[str, list[str]]) -> None:
    """Drop the reports of members that left (their flow's group no longer has them)."""
    store = member_store()
    for flow, member_ids in expired.items():
        store.forget(flow, member_ids)
