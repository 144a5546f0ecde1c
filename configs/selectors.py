"""Config and client quota reads: DescribeConfigs' entries, whether a config resource exists
(by the controller's own rule, asked of the projection), and the quota projection
(cp_client_quota). The API and the UI read these."""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from django.conf import settings
from django.db.models import QuerySet

from brokers.models import Broker
from configs.models import ClientQuota
from controlplane.controller.config_schema import BROKER_LOGGER
from controlplane.controller.configs.describe import describe_configs, describe_loggers
from controlplane.controller.configs.resources import check_resource
from controlplane.controller.records import QuotaEntity
from controlplane.models import ConfigEntry
from controlplane.selectors import StoredConfigs
from replicas.models import Topic


def configs_describe(
    *,
    resource_type: str,
    resource_name: str,
    stored: StoredConfigs,
    keys: list[str] | None = None,
    include_synonyms: bool = False,
    include_documentation: bool = False,
) -> list[dict[str, Any]]:
    """DescribeConfigs' entries of one existing resource, from its configs already read
    (`configs_stored`) and the static broker configs: what the API answers and the UI shows."""
    flags: dict[str, Any] = {
        "keys": keys,
        "include_synonyms": include_synonyms,
        "include_documentation": include_documentation,
    }
    if resource_type == BROKER_LOGGER:
        return describe_loggers(stored.get((resource_type, resource_name), {}), **flags)

    def dynamic(resource_type: str, resource_name: str, name: str) -> str | None:
        return stored.get((resource_type, resource_name), {}).get(name)

    return describe_configs(
        resource_type,
        resource_name,
        dynamic=dynamic,
        static=settings.CP_STATIC_BROKER_CONFIGS,
        **flags,
    )


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


def client_quota_entity_list(*, entity_type: str = "") -> QuerySet[ClientQuota, str]:
    """The entities that have a quota (their canonical JSON keys), in order, each once; only
    those with a part of `entity_type` when it is given. Lazy: a page is a count and a slice."""
    keys = ClientQuota.objects.order_by("entity_key").values_list("entity_key", flat=True)
    if entity_type:
        # entity_key is canonical JSON: `["user",` can only be an entity type, never in a name.
        keys = keys.filter(entity_key__contains=json.dumps([entity_type])[:-1] + ",")
    return keys.distinct()


def client_quota_list(*, entity_keys: Iterable[str]) -> list[tuple[QuotaEntity, str, float]]:
    """Every quota value of the given entities (keys from `client_quota_entity_list`), as
    (entity, key, value), ordered by entity then key: one query."""
    values = (
        ClientQuota.objects.filter(entity_key__in=list(entity_keys))
        .order_by("entity_key", "key")
        .values_list("entity", "key", "value")
    )
    return [(_quota_entity(entity), key, value) for entity, key, value in values]


def _quota_entity(value: Any) -> QuotaEntity:
    return tuple((str(kind), None if name is None else str(name)) for kind, name in value)


def config_resource_names(*, resource_type: str, limit: int) -> list[str]:
    """The names of the resources of `resource_type` with dynamic configs (client metrics
    subscriptions, groups), in order, each once, at most `limit` of them: one query."""
    names = (
        ConfigEntry.objects.filter(resource_type=resource_type)
        .order_by("resource_name")
        .values_list("resource_name", flat=True)
        .distinct()
    )
    return list(names[:limit])
