"""Topic and partition admin RPCs (Kafka's CreateTopics, DeleteTopics, CreatePartitions,
ElectLeaders): per-topic authorization as Kafka's ControllerApis does it, then one controller
request for the permitted topics; refused topics are answered TOPIC_AUTHORIZATION_FAILED and
answers keep request order."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from audit import resources as named
from controlplane.controller.acls.bindings import CLUSTER_NAME, AclOperation, ResourceType
from controlplane.controller.errors import Errors
from controlplane.rpc import Caller, cluster, public_write, register
from controlplane.services import controller_refused
from replicas import selectors, services
from replicas.api import serializers as s

AUTHORIZATION_FAILED = {
    "error_code": int(Errors.TOPIC_AUTHORIZATION_FAILED),
    "error_message": "Authorization failed.",
}
Body = dict[str, Any]


def _topic_allowed(caller: Caller, operation: AclOperation) -> Callable[[str], bool]:
    cluster_wide = operation is AclOperation.CREATE and caller.allowed(
        operation, ResourceType.CLUSTER, CLUSTER_NAME
    )
    return lambda name: cluster_wide or caller.allowed(operation, ResourceType.TOPIC, name)


def _per_topic(
    caller: Caller,
    operation: AclOperation,
    topics: list[Body],
    send: Callable[[list[Body]], list[Body]],
    denied: Callable[[str], Body],
    answer_key: str,
) -> list[Body]:
    allowed = _topic_allowed(caller, operation)
    permitted = [t for t in topics if allowed(t["name"])]
    controller_refused(
        answer_key=answer_key, items=[denied(t["name"]) for t in topics if not allowed(t["name"])]
    )
    answers: dict[str, Body] = {}
    if permitted:
        answers = {a["name"]: a for a in send(permitted)}
    return [answers.get(t["name"]) or denied(t["name"]) for t in topics]


def create_topics(body: Body, caller: Caller) -> Body:
    topics = _per_topic(
        caller,
        AclOperation.CREATE,
        body["topics"],
        lambda permitted: services.topics_create(
            payload={**body, "topics": permitted}, context=caller.context
        )["topics"],
        lambda name: {
            "name": name,
            "topic_id": None,
            **AUTHORIZATION_FAILED,
            "num_partitions": -1,
            "replication_factor": -1,
            "configs": [],
        },
        "topics",
    )
    return {"throttle_time_ms": 0, "topics": topics}


def delete_topics(body: Body, caller: Caller) -> Body:
    allowed = _topic_allowed(caller, AclOperation.DELETE)
    names_by_id = selectors.topic_names_by_id(
        topic_ids=[t["topic_id"] for t in body["topics"] if t.get("topic_id")]
    )
    denied: list[Body] = []
    names = []
    for name in body["topic_names"]:
        if allowed(name):
            names.append(name)
        else:
            denied.append({"name": name, "topic_id": None, **AUTHORIZATION_FAILED})
    states = []
    for state in body["topics"]:
        name = state.get("name") or names_by_id.get(state.get("topic_id") or "")
        if name is None or allowed(name):
            states.append(state)  # unknown ids get the controller's UNKNOWN_TOPIC_ID
        else:
            denied.append(
                {
                    "name": state.get("name"),
                    "topic_id": state.get("topic_id"),
                    **AUTHORIZATION_FAILED,
                }
            )
    controller_refused(answer_key="responses", items=denied)
    responses: list[Body] = []
    if names or states:
        response = services.topics_delete(
            payload={"topic_names": names, "topics": states, "timeout_ms": body["timeout_ms"]},
            context=caller.context,
        )
        responses = response["responses"]
    return {"throttle_time_ms": 0, "responses": responses + denied}


def create_partitions(body: Body, caller: Caller) -> Body:
    results = _per_topic(
        caller,
        AclOperation.ALTER,
        body["topics"],
        lambda permitted: services.partitions_create(
            payload={**body, "topics": permitted}, context=caller.context
        )["results"],
        lambda name: {"name": name, **AUTHORIZATION_FAILED},
        "results",
    )
    return {"throttle_time_ms": 0, "results": results}


def elect_leaders(body: Body, caller: Caller) -> Body:
    return services.leaders_elect(payload=body, context=caller.context)


register(
    "CreateTopics",
    request=s.CreateTopicsSerializer,
    authorize=public_write,
    handler=create_topics,
    resources=named.listed("topics", "topics", named.topic),
)
register(
    "DeleteTopics",
    request=s.DeleteTopicsSerializer,
    authorize=public_write,
    handler=delete_topics,
    resources=named.listed("responses", "topics", named.topic, also="topic_names"),
)
register(
    "CreatePartitions",
    request=s.CreatePartitionsSerializer,
    authorize=public_write,
    handler=create_partitions,
    resources=named.listed("results", "topics", named.topic),
)
register(
    "ElectLeaders",
    request=s.ElectLeadersSerializer,
    authorize=cluster(AclOperation.ALTER, write=True),
    handler=elect_leaders,
    resources=named.elected_partitions,
)
