"""The client quota projection (cp_client_quota) of ClientQuotaRecord, and its reads."""

from __future__ import annotations

import json
from collections.abc import Iterator

from configs.models import ClientQuota
from controlplane.controller.image import MetadataDelta, MetadataImage
from controlplane.controller.records import QuotaEntity
from controlplane.runtime.bulk import Column, prepared_delete, prepared_upsert
from controlplane.runtime.projections import AppliedWrites, Write


def quota_entity_key(entity: QuotaEntity) -> str:
    """The canonical JSON of an entity (the projection's `entity_key`)."""
    return json.dumps([list(pair) for pair in entity], separators=(",", ":"))


def quota_row_id(entity: QuotaEntity, key: str) -> str:
    return json.dumps([[list(pair) for pair in entity], key], separators=(",", ":"))


class QuotaProjection:
    """cp_client_quota: one row per (entity, quota key); one upsert and one delete statement."""

    name = "client_quotas"
    tables: tuple[str, ...] = ("cp_client_quota",)

    def prepare(
        self, delta: MetadataDelta, applied: AppliedWrites, timestamp_ms: int
    ) -> list[Write]:
        if not delta.changed_client_quotas:
            return []
        upserts = [
            (
                quota_row_id(entity, key),
                quota_entity_key(entity),
                quota_entity_key(entity),
                key,
                value,
            )
            for (entity, key), value in delta.changed_client_quotas.items()
            if value is not None
        ]
        removed = [
            quota_row_id(entity, key)
            for (entity, key), value in delta.changed_client_quotas.items()
            if value is None
        ]
        return [
            prepared_delete(table="cp_client_quota", column="id", pg_type="text", values=removed),
            prepared_upsert(
                table="cp_client_quota",
                columns=[
                    Column("id", "text"),
                    Column("entity", "text", json=True),
                    Column("entity_key", "text"),
                    Column("key", "text"),
                    Column("value", "float8"),
                ],
                rows=upserts,
                conflict=["id"],
                update=["value"],
            ),
        ]

    def load(self, image: MetadataImage) -> None:
        for entity, key, value in client_quota_rows():
            image.put_client_quota(entity, key, value)


def client_quota_rows() -> Iterator[tuple[QuotaEntity, str, float]]:
    rows = ClientQuota.objects.values_list("entity", "key", "value")
    for entity, key, value in rows.iterator(chunk_size=2000):
        yield tuple((str(t), n) for t, n in entity), key, float(value)


def client_quota_map() -> dict[QuotaEntity, dict[str, float]]:
    """Every quota from the projection, by entity (what describe and effective read)."""
    quotas: dict[QuotaEntity, dict[str, float]] = {}
    for entity, key, value in client_quota_rows():
        quotas.setdefault(entity, {})[key] = value
    return quotas
