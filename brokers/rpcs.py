"""Broker admin RPCs: Kafka's UnregisterBroker (KIP-631; ALTER on the cluster, never from a
broker principal) and DescribeCluster (KIP-700; pods as KIP-1095 adds them)."""

from __future__ import annotations

from typing import Any

from audit import resources as named
from brokers import selectors, services
from brokers.api.serializers import (
    DescribeClusterSerializer,
    UnregisterBrokerSerializer,
    UpdateFeaturesSerializer,
)
from controlplane.api.responses import INT, NSTR, STR, arr, kafka, nullable, obj
from controlplane.controller.acls.bindings import CLUSTER_NAME, AclOperation, ResourceType
from controlplane.controller.errors import Errors
from controlplane.http_errors import HTTP_STATUS
from controlplane.rpc import Caller, Reply, any_principal, cluster, register

# Kafka's DescribeCluster: authorized operations left out (not asked for) are Integer.MIN_VALUE.
OPERATIONS_NOT_ASKED = -(2**31)
# What Kafka's ResourceType.CLUSTER supports (AclEntry.supportedOperations).
CLUSTER_OPERATIONS = (
    AclOperation.ALTER,
    AclOperation.ALTER_CONFIGS,
    AclOperation.CLUSTER_ACTION,
    AclOperation.CREATE,
    AclOperation.DESCRIBE,
    AclOperation.DESCRIBE_CONFIGS,
    AclOperation.IDEMPOTENT_WRITE,
)


def unregister_broker(body: dict[str, Any], caller: Caller) -> dict[str, Any]:
    return services.broker_unregister(broker_id=body["broker_id"], context=caller.context)


def update_features(body: dict[str, Any], caller: Caller) -> dict[str, Any] | Reply:
    """KIP-584's UpdateFeatures: the controller finalizes every level or none; a refusal is the
    whole request's (Kafka's answer puts it on every feature too)."""
    payload = {
        "feature_updates": [dict(item) for item in body["feature_updates"]],
        "validate_only": body["validate_only"],
    }
    answer = services.features_update(payload=payload, context=caller.context)
    code = int(answer.get("error_code", 0))
    if code:
        error = Errors(code)
        return Reply(HTTP_STATUS.get(error, 400), {**answer, "error": error.name})
    return answer


def describe_cluster(body: dict[str, Any], caller: Caller) -> dict[str, Any]:
    """The live brokers and the controller; the caller's operations on the cluster when asked
    (a bit per AclOperation code, 0 without DESCRIBE on the cluster), as Kafka answers."""
    summary = selectors.cluster_summary()
    operations = OPERATIONS_NOT_ASKED
    if body["include_cluster_authorized_operations"]:
        allowed = caller.allowed(AclOperation.DESCRIBE, ResourceType.CLUSTER, CLUSTER_NAME)
        operations = sum(
            1 << op.value
            for op in CLUSTER_OPERATIONS
            if allowed and caller.allowed(op, ResourceType.CLUSTER, CLUSTER_NAME)
        )
    return {
        "throttle_time_ms": 0,
        "error_code": 0,
        "error_message": None,
        "endpoint_type": 1,  # BROKERS
        "cluster_id": summary["cluster_id"],
        "controller_id": summary["controller_id"] if summary["controller_id"] is not None else -1,
        "brokers": selectors.brokers_alive(),
        "cluster_authorized_operations": operations,
        # The house's addition to Kafka's answer: the levels the cluster runs (Kafka tells
        # them in ApiVersions, which REST has not).
        "finalized_features": selectors.features_describe()["finalized_features"],
    }


register(
    "UnregisterBroker",
    request=UnregisterBrokerSerializer,
    authorize=cluster(AclOperation.ALTER, write=True),
    handler=unregister_broker,
    resources=named.broker,
    response=kafka(throttle_time_ms=INT),
)
register(
    "DescribeCluster",
    request=DescribeClusterSerializer,
    authorize=any_principal,
    handler=describe_cluster,
    resources=named.constant("CLUSTER", CLUSTER_NAME),
    response=kafka(
        throttle_time_ms=INT,
        endpoint_type=INT,
        cluster_id=STR,
        controller_id=nullable(INT),
        brokers=arr(
            obj(broker_id=INT, host=STR, port=INT, rack=NSTR, pod=STR, software_version=NSTR)
        ),
        cluster_authorized_operations=INT,
        finalized_features={"type": "object", "additionalProperties": INT},
    ),
)
register(
    "UpdateFeatures",
    request=UpdateFeaturesSerializer,
    authorize=cluster(AclOperation.ALTER, write=True),
    handler=update_features,
    resources=named.positional("results", "feature_updates", named.feature),
    response=kafka(
        throttle_time_ms=INT,
        results=arr(obj(feature=STR, error_code=INT, error_message=NSTR)),
    ),
)
