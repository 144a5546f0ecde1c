"""Config and client quota admin RPCs (Kafka's DescribeConfigs, AlterConfigs,
IncrementalAlterConfigs, DescribeClientQuotas, AlterClientQuotas).

Config authorization is Kafka's, per resource: ALTER_CONFIGS (writes) or DESCRIBE_CONFIGS (reads)
on the TOPIC for a topic, on the GROUP for a group, on the CLUSTER for BROKER, BROKER_LOGGER and
CLIENT_METRICS; a refused resource is answered TOPIC_AUTHORIZATION_FAILED /
GROUP_AUTHORIZATION_FAILED / CLUSTER_AUTHORIZATION_FAILED and never reaches the controller.
Writes go to the controller; reads use the projection and static settings. Client quotas need
ALTER_CONFIGS / DESCRIBE_CONFIGS on the CLUSTER.
"""

from __future__ import annotations

from typing import Any

from audit import resources as named
from configs import selectors
from configs.api import config_serializers as config_s
from configs.api import quota_serializers as quota_s
from configs.projection import client_quota_map
from controlplane.api.responses import (
    CONFIG_ENTRY,
    INT,
    NUM,
    QUOTA_ENTITY,
    STR,
    arr,
    kafka,
    nullable,
    obj,
)
from controlplane.controller.acls.bindings import CLUSTER_NAME, AclOperation, ResourceType
from controlplane.controller.client_configs import GROUP
from controlplane.controller.config_schema import TOPIC
from controlplane.controller.configs.resources import (
    SUPPORTED_RESOURCE_TYPES,
    duplicate_resources,
    resource_key,
)
from controlplane.controller.errors import ApiError, Errors
from controlplane.controller.quotas import describe as quotas
from controlplane.rpc import Caller, any_principal, cluster, public_write, register
from controlplane.selectors import configs_stored
from controlplane.services import controller_call

Body = dict[str, Any]
RESOURCE_RESULT = kafka(resource_type=STR, resource_name=STR)  # an altered resource's answer


def _ok() -> Body:
    return {"error_code": 0, "error": Errors.NONE.name, "error_message": None}


def _authorization_error(
    caller: Caller, operation: AclOperation, resource_type: str, resource_name: str
) -> ApiError | None:
    """None when the caller may do `operation` on the resource; else Kafka's error."""
    if resource_type not in SUPPORTED_RESOURCE_TYPES:
        return None  # answered INVALID_REQUEST, without telling anything about a resource
    if resource_type == TOPIC:
        acl_type, acl_name, error = (
            ResourceType.TOPIC,
            resource_name,
            Errors.TOPIC_AUTHORIZATION_FAILED,
        )
    elif resource_type == GROUP:
        acl_type, acl_name, error = (
            ResourceType.GROUP,
            resource_name,
            Errors.GROUP_AUTHORIZATION_FAILED,
        )
    else:
        acl_type, acl_name, error = (
            ResourceType.CLUSTER,
            CLUSTER_NAME,
            Errors.CLUSTER_AUTHORIZATION_FAILED,
        )
    if caller.allowed(operation, acl_type, acl_name):
        return None
    return ApiError(
        error,
        f"{caller.name} is not authorized for {operation.name} on "
        f"{resource_type} '{resource_name}'.",
    )


def _refusal(error: ApiError, resource: Body) -> Body:
    resource_type, resource_name = resource_key(resource)
    return {**error.as_fields(), "resource_type": resource_type, "resource_name": resource_name}


def _alter(api: str) -> Any:
    def alter(body: Body, caller: Caller) -> Body:
        resources = body["resources"]
        duplicates = duplicate_resources(resources)
        refused: dict[int, ApiError] = {}
        for index, resource in enumerate(resources):
            key = resource_key(resource)
            if key in duplicates:
                refused[index] = ApiError(Errors.INVALID_REQUEST, "Duplicate resource in request.")
                continue
            error = _authorization_error(caller, AclOperation.ALTER_CONFIGS, *key)
            if error is not None:
                refused[index] = error
        permitted = [r for i, r in enumerate(resources) if i not in refused]
        refusals = {index: _refusal(error, resources[index]) for index, error in refused.items()}
        caller.trail.refuse(answer_key="responses", items=list(refusals.values()))
        answers: list[Body] = []
        if permitted:
            response = controller_call(
                api=api,
                payload={"resources": permitted, "validate_only": body["validate_only"]},
                context=caller.context,
            )
            if "responses" not in response:  # a whole-request error from the controller
                raise ApiError(Errors(response["error_code"]), response.get("error_message"))
            answers = list(response["responses"])
        answered = iter(answers)
        responses = [
            refusals[index] if index in refusals else next(answered)
            for index in range(len(resources))
        ]
        return {"throttle_time_ms": 0, "responses": responses}

    return alter


def describe_configs_rpc(body: Body, caller: Caller) -> Body:
    resources = body["resources"]
    stored = configs_stored(resources=[resource_key(r) for r in resources])

    results = []
    for resource in resources:
        resource_type, resource_name = resource_key(resource)
        configs: list[Body] = []
        try:
            error = _authorization_error(
                caller, AclOperation.DESCRIBE_CONFIGS, resource_type, resource_name
            )
            if error is not None:
                raise error
            selectors.config_resource_check(
                resource_type=resource_type, resource_name=resource_name
            )
            configs = selectors.configs_describe(
                resource_type=resource_type,
                resource_name=resource_name,
                stored=stored,
                keys=resource.get("configuration_keys"),
                include_synonyms=body["include_synonyms"],
                include_documentation=body["include_documentation"],
            )
            fields = _ok()
        except ApiError as failure:
            fields = failure.as_fields()
        results.append(
            {
                **fields,
                "resource_type": resource_type,
                "resource_name": resource_name,
                "configs": configs,
            }
        )
    return {"throttle_time_ms": 0, "results": results}


def _wire_entity(entity: list[Body]) -> list[Body]:
    return [{"entity_type": e["entity_type"], "entity_name": e["entity_name"]} for e in entity]


def alter_client_quotas(body: Body, caller: Caller) -> Body:
    payload = {
        "entries": [
            {"entity": _wire_entity(entry["entity"]), "ops": [dict(op) for op in entry["ops"]]}
            for entry in body["entries"]
        ],
        "validate_only": body["validate_only"],
    }
    response = controller_call(api="AlterClientQuotas", payload=payload, context=caller.context)
    if "entries" not in response:  # a whole-request error from the controller
        raise ApiError(Errors(response["error_code"]), response.get("error_message"))
    return response


def describe_client_quotas(body: Body, caller: Caller) -> Body:
    components = [dict(c) for c in body["components"]]
    return quotas.describe_client_quotas(client_quota_map(), components, body["strict"])


CONFIG_RESOURCES = named.listed("responses", "resources", named.config_resource)
register(
    "DescribeConfigs",
    request=config_s.DescribeConfigsSerializer,
    authorize=any_principal,
    handler=describe_configs_rpc,
    resources=named.listed("results", "resources", named.config_resource),
    response=obj(
        "results",
        throttle_time_ms=INT,
        results=arr(
            kafka(resource_type=STR, resource_name=STR, configs=arr(CONFIG_ENTRY)),
        ),
    ),
)
register(
    "AlterConfigs",
    request=config_s.AlterConfigsSerializer,
    authorize=public_write,
    handler=_alter("AlterConfigs"),
    resources=CONFIG_RESOURCES,
    response=obj("responses", throttle_time_ms=INT, responses=arr(RESOURCE_RESULT)),
)
register(
    "IncrementalAlterConfigs",
    request=config_s.IncrementalAlterConfigsSerializer,
    authorize=public_write,
    handler=_alter("IncrementalAlterConfigs"),
    resources=CONFIG_RESOURCES,
    response=obj("responses", throttle_time_ms=INT, responses=arr(RESOURCE_RESULT)),
)
register(
    "AlterClientQuotas",
    request=quota_s.AlterClientQuotasSerializer,
    authorize=cluster(AclOperation.ALTER_CONFIGS, write=True),
    handler=alter_client_quotas,
    resources=named.listed("entries", "entries", named.quota_entity),
    response=obj("entries", throttle_time_ms=INT, entries=arr(kafka(entity=QUOTA_ENTITY))),
)
register(
    "DescribeClientQuotas",
    request=quota_s.DescribeClientQuotasSerializer,
    authorize=cluster(AclOperation.DESCRIBE_CONFIGS),
    handler=describe_client_quotas,
    resources=named.whole_body(named.quota_entity),
    response=kafka(
        throttle_time_ms=INT,
        entries=nullable(arr(obj(entity=QUOTA_ENTITY, values=arr(obj(key=STR, value=NUM))))),
    ),
)
