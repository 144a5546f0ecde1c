"""Dynamic configs on the controller: AlterConfigs and IncrementalAlterConfigs.

As Kafka's ConfigurationControlManager: each resource (TOPIC, BROKER, BROKER_LOGGER,
CLIENT_METRICS, GROUP) is checked and changed on its own (per-resource errors, partial success
is normal), and a resource's changes are all or nothing. AlterConfigs replaces every dynamic
config of a resource with the given set; IncrementalAlterConfigs applies SET, DELETE, APPEND and
SUBTRACT key by key (APPEND and SUBTRACT only on LIST keys, starting from the key's default when
it has no dynamic value). Every change is a ConfigRecord (value None deletes it); an unchanged
value writes nothing; `validate_only` writes nothing. A CLIENT_METRICS or GROUP resource's
resulting set is checked whole, as Kafka's controller checks it (`client_configs.validate`).
Values of sensitive keys are never put into a response, an error message or a log line.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from controlplane.controller import client_configs
from controlplane.controller.client_configs import CLIENT_METRICS, GROUP
from controlplane.controller.config_schema import (
    BROKER_LOGGER,
    CLUSTER_DEFAULT,
    TOPIC,
    ConfigDef,
    registry_of,
)
from controlplane.controller.configs.resources import (
    LOG_LEVELS,
    ROOT_LOGGER,
    check_resource,
    duplicate_resources,
    resource_key,
)
from controlplane.controller.errors import ApiError, Errors
from controlplane.controller.image import MetadataDelta
from controlplane.controller.records import ConfigRecord, Record
from controlplane.controller.result import ControllerResult

SET, DELETE, APPEND, SUBTRACT = "SET", "DELETE", "APPEND", "SUBTRACT"
OPERATIONS = (SET, DELETE, APPEND, SUBTRACT)
LOGGER_NAME = re.compile(r"^[A-Za-z0-9_$.\-]{1,255}$")


def _definition(resource_type: str, name: str) -> ConfigDef:
    registry = registry_of(resource_type)
    assert registry is not None
    definition = registry.get(name)
    if definition is None:
        if resource_type == CLIENT_METRICS:  # Kafka: an InvalidRequestException here
            raise ApiError(Errors.INVALID_REQUEST, f"Unknown client metrics configuration: {name}")
        kind = {TOPIC: "topic", GROUP: "group"}.get(resource_type, "broker")
        raise ApiError(Errors.INVALID_CONFIG, f"Unknown {kind} config name: {name}")
    if definition.read_only:
        raise ApiError(
            Errors.INVALID_CONFIG, f"Cannot update these configs dynamically: {definition.name}"
        )
    return definition


def _check_logger(name: str, value: str | None) -> None:
    if not LOGGER_NAME.match(name):
        raise ApiError(Errors.INVALID_CONFIG, f"Logger {name} does not exist!")
    if value is not None and value not in LOG_LEVELS:
        raise ApiError(
            Errors.INVALID_CONFIG,
            f"Cannot set the log level of {name} to {value} as it is not a supported log level. "
            f"Valid log levels are {', '.join(LOG_LEVELS)}",
        )


def _check_value(resource_type: str, resource_name: str, name: str, value: str | None) -> None:
    """A key's new value (None: removed) fits its definition; INVALID_CONFIG otherwise."""
    if resource_type == BROKER_LOGGER:
        _check_logger(name, value)
        return
    definition = _definition(resource_type, name)
    if definition.per_broker and resource_name == CLUSTER_DEFAULT:
        raise ApiError(
            Errors.INVALID_CONFIG, f"{name} is set per broker, not as the cluster default."
        )
    if value is not None:
        definition.parse(value)


def _no_duplicate_keys(configs: list[Mapping[str, Any]]) -> None:
    names = [c["name"] for c in configs]
    if len(set(names)) != len(names):
        raise ApiError(Errors.INVALID_REQUEST, "Error due to duplicate config keys")


def _null_values(configs: list[Mapping[str, Any]], operation_of: Any) -> None:
    nulls = [c["name"] for c in configs if c.get("value") is None and operation_of(c) != DELETE]
    if nulls:
        raise ApiError(Errors.INVALID_REQUEST, f"Null value not supported for : {', '.join(nulls)}")


def _records(
    view: MetadataDelta,
    resource_type: str,
    resource_name: str,
    wanted: Mapping[str, str | None],
) -> list[Record]:
    """ConfigRecords for the keys whose value changes; an unchanged key writes nothing. The
    resource's resulting set is checked whole first (client metrics and groups)."""
    resulting = {**view.configs_of(resource_type, resource_name), **wanted}
    client_configs.validate(
        resource_type, {name: value for name, value in resulting.items() if value is not None}
    )
    records: list[Record] = []
    for name, value in sorted(wanted.items()):
        if view.config(resource_type, resource_name, name) != value:
            records.append(
                ConfigRecord(
                    resource_type=resource_type,
                    resource_name=resource_name,
                    name=name,
                    value=value,
                )
            )
    return records


def _alter_resource(view: MetadataDelta, resource: Mapping[str, Any]) -> list[Record]:
    resource_type, resource_name = resource_key(resource)
    check_resource(view, resource_type, resource_name)
    if resource_type == BROKER_LOGGER:
        raise ApiError(
            Errors.INVALID_REQUEST,
            "AlterConfigs is deprecated and does not support the resource type BROKER_LOGGER; "
            "use IncrementalAlterConfigs.",
        )
    configs = list(resource.get("configs") or ())
    _no_duplicate_keys(configs)
    _null_values(configs, lambda c: SET)
    given = {c["name"]: c["value"] for c in configs}
    for name, value in given.items():
        _check_value(resource_type, resource_name, name, value)
    wanted: dict[str, str | None] = dict.fromkeys(view.configs_of(resource_type, resource_name))
    wanted.update(given)
    return _records(view, resource_type, resource_name, wanted)


def _list_default(resource_type: str, name: str) -> list[str]:
    registry = registry_of(resource_type)
    definition = registry.get(name) if registry is not None else None
    if definition is None or definition.default is None:
        return []
    return [item for item in definition.default.split(",") if item]


def _incremental_resource(view: MetadataDelta, resource: Mapping[str, Any]) -> list[Record]:
    resource_type, resource_name = resource_key(resource)
    check_resource(view, resource_type, resource_name)
    configs = list(resource.get("configs") or ())
    _no_duplicate_keys(configs)
    _null_values(configs, lambda c: c["config_operation"])
    wanted: dict[str, str | None] = {}
    for config in configs:
        name, operation, value = config["name"], config["config_operation"], config.get("value")
        if operation not in OPERATIONS:
            raise ApiError(Errors.INVALID_REQUEST, f"Unknown config operation {operation}.")
        current = view.config(resource_type, resource_name, name)
        if resource_type == BROKER_LOGGER:
            if operation in (APPEND, SUBTRACT):
                raise ApiError(
                    Errors.INVALID_REQUEST,
                    f"{operation} operation is not allowed for the BROKER_LOGGER resource",
                )
            if operation == DELETE and name == ROOT_LOGGER:
                raise ApiError(
                    Errors.INVALID_REQUEST,
                    "Removing the log level of the root logger is not allowed",
                )
        new_value: str | None
        if operation == SET:
            new_value = value
        elif operation == DELETE:
            new_value = None
        else:
            definition = _definition(resource_type, name)
            if not definition.is_list:
                raise ApiError(
                    Errors.INVALID_CONFIG,
                    f"Can't {operation} to key {name} because its type is not LIST.",
                )
            items = (
                [i.strip() for i in current.split(",") if i.strip()]
                if current is not None
                else _list_default(resource_type, name)
            )
            operands = [i.strip() for i in str(value).split(",") if i.strip()]
            if operation == APPEND:
                items += [i for i in operands if i not in items]
            else:
                items = [i for i in items if i not in operands]
            new_value = ",".join(items)
        _check_value(resource_type, resource_name, name, new_value)
        wanted[name] = new_value
    return _records(view, resource_type, resource_name, wanted)


def _answer_resources(
    view: MetadataDelta,
    payload: Mapping[str, Any],
    change: Any,
) -> ControllerResult:
    resources = list(payload.get("resources") or ())
    duplicates = duplicate_resources(resources)
    records: list[Record] = []
    responses = []
    for resource in resources:
        resource_type, resource_name = resource_key(resource)
        try:
            if (resource_type, resource_name) in duplicates:
                raise ApiError(Errors.INVALID_REQUEST, "Duplicate resource in request.")
            records.extend(change(view, resource))
        except ApiError as error:
            fields = error.as_fields()
        else:
            fields = {"error_code": 0, "error": Errors.NONE.name, "error_message": None}
        responses.append({**fields, "resource_type": resource_type, "resource_name": resource_name})
    if payload.get("validate_only"):
        records = []
    return ControllerResult(records, {"throttle_time_ms": 0, "responses": responses})


def alter_configs(view: MetadataDelta, payload: Mapping[str, Any]) -> ControllerResult:
    """Kafka's legacy AlterConfigs: the given configs replace all dynamic configs of each
    resource (keys not given are deleted)."""
    return _answer_resources(view, payload, _alter_resource)


def incremental_alter_configs(view: MetadataDelta, payload: Mapping[str, Any]) -> ControllerResult:
    return _answer_resources(view, payload, _incremental_resource)
