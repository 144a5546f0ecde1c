"""Reads of the control plane's state: cluster summary, the metadata log, configs, ACLs,
client quotas and delegation tokens. The API and the UI read through these."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from django.conf import settings
from django.db.models import Count, Q, QuerySet, TextField
from django.db.models.functions import Cast

from brokers.models import Broker
from controlplane.authz import is_authorized
from controlplane.controller import tokens
from controlplane.controller.acl import (
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourceType,
)
from controlplane.controller.acls import ACL_FIELDS, binding_of
from controlplane.controller.configs import (
    BROKER,
    BROKER_LOGGER,
    CLUSTER_DEFAULT,
    ConfigView,
    describe_configs,
    describe_loggers,
)
from controlplane.controller.records import AccessControlEntryRecord, QuotaEntity
from controlplane.lease import cluster_get_or_create, now_ms
from controlplane.models import Acl, ClientQuota, Cluster, ConfigEntry, MetadataRecord
from controlplane.principals import AuthenticatedPrincipal
from controlplane.projections import delegation_token_rows


def controller_active(cluster: Cluster) -> bool:
    return bool(cluster.lease_holder) and cluster.lease_expires_ms >= now_ms()


def cluster_summary() -> dict[str, Any]:
    cluster = cluster_get_or_create()
    counts = Broker.objects.aggregate(
        n_fenced=Count("broker_id", filter=Q(fenced=True)),
        n_shutting_down=Count("broker_id", filter=Q(fenced=False, in_controlled_shutdown=True)),
        n_unfenced=Count("broker_id", filter=Q(fenced=False, in_controlled_shutdown=False)),
        n_canary=Count("broker_id", filter=Q(pod="canary-broker")),
        n_total=Count("broker_id"),
    )
    active = controller_active(cluster)
    return {
        "cluster_id": cluster.cluster_id,
        "controller_id": cluster.controller_id if active else None,
        "controller_epoch": cluster.controller_epoch,
        "controller_active": active,
        "metadata_offset": cluster.last_offset,
        "broker_states": {
            "FENCED": counts["n_fenced"],
            "UNFENCED": counts["n_unfenced"],
            "CONTROLLED_SHUTDOWN": counts["n_shutting_down"],
        },
        "broker_pods": {
            "broker": counts["n_total"] - counts["n_canary"],
            "canary-broker": counts["n_canary"],
        },
    }


def metadata_head() -> dict[str, Any]:
    """What a metadata fetch answers besides records: one read of the cluster row."""
    cluster = cluster_get_or_create()
    return {
        "cluster_id": cluster.cluster_id,
        "controller_id": cluster.controller_id if controller_active(cluster) else None,
        "controller_epoch": cluster.controller_epoch,
        "last_offset": cluster.last_offset,
    }


def metadata_records_after(*, after_offset: int, max_records: int) -> list[MetadataRecord]:
    return list(
        MetadataRecord.objects.filter(offset__gt=after_offset).order_by("offset")[:max_records]
    )


def metadata_records_json_after(*, after_offset: int, max_records: int) -> list[str]:
    """The same records, each already as its JSON text: the stored data is passed through
    without being decoded and encoded again (brokers fetch thousands at a time)."""
    rows = (
        MetadataRecord.objects.filter(offset__gt=after_offset)
        .order_by("offset")
        .annotate(data_text=Cast("data", TextField()))
        .values_list("offset", "record_type", "controller_epoch", "timestamp_ms", "data_text")[
            :max_records
        ]
    )
    return [
        f'{{"offset":{offset},"type":"{record_type}","controller_epoch":{epoch},'
        f'"timestamp_ms":{timestamp},"data":{data}}}'
        for offset, record_type, epoch, timestamp, data in rows
    ]


def metadata_log_queryset() -> QuerySet[MetadataRecord]:
    return MetadataRecord.objects.all().order_by("offset")


def record_as_fetched(record: MetadataRecord) -> dict[str, Any]:
    return {
        "offset": record.offset,
        "type": record.record_type,
        "controller_epoch": record.controller_epoch,
        "timestamp_ms": record.timestamp_ms,
        "data": record.data,
    }


StoredConfigs = dict[tuple[str, str], dict[str, str]]


def configs_stored(*, resources: list[tuple[str, str]]) -> StoredConfigs:
    """The dynamic configs of the named resources and the cluster default, in one query."""
    query = Q()
    for resource_type, resource_name in {*resources, (BROKER, CLUSTER_DEFAULT)}:
        query |= Q(resource_type=resource_type, resource_name=resource_name)
    stored: StoredConfigs = {}
    rows = ConfigEntry.objects.filter(query).values_list(
        "resource_type", "resource_name", "name", "value"
    )
    for resource_type, resource_name, name, value in rows:
        stored.setdefault((resource_type, resource_name), {})[name] = value
    return stored


def config_view() -> ConfigView:
    """The configs as the controller resolves them, each key read from the projection when
    asked (a delegation token's secret key, say)."""

    def lookup(resource_type: str, resource_name: str, name: str) -> str | None:
        row = ConfigEntry.objects.filter(
            resource_type=resource_type, resource_name=resource_name, name=name
        ).first()
        return None if row is None else row.value

    return ConfigView(lookup, settings.CP_STATIC_BROKER_CONFIGS)


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


# --- ACLs ---------------------------------------------------------------------------------
AclRow = tuple[Any, ...]  # an ACL's ACL_FIELDS values, in that order


def acl_list(
    *, filters: Mapping[str, str] | None = None, order_by: Sequence[str] = ()
) -> QuerySet[Acl, AclRow]:
    """The ACLs of the projection as rows of ACL_FIELDS, filtered by exact field values and
    ordered by `order_by` (else by the model's order). Lazy: a page is a count and a slice."""
    acls = Acl.objects.filter(**(filters or {}))
    if order_by:
        acls = acls.order_by(*order_by)
    return acls.values_list(*ACL_FIELDS)


def acl_get(*, acl_id: str) -> AclRow | None:
    """One ACL as a row of ACL_FIELDS, None when there is no such ACL."""
    return Acl.objects.filter(pk=acl_id).values_list(*ACL_FIELDS).first()


def acls_describe(*, acl_filter: AclBindingFilter) -> list[dict[str, Any]]:
    """The ACLs of the projection that pass the filter, grouped by resource pattern (Kafka's
    DescribeAclsResponse `resources`), in the projection's order."""
    resources: dict[tuple[str, str, str], list[dict[str, str]]] = {}
    for row in _acl_candidates(acl_filter):
        binding = binding_of(AccessControlEntryRecord(*row))
        if not acl_filter.matches(binding):
            continue
        key = (binding.resource_type.name, binding.resource_name, binding.pattern_type.name)
        resources.setdefault(key, []).append(
            {
                "principal": binding.principal,
                "host": binding.host,
                "operation": binding.operation.name,
                "permission_type": binding.permission_type.name,
            }
        )
    return [
        {"resource_type": rt, "resource_name": name, "pattern_type": pt, "acls": entries}
        for (rt, name, pt), entries in resources.items()
    ]


def _acl_candidates(acl_filter: AclBindingFilter) -> QuerySet[Acl, AclRow]:
    """The projection's ACLs, narrowed in SQL by the filter's exact fields; the filter itself
    (with its LITERAL / PREFIXED / MATCH rules) decides."""
    rows = Acl.objects.all()
    resource_type, operation = acl_filter.resource_type, acl_filter.operation
    permission_type = acl_filter.permission_type
    if resource_type is not None and resource_type is not ResourceType.ANY:
        rows = rows.filter(resource_type=resource_type.name)
    if acl_filter.pattern_type in (PatternType.LITERAL, PatternType.PREFIXED):
        rows = rows.filter(pattern_type=acl_filter.pattern_type.name)
    if acl_filter.pattern_type is not PatternType.MATCH and acl_filter.resource_name is not None:
        rows = rows.filter(resource_name=acl_filter.resource_name)
    if acl_filter.principal is not None:
        rows = rows.filter(principal=acl_filter.principal)
    if acl_filter.host is not None:
        rows = rows.filter(host=acl_filter.host)
    if operation is not None and operation is not AclOperation.ANY:
        rows = rows.filter(operation=operation.name)
    if permission_type is not None and permission_type is not AclPermissionType.ANY:
        rows = rows.filter(permission_type=permission_type.name)
    return rows.values_list(*ACL_FIELDS)


# --- client quotas ------------------------------------------------------------------------
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


# --- delegation tokens --------------------------------------------------------------------
def tokens_describe(
    *,
    principal: AuthenticatedPrincipal,
    host: str,
    owners: list[Mapping[str, Any]] | None = None,
) -> dict[str, Any]:
    """DescribeDelegationToken's answer: the live tokens of `owners` (every owner when None)
    that the principal owns, renews or may DESCRIBE (every one for a super user), never an
    HMAC. Raises DELEGATION_TOKEN_AUTH_DISABLED (ApiError) while no secret key is set."""
    tokens.secret_of(config_view())

    def may_describe(token_id: str) -> bool:
        return is_authorized(
            principal,
            host=host,
            operation=AclOperation.DESCRIBE,
            resource_type=ResourceType.DELEGATION_TOKEN,
            resource_name=token_id,
        )

    return tokens.describe_tokens(
        delegation_token_rows(),
        owners=owners,
        requester=principal.principal,
        is_super=principal.is_super,
        may_describe=may_describe,
    )
