"""Config reads for the front door: whether a config resource exists in the projection."""

from __future__ import annotations

from brokers.models import Broker
from controlplane.controller.config_rpcs import broker_id_of
from controlplane.controller.configs import (
    BROKER_LOGGER,
    CLUSTER_DEFAULT,
    SUPPORTED_RESOURCE_TYPES,
    TOPIC,
)
from controlplane.controller.errors import ApiError, Errors
from replicas.models import Topic


def config_resource_check(*, resource_type: str, resource_name: str) -> None:
    """The resource exists in the projection (the same errors as the controller's)."""
    if resource_type not in SUPPORTED_RESOURCE_TYPES:
        raise ApiError(Errors.INVALID_REQUEST, f"Unexpected resource type {resource_type}.")
    if resource_type == TOPIC:
        if not resource_name:
            raise ApiError(Errors.INVALID_REQUEST, "Default topic resources are not allowed.")
        if not Topic.objects.filter(name=resource_name).exists():
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
    if not Broker.objects.filter(broker_id=broker_id).exists():
        raise ApiError(Errors.BROKER_ID_NOT_REGISTERED, f"Broker {broker_id} is not registered.")
