"""Topic and partition admin RPCs (Kafka's CreateTopics, DeleteTopics, CreatePartitions,
ElectLeaders, AlterPartitionReassignments, ListPartitionReassignments): per-topic authorization
as Kafka's ControllerApis does it, then one controller request for the permitted topics;
refused topics are answered TOPIC_AUTHORIZATION_FAILED and answers keep request order. The
reassignment RPCs are authorized on the cluster, as Kafka's (ALTER, DESCRIBE)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.conf import settings

from audit import resources as named
from controlplane.api.responses import BOOL, CONFIG_ENTRY, INT, NSTR, STR, arr, kafka, obj
from controlplane.controller.acls.bindings import CLUSTER_NAME, AclOperation, ResourceType
from controlplane.controller.errors import Errors
from controlplane.rpc import Caller, cluster, public_write, register
from controlplane.throttling import (
    MUTATION_QUOTAS,
    THROTTLED,
    ControllerMutationQuota,
    unlimited,
)
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
    admitted: Callable[[Body], bool] = lambda topic: True,
) -> list[Body]:
    """Authorize each topic, then its mutations (KIP-599); send what passed, in order. What
    was refused before the call is noted for the audit row the controller writes."""
    allowed = _topic_allowed(caller, operation)
    answers: dict[str, Body] = {}
    refused: dict[str, Body] = {}
    permitted: list[Body] = []
    for topic in topics:
        name = topic["name"]
        if not allowed(name):
            refused[name] = denied(name)
        elif admitted(topic):
            permitted.append(topic)
        else:
            refused[name] = {**denied(name), **THROTTLED}
    caller.trail.refuse(answer_key=answer_key, items=list(refused.values()))
    if permitted:
        answers = {a["name"]: a for a in send(permitted)}
    return [answers.get(t["name"]) or refused[t["name"]] for t in topics]


def mutation_quota(caller: Caller, body: Body) -> ControllerMutationQuota:
    """The caller's controller mutation quota for this request (none for validate_only)."""
    if body.get("validate_only"):
        return unlimited()  # nothing is created: nothing is counted
    return MUTATION_QUOTAS.for_request(caller.principal.name, caller.client_id)


def _partitions_to_create(topic: Body) -> int:
    if topic.get("num_partitions", -1) > 0:
        return int(topic["num_partitions"])
    if topic.get("assignments"):
        return len(topic["assignments"])
    return int(settings.CP_STATIC_BROKER_CONFIGS["num.partitions"])


def create_topics(body: Body, caller: Caller) -> Body:
    quota = mutation_quota(caller, body)
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
        lambda topic: quota.check_and_record(_partitions_to_create(topic)),
    )
    return {"throttle_time_ms": quota.throttle_time_ms, "topics": topics}


def delete_topics(body: Body, caller: Caller) -> Body:
    allowed = _topic_allowed(caller, AclOperation.DELETE)
    quota = mutation_quota(caller, body)
    names_by_id = selectors.topic_names_by_id(
        topic_ids=[t["topic_id"] for t in body["topics"] if t.get("topic_id")]
    )
    counts = selectors.partition_counts(
        names=[
            *body["topic_names"],
            *names_by_id.values(),
            *(t.get("name") or "" for t in body["topics"]),
        ]
    )
    refused: list[Body] = []
    names = []
    for name in body["topic_names"]:
        if not allowed(name):
            refused.append({"name": name, "topic_id": None, **AUTHORIZATION_FAILED})
        elif not quota.check_and_record(counts.get(name, 0)):
            refused.append({"name": name, "topic_id": None, **THROTTLED})
        else:
            names.append(name)
    states = []
    for state in body["topics"]:
        name = state.get("name") or names_by_id.get(state.get("topic_id") or "")
        refusal = None
        if name is not None and not allowed(name):
            refusal = AUTHORIZATION_FAILED
        elif name is not None and not quota.check_and_record(counts.get(name, 0)):
            refusal = THROTTLED
        if refusal is None:
            states.append(state)  # unknown ids get the controller's UNKNOWN_TOPIC_ID
        else:
            refused.append(
                {"name": state.get("name"), "topic_id": state.get("topic_id"), **refusal}
            )
    caller.trail.refuse(answer_key="responses", items=refused)
    responses: list[Body] = []
    if names or states:
        response = services.topics_delete(
            payload={"topic_names": names, "topics": states, "timeout_ms": body["timeout_ms"]},
            context=caller.context,
        )
        responses = response["responses"]
    return {"throttle_time_ms": quota.throttle_time_ms, "responses": responses + refused}


def create_partitions(body: Body, caller: Caller) -> Body:
    quota = mutation_quota(caller, body)
    counts = selectors.partition_counts(names=[t["name"] for t in body["topics"]])
    results = _per_topic(
        caller,
        AclOperation.ALTER,
        body["topics"],
        lambda permitted: services.partitions_create(
            payload={**body, "topics": permitted}, context=caller.context
        )["results"],
        lambda name: {"name": name, **AUTHORIZATION_FAILED},
        "results",
        lambda topic: quota.check_and_record(topic["count"] - counts.get(topic["name"], 0)),
    )
    return {"throttle_time_ms": quota.throttle_time_ms, "results": results}


def elect_leaders(body: Body, caller: Caller) -> Body:
    return services.leaders_elect(payload=body, context=caller.context)


def alter_partition_reassignments(body: Body, caller: Caller) -> Body:
    answer = services.partition_reassignments_alter(payload=body, context=caller.context)
    return {"throttle_time_ms": 0, **answer}


def list_partition_reassignments(body: Body, caller: Caller) -> Body:
    topics = body.get("topics")
    wanted = None if topics is None else {t["name"]: set(t["partition_indexes"]) for t in topics}
    return {
        "throttle_time_ms": 0,
        "error_code": 0,
        "error_message": None,
        "topics": selectors.partition_reassignments(topics=wanted),
    }


register(
    "CreateTopics",
    request=s.CreateTopicsSerializer,
    authorize=public_write,
    handler=create_topics,
    resources=named.listed("topics", "topics", named.topic),
    response=obj(
        "throttle_time_ms",
        "topics",
        throttle_time_ms=INT,
        topics=arr(
            kafka(
                "name",
                name=STR,
                topic_id=NSTR,
                num_partitions=INT,
                replication_factor=INT,
                configs=arr(CONFIG_ENTRY),
                canary_partitions=arr(INT),
                canary_isolated=BOOL,
            )
        ),
    ),
)
register(
    "DeleteTopics",
    request=s.DeleteTopicsSerializer,
    authorize=public_write,
    handler=delete_topics,
    resources=named.listed("responses", "topics", named.topic, also="topic_names"),
    response=obj(
        "throttle_time_ms",
        "responses",
        throttle_time_ms=INT,
        responses=arr(kafka(name=NSTR, topic_id=NSTR)),
    ),
)
register(
    "CreatePartitions",
    request=s.CreatePartitionsSerializer,
    authorize=public_write,
    handler=create_partitions,
    resources=named.listed("results", "topics", named.topic),
    response=obj(
        "throttle_time_ms",
        "results",
        throttle_time_ms=INT,
        results=arr(kafka("name", name=STR)),
    ),
)
REASSIGNMENT = obj(
    partition_index=INT, replicas=arr(INT), adding_replicas=arr(INT), removing_replicas=arr(INT)
)
register(
    "AlterPartitionReassignments",
    request=s.AlterPartitionReassignmentsSerializer,
    authorize=cluster(AclOperation.ALTER, write=True),
    handler=alter_partition_reassignments,
    resources=named.reassigned_partitions,
    response=kafka(
        throttle_time_ms=INT,
        allow_replication_factor_change=BOOL,
        responses=arr(obj(name=STR, partitions=arr(kafka(partition_index=INT)))),
    ),
)
register(
    "ListPartitionReassignments",
    request=s.ListPartitionReassignmentsSerializer,
    authorize=cluster(AclOperation.DESCRIBE),
    handler=list_partition_reassignments,
    resources=named.constant("CLUSTER", CLUSTER_NAME),
    response=kafka(throttle_time_ms=INT, topics=arr(obj(name=STR, partitions=arr(REASSIGNMENT)))),
)
register(
    "ElectLeaders",
    request=s.ElectLeadersSerializer,
    authorize=cluster(AclOperation.ALTER, write=True),
    handler=elect_leaders,
    resources=named.elected_partitions,
    response=kafka(
        replica_election_results=arr(obj(topic=STR, partition_result=arr(kafka(partition_id=INT)))),
        throttle_time_ms=INT,
    ),
)
