"""Reads of the control plane's state: cluster summary, the metadata log and stored configs.
ACLs and tokens are read through `security.selectors`, configs and quotas through
`configs.selectors`; the API and the UI read through these."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.db.models import Q, QuerySet, TextField
from django.db.models.functions import Cast

from controlplane.chunked import in_chunks
from controlplane.controller.config_schema import BROKER, CLUSTER_DEFAULT, ConfigView
from controlplane.models import Cluster, ConfigEntry, MetadataRecord
from controlplane.runtime.lease import cluster_read, now_ms


def controller_active(cluster: Cluster) -> bool:
    return bool(cluster.lease_holder) and cluster.lease_expires_ms >= now_ms()


def metadata_head() -> dict[str, Any]:
    """What a metadata fetch answers besides records: one read of the cluster row."""
    cluster = cluster_read()
    return {
        "cluster_id": cluster.cluster_id,
        "controller_id": cluster.controller_id if controller_active(cluster) else None,
        "controller_epoch": cluster.controller_epoch,
        "last_offset": cluster.last_offset,
    }


def metadata_records_json_after(*, after_offset: int, max_records: int) -> list[str]:
    """The records after `after_offset`, each already as its JSON text: the stored data is
    passed through without being decoded and encoded again (brokers fetch thousands at a time)."""
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


StoredConfigs = dict[tuple[str, str], dict[str, str]]


def configs_stored(*, resources: list[tuple[str, str]]) -> StoredConfigs:
    """The dynamic configs of the named resources and the cluster default, in one query."""
    names_by_type: dict[str, set[str]] = {}
    for resource_type, resource_name in {*resources, (BROKER, CLUSTER_DEFAULT)}:
        names_by_type.setdefault(resource_type, set()).add(resource_name)
    query = Q()
    for resource_type, names in names_by_type.items():
        query |= Q(resource_type=resource_type) & in_chunks("resource_name", sorted(names))
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
