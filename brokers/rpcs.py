"""Kafka's UnregisterBroker (KIP-631): ALTER on the cluster, never from a broker principal."""

from __future__ import annotations

from typing import Any

from audit import resources as named
from brokers import services
from brokers.api.serializers import UnregisterBrokerSerializer
from controlplane.controller.acls.bindings import AclOperation
from controlplane.rpc import Caller, cluster, register


def unregister_broker(body: dict[str, Any], caller: Caller) -> dict[str, Any]:
    return services.broker_unregister(broker_id=body["broker_id"], context=caller.context)


register(
    "UnregisterBroker",
    request=UnregisterBrokerSerializer,
    authorize=cluster(AclOperation.ALTER, write=True),
    handler=unregister_broker,
    resources=named.broker,
)
