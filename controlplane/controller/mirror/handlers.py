"""The controller's MirrorMaker 2 events (KIP-710), each a pure handler of `mirror.group`:

``AlterMirrorConfig`` ``{text}``; ``JoinMirrorGroup`` ``{source, target, member_id, worker_id,
rest_url, session_timeout_ms, contacts}``; ``LeaveMirrorGroup`` ``{source, target, member_id}``;
``SyncMirrorGroup`` ``{source, target, member_id, generation, assignments}``;
``PutMirrorTaskConfigs`` ``{source, target, member_id, generation, connector, task_configs,
poster_member_id, poster_worker_id}``;
``AlterMirrorTargetState`` ``{source, target, state, connectors}``; and the timer's
``ExpireMirrorMembers`` ``{contacts}``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from controlplane.controller.env import ControllerEnv, Handler
from controlplane.controller.image import MetadataDelta
from controlplane.controller.mirror import group
from controlplane.controller.result import ControllerResult


def _join(view: MetadataDelta, payload: Mapping[str, Any], env: ControllerEnv) -> ControllerResult:
    return group.join_group(view, payload, env.now_ms)


def _expire(
    view: MetadataDelta, payload: Mapping[str, Any], env: ControllerEnv
) -> ControllerResult:
    return group.expire_members(view, payload, env.now_ms)


def _without_env(
    fn: Any,
) -> Handler:
    def handler(
        view: MetadataDelta, payload: Mapping[str, Any], env: ControllerEnv
    ) -> ControllerResult:
        result: ControllerResult = fn(view, payload)
        return result

    return handler


HANDLERS: Mapping[str, Handler] = {
    "AlterMirrorConfig": _without_env(group.alter_config),
    "JoinMirrorGroup": _join,
    "LeaveMirrorGroup": _without_env(group.leave_group),
    "SyncMirrorGroup": _without_env(group.sync_group),
    "PutMirrorTaskConfigs": _without_env(group.put_task_configs),
    "AlterMirrorTargetState": _without_env(group.alter_target_state),
    "ExpireMirrorMembers": _expire,
}
# Retries of these are naturally idempotent (their outcome follows from state alone).
STATE_IDEMPOTENT_APIS = frozenset({"ExpireMirrorMembers"})
