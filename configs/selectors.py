"""Config reads for the front door: whether a config resource exists, by the controller's own rule
(`check_resource`) asked of the projection instead of the image."""

from __future__ import annotations

from brokers.models import Broker
from controlplane.controller.configs.resources import check_resource
from replicas.models import Topic


class _Projection:
    """What `check_resource` asks of the cluster, answered by the state tables."""

    def topic_id(self, name: str) -> str | None:
        return Topic.objects.filter(name=name).values_list("topic_id", flat=True).first()

    def broker(self, broker_id: int) -> object | None:
        return (
            Broker.objects.filter(broker_id=broker_id).values_list("broker_id", flat=True).first()
        )


def config_resource_check(*, resource_type: str, resource_name: str) -> None:
    """The resource exists (the controller's errors: INVALID_REQUEST, UNKNOWN_TOPIC_OR_PARTITION,
    BROKER_ID_NOT_REGISTERED)."""
    check_resource(_Projection(), resource_type, resource_name)
