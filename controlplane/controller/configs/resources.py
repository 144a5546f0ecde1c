"""Config resources: which types the controller serves, how they are named, and that one exists.

Kafka's ConfigResource: a TOPIC by name, a BROKER by id (the empty name is every broker's
default), a BROKER_LOGGER by broker id, a CLIENT_METRICS subscription and a GROUP by name (any
non-empty name: neither needs to exist, as in Kafka).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from typing import Any, Protocol

from controlplane.controller.client_configs import CLIENT_METRICS, GROUP
from controlplane.controller.config_schema import BROKER, BROKER_LOGGER, CLUSTER_DEFAULT, TOPIC
from controlplane.controller.errors import ApiError, Errors

# Kafka's ConfigResource.Type names; the control plane serves all but UNKNOWN, which it answers
# INVALID_REQUEST (as Kafka's controller does a type it does not own).
KAFKA_RESOURCE_TYPES = ("UNKNOWN", "TOPIC", "BROKER", "BROKER_LOGGER", "CLIENT_METRICS", "GROUP")
SUPPORTED_RESOURCE_TYPES = frozenset({TOPIC, BROKER, BROKER_LOGGER, CLIENT_METRICS, GROUP})
# The named resources of clients' configs, and what Kafka answers an empty name of each.
NAMED_RESOURCE_TYPES = {
    CLIENT_METRICS: "Subscription name can't be empty",
    GROUP: "Default group resources are not allowed.",
}

# Log4j levels a BROKER_LOGGER entry may take (Kafka's LogLevelConfig.VALID_LOG_LEVELS).
LOG_LEVELS = ("TRACE", "DEBUG", "INFO", "WARN", "ERROR", "FATAL")
ROOT_LOGGER = "root"
ROOT_LOGGER_LEVEL = "INFO"


def resource_key(resource: Mapping[str, Any]) -> tuple[str, str]:
    return str(resource["resource_type"]), str(resource["resource_name"])


def duplicate_resources(resources: list[Mapping[str, Any]]) -> set[tuple[str, str]]:
    counts = Counter(resource_key(r) for r in resources)
    return {key for key, count in counts.items() if count > 1}


class ResourceLookup(Protocol):
    """What the existence check asks of the cluster: the controller's image, or the state
    tables where the web node checks a read (DescribeConfigs) with the same rule."""

    def topic_id(self, name: str) -> str | None: ...

    def broker(self, broker_id: int) -> object | None: ...


def check_resource(view: ResourceLookup, resource_type: str, resource_name: str) -> None:
    """The resource must be one the controller owns and must exist (Kafka's
    ConfigurationControlManager.checkConfigResource and ControllerConfigurationValidator)."""
    if resource_type not in SUPPORTED_RESOURCE_TYPES:
        raise ApiError(Errors.INVALID_REQUEST, f"Unexpected resource type {resource_type}.")
    if resource_type in NAMED_RESOURCE_TYPES:
        if not resource_name:
            raise ApiError(Errors.INVALID_REQUEST, NAMED_RESOURCE_TYPES[resource_type])
        return
    if resource_type == TOPIC:
        if not resource_name:
            raise ApiError(Errors.INVALID_REQUEST, "Default topic resources are not allowed.")
        if view.topic_id(resource_name) is None:
            raise ApiError(
                Errors.UNKNOWN_TOPIC_OR_PARTITION, f"The topic '{resource_name}' does not exist."
            )
        return
    if resource_name == CLUSTER_DEFAULT:
        if resource_type == BROKER_LOGGER:
            raise ApiError(Errors.INVALID_REQUEST, "Broker id must not be empty.")
        return
    broker_id = broker_id_of(resource_name)
    if broker_id is None:
        raise ApiError(
            Errors.INVALID_REQUEST,
            f"Illegal non-integral {resource_type} resource name: {resource_name}",
        )
    if view.broker(broker_id) is None:
        raise ApiError(Errors.BROKER_ID_NOT_REGISTERED, f"Broker {broker_id} is not registered.")


def broker_id_of(name: str) -> int | None:
    if not name.isascii() or not name.isdigit():
        return None
    value = int(name)
    return value if value <= 2**31 - 1 else None
