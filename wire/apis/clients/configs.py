"""DescribeConfigs, AlterConfigs and IncrementalAlterConfigs on the wire: Kafka's int8 codes
(resource types, config operations, sources, types) to and from the names the REST bodies take,
then the same `controlplane.rpc.execute` the REST views call.
"""

from __future__ import annotations

from typing import Any

from wire.apis.base import BOTH_ROLES, MAX_ITEMS_PER_REQUEST, WireRequest, wire_api
from wire.apis.common import CONFIG_SOURCES, code_of, name_of, respond, run_rpc
from wire.convert import Data, to_data

# --- configs ---------------------------------------------------------------------------------

# Kafka's ConfigResource.Type ids.
RESOURCE_TYPES = {
    "UNKNOWN": 0,
    "TOPIC": 2,
    "BROKER": 4,
    "BROKER_LOGGER": 8,
    "CLIENT_METRICS": 16,
    "GROUP": 32,
}
# Kafka's AlterConfigOp.OpType ids.
CONFIG_OPERATIONS = {"SET": 0, "DELETE": 1, "APPEND": 2, "SUBTRACT": 3}
# Kafka's DescribeConfigsResponse.ConfigType ids.
CONFIG_TYPES = {
    "UNKNOWN": 0,
    "BOOLEAN": 1,
    "STRING": 2,
    "INT": 3,
    "SHORT": 4,
    "LONG": 5,
    "DOUBLE": 6,
    "LIST": 7,
    "CLASS": 8,
    "PASSWORD": 9,
}


def _resource_in(resource: Data) -> Data:
    return {**resource, "resource_type": name_of(RESOURCE_TYPES, resource["resource_type"])}


def _resource_out(resource: Data) -> Data:
    return {**resource, "resource_type": code_of(RESOURCE_TYPES, resource.get("resource_type"))}


def _config_out(config: Data) -> Data:
    return {
        **config,
        "config_source": code_of(CONFIG_SOURCES, config.get("config_source")),
        "config_type": code_of(CONFIG_TYPES, config.get("config_type")),
        "synonyms": [
            {**s, "source": code_of(CONFIG_SOURCES, s.get("source"))}
            for s in config.get("synonyms") or ()
        ],
    }


@wire_api("DescribeConfigs", 32, (1, 4), max_items=MAX_ITEMS_PER_REQUEST, roles=BOTH_ROLES)
def describe_configs(request: WireRequest) -> Any:
    wire = to_data(request.body)
    body = {
        "resources": [_resource_in(r) for r in wire["resources"]],
        "include_synonyms": wire.get("include_synonyms", False),
        "include_documentation": wire.get("include_documentation", False),
    }
    answered = run_rpc("DescribeConfigs", body, request)
    if answered.ok:
        results = [
            {**_resource_out(r), "configs": [_config_out(c) for c in r["configs"]]}
            for r in answered.data["results"]
        ]
    else:
        results = [{**r, **answered.error_fields(), "configs": []} for r in wire["resources"]]
    return respond(request, {"results": results})


def _alter(name: str, request: WireRequest, configs: Any) -> Any:
    wire = to_data(request.body)
    body = {
        "resources": [{**_resource_in(r), "configs": configs(r)} for r in wire["resources"]],
        "validate_only": wire["validate_only"],
    }
    answered = run_rpc(name, body, request)
    if answered.ok:
        responses = [_resource_out(r) for r in answered.data["responses"]]
    else:
        responses = [
            {
                **answered.error_fields(),
                "resource_type": r["resource_type"],
                "resource_name": r["resource_name"],
            }
            for r in wire["resources"]
        ]
    return respond(request, {"responses": responses})


@wire_api("AlterConfigs", 33, (0, 2), max_items=MAX_ITEMS_PER_REQUEST, roles=BOTH_ROLES)
def alter_configs(request: WireRequest) -> Any:
    return _alter("AlterConfigs", request, lambda r: r["configs"])


def _incremental_configs(resource: Data) -> list[Data]:
    return [
        {
            "name": c["name"],
            # An operation id Kafka does not know is named as such: the RPC refuses it
            # (INVALID_REQUEST) rather than the listener guessing what was meant.
            "config_operation": name_of(
                CONFIG_OPERATIONS, c["config_operation"], f"UNKNOWN({c['config_operation']})"
            ),
            "value": c["value"],
        }
        for c in resource["configs"]
    ]


@wire_api("IncrementalAlterConfigs", 44, (0, 1), max_items=MAX_ITEMS_PER_REQUEST, roles=BOTH_ROLES)
def incremental_alter_configs(request: WireRequest) -> Any:
    return _alter("IncrementalAlterConfigs", request, _incremental_configs)
