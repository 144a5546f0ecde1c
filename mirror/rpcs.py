"""MirrorMaker 2's writes as RPC specs of the house registry's kind, run through
`controlplane.rpc.execute` (authorize, validate, run, Kafka's errors, audit) like every admin
request. Kafka numbers none of them (there is no MirrorMaker RPC in Kafka's protocol), so they
are the house's own RPCs of the one registry, not Kafka's of `ADMIN_APIS`: registered without a
path, they are routed by this app at the contract's own paths (`mirror/api/urls.py`, with the
flow's aliases in the URL and a text body) and never travel in an Envelope.

- AlterMirrorConfig (PUT /api/v1/mirror/config): ALTER on CLUSTER.
- AlterMirrorTargetState (PUT /api/v1/mirror/flows/{source}/{target}/pause|resume): ALTER on
  CLUSTER.
- JoinMirrorGroup, SyncMirrorGroup, PutMirrorTaskConfigs, LeaveMirrorGroup (a mirror node's
  group protocol, POST /api/v1/mirror/groups/{source}/{target}/...): CLUSTER_ACTION on CLUSTER,
  as brokers' internal RPCs. Never READ on GROUP, Kafka's consumer permission: a member gets the
  flow's session key and the leader's URL, and a consumer's principal must not.
  PutMirrorTaskConfigs keeps only the task configs the connector derives from the stored
  configuration (else INVALID_CONFIG, 400) and its audit row names the member that computed
  them (a MIRROR_WORKER resource: the follower that posted them to the leader).

Group RPCs answer Kafka's group errors (UNKNOWN_MEMBER_ID, ILLEGAL_GENERATION,
REBALANCE_IN_PROGRESS, FENCED_INSTANCE_ID) in the body with HTTP 200, as Kafka's JoinGroup and
SyncGroup answers carry them.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from typing import Any, cast

from rest_framework import serializers, status

from controlplane.api.fields import StrictCharField, StrictSerializer
from controlplane.controller.acls.bindings import CLUSTER_NAME, AclOperation, ResourceType
from controlplane.controller.errors import ApiError, Errors
from controlplane.controller.mirror.config import (
    CONFIG_PROVIDERS,
    MirrorConfigError,
    mirror_config_parse,
)
from controlplane.http_errors import error_body
from controlplane.rpc import (
    ApiSpec,
    Caller,
    Handler,
    Reply,
    Resources,
    cluster,
    public_write,
    register,
)
from mirror import selectors, services
from mirror.api import serializers as s
from mirror.api.responses import GROUP_ANSWER

Body = dict[str, Any]
GROUP_ERRORS = frozenset(
    {
        Errors.UNKNOWN_MEMBER_ID,
        Errors.ILLEGAL_GENERATION,
        Errors.REBALANCE_IN_PROGRESS,
        Errors.FENCED_INSTANCE_ID,
    }
)
CONFIG_RESOURCE = ("MIRROR_CONFIG", "mm2.properties")


def _resource(kind: str, name: str, code: int) -> dict[str, Any]:
    return {"resource_type": kind, "resource_name": name, "error_code": code}


def _flow_name(body: Body) -> str:
    source, target = body.get("source"), body.get("target")
    return f"{source}->{target}" if isinstance(source, str) and isinstance(target, str) else "?"


def _config_resources(body: Body, answer: Body, top: int, notes: Body) -> Iterable[Body]:
    return [_resource(*CONFIG_RESOURCE, top)]


def _flow_resources(body: Body, answer: Body, top: int, notes: Body) -> Iterable[Body]:
    return [_resource("MIRROR_FLOW", _flow_name(body), top)]


def _group_resources(body: Body, answer: Body, top: int, notes: Body) -> Iterable[Body]:
    return [_resource("GROUP", services.GROUP_PREFIX + _flow_name(body), top)]


def _task_config_resources(body: Body, answer: Body, top: int, notes: Body) -> Iterable[Body]:
    """The flow's group and the member whose connector computed the task configs (a
    follower's post is not the leader's write alone): its worker id as the group
    has it once the controller checked it, else as the leader named it."""
    poster = next(
        (
            str(value)[:255]
            for value in (
                notes.get("poster_worker_id"),
                body.get("poster_worker_id"),
                body.get("poster_member_id"),
                body.get("member_id"),
            )
            if isinstance(value, str) and value
        ),
        "",
    )
    named = list(_group_resources(body, answer, top, notes))
    return [*named, _resource("MIRROR_WORKER", poster, top)] if poster else named


def _not_found(source: str, target: str) -> Reply:
    return Reply(
        status.HTTP_404_NOT_FOUND,
        error_body(
            Errors.INVALID_REQUEST,
            f"No replication flow {source}->{target} in the MirrorMaker configuration.",
        ),
    )


def _succeeded(answer: Body) -> Body:
    """A controller answer whose error is the whole request's: raised, for its HTTP status."""
    code = answer.get("error_code", 0)
    if code:
        raise ApiError(Errors(code), answer.get("error_message"))
    return answer


# --- the configuration and target states (ALTER on CLUSTER) --------------------------------
def alter_config(body: Body, caller: Caller) -> Body:
    try:  # validate early: a refused text never reaches the controller
        parsed = mirror_config_parse(body["text"])
    except MirrorConfigError as error:
        raise ApiError(Errors.INVALID_CONFIG, "; ".join(error.problems)) from None
    declared = provider_declarations(parsed.properties)
    if declared and not caller.principal.is_super:
        # What a node reads from its own host is the operator's to decide, as Kafka's worker
        # declares config.providers in its own file (CVE-2024-31141): ALTER on CLUSTER may
        # store flows, never make nodes read files or the environment.
        raise ApiError(
            Errors.CLUSTER_AUTHORIZATION_FAILED,
            f"Only a super user may declare config providers or their parameters "
            f"({', '.join(declared[:5])}).",
        )
    return _succeeded(services.mirror_config_alter(text=body["text"], context=caller.context))


def alter_target_state(body: Body, caller: Caller) -> Body | Reply:
    if not selectors.mirror_flow_exists(source=body["source"], target=body["target"]):
        return _not_found(body["source"], body["target"])
    return _succeeded(
        services.mirror_target_state_alter(
            source=body["source"],
            target=body["target"],
            state=body["state"],
            connectors=list(body["connectors"]),
            context=caller.context,
        )
    )


def provider_declarations(properties: Any) -> list[str]:
    """The keys of a text that declare config providers or their parameters."""
    return sorted(
        key
        for key in properties
        if key == CONFIG_PROVIDERS or key.startswith(CONFIG_PROVIDERS + ".")
    )


# --- a mirror node's group protocol (CLUSTER_ACTION on CLUSTER) ---------------------------
def mirror_node_allowed(caller: Caller) -> bool:
    """A mirror node's principal: CLUSTER_ACTION on CLUSTER (or a super user)."""
    return caller.allowed(AclOperation.CLUSTER_ACTION, ResourceType.CLUSTER, CLUSTER_NAME)


def not_a_mirror_node(caller: Caller) -> Body:
    return error_body(
        Errors.CLUSTER_AUTHORIZATION_FAILED,
        f"{caller.name} is not authorized to take part in mirror groups "
        "(CLUSTER_ACTION on CLUSTER, as brokers' internal RPCs).",
    )


def _group_call(service: Callable[..., Body]) -> Handler:
    """A group RPC: a mirror node's principal (else 403), the flow known (else 404), then
    `service` with the validated body's fields; Kafka's group errors answer in the body."""

    def handler(body: Body, caller: Caller) -> Body | Reply:
        source, target = body["source"], body["target"]
        if not mirror_node_allowed(caller):
            return Reply(status.HTTP_403_FORBIDDEN, not_a_mirror_node(caller))
        if not selectors.mirror_flow_exists(source=source, target=target):
            return _not_found(source, target)
        answer = service(**json.loads(json.dumps(body)), context=caller.context)  # plain JSON
        code = answer.get("error_code", 0)
        if code and Errors(code) not in GROUP_ERRORS:
            raise ApiError(Errors(code), answer.get("error_message"))
        return answer

    return handler


def _on_flow(serializer: type[StrictSerializer]) -> type[StrictSerializer]:
    """`serializer` with the flow's aliases (from the URL) beside its fields."""
    fields = {
        "source": StrictCharField(max_length=s.NAME_MAX),
        "target": StrictCharField(max_length=s.NAME_MAX),
    }
    made = serializers.SerializerMetaclass(f"{serializer.__name__}OnFlow", (serializer,), fields)
    return cast(type[StrictSerializer], made)


ALTER_CONFIG = register(
    "AlterMirrorConfig",
    request=s.ConfigTextSerializer,
    authorize=cluster(AclOperation.ALTER, write=True),
    handler=alter_config,
    resources=_config_resources,
    response=GROUP_ANSWER,
)
ALTER_TARGET_STATE = register(
    "AlterMirrorTargetState",
    request=s.TargetStateSerializer,
    authorize=cluster(AclOperation.ALTER, write=True),
    handler=alter_target_state,
    resources=_flow_resources,
    response=GROUP_ANSWER,
)


def _group_rpc(
    name: str,
    serializer: type[StrictSerializer],
    service: Callable[..., Body],
    resources: Resources = _group_resources,
) -> ApiSpec:
    """A group RPC of a mirror node, with the flow's aliases beside `serializer`'s fields."""
    return register(
        name,
        request=_on_flow(serializer),
        authorize=public_write,
        handler=_group_call(service),
        resources=resources,
        response=GROUP_ANSWER,
    )


GROUP_SPECS = {
    "join": _group_rpc("JoinMirrorGroup", s.JoinSerializer, services.mirror_group_join),
    "sync": _group_rpc("SyncMirrorGroup", s.SyncSerializer, services.mirror_group_sync),
    "task-configs": _group_rpc(
        "PutMirrorTaskConfigs",
        s.TaskConfigsSerializer,
        services.mirror_task_configs_put,
        _task_config_resources,
    ),
    "leave": _group_rpc("LeaveMirrorGroup", s.MemberSerializer, services.mirror_group_leave),
}
