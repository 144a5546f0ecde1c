"""State tables as projections of the metadata log.

Each projection writes what a delta changed (bulk SQL, a fixed number of statements whatever the
size of the delta) and loads its part of the image back. Apps register theirs in `ready()`.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable, Iterator
from typing import Protocol

from django.db.models import Q

from controlplane.controller.acls.control import ACL_FIELDS
from controlplane.controller.image import MetadataDelta, MetadataImage
from controlplane.controller.records import (
    AccessControlEntryRecord,
    DelegationTokenRecord,
    QuotaEntity,
)

Write = Callable[[], None]


class Projection(Protocol):
    name: str
    tables: tuple[str, ...]  # the state tables it writes (only in the commit: single_writer)

    def persist(self, delta: MetadataDelta) -> None: ...

    def load(self, image: MetadataImage) -> None: ...


PROJECTIONS: dict[str, Projection] = {}


def register_projection(projection: Projection) -> Projection:
    PROJECTIONS[projection.name] = projection
    return projection


def prepare_delta(delta: MetadataDelta) -> list[Callable[[], None]]:
    """Every projection's writes for `delta`. Projections that can build their SQL ahead
    (`prepare`) do it now, before the commit takes the cluster lock; the rest write then."""
    writes: list[Callable[[], None]] = []
    for projection in PROJECTIONS.values():
        prepare = getattr(projection, "prepare", None)
        if prepare is not None:
            writes.extend(prepare(delta))
        else:
            writes.append(functools.partial(projection.persist, delta))
    return writes


def load_image(cluster_id: str, last_offset: int) -> MetadataImage:
    image = MetadataImage(cluster_id=cluster_id, last_offset=last_offset)
    for projection in PROJECTIONS.values():
        projection.load(image)
    return image


class AclProjection:
    name = "acls"
    tables: tuple[str, ...] = ("cp_acl",)

    def persist(self, delta: MetadataDelta) -> None:
        from controlplane.models import Acl

        if not delta.changed_acls:
            return
        upserts = [Acl(**r.to_data()) for r in delta.changed_acls.values() if r is not None]
        removed = [acl_id for acl_id, r in delta.changed_acls.items() if r is None]
        if upserts:
            Acl.objects.bulk_create(
                upserts,
                update_conflicts=True,
                unique_fields=["id"],
                update_fields=list(ACL_FIELDS[1:]),
            )
        if removed:
            Acl.objects.filter(id__in=removed).delete()

    def load(self, image: MetadataImage) -> None:
        from controlplane.models import Acl

        for row in Acl.objects.values(*ACL_FIELDS).iterator(chunk_size=2000):
            image.acls[row["id"]] = AccessControlEntryRecord(**row)


register_projection(AclProjection())


class ConfigProjection:
    name = "configs"
    tables: tuple[str, ...] = ("cp_config",)

    def persist(self, delta: MetadataDelta) -> None:
        from controlplane.models import ConfigEntry
        from controlplane.runtime.bulk import Column, bulk_upsert

        if not delta.changed_configs:
            return
        upserts = [
            (*key, value) for key, value in delta.changed_configs.items() if value is not None
        ]
        bulk_upsert(
            table="cp_config",
            columns=[
                Column("resource_type", "text"),
                Column("resource_name", "text"),
                Column("name", "text"),
                Column("value", "text"),
            ],
            rows=upserts,
            conflict=["resource_type", "resource_name", "name"],
            update=["value"],
        )
        removed = [key for key, value in delta.changed_configs.items() if value is None]
        if removed:
            query = Q()
            for resource_type, resource_name, name in removed:
                query |= Q(resource_type=resource_type, resource_name=resource_name, name=name)
            ConfigEntry.objects.filter(query).delete()

    def load(self, image: MetadataImage) -> None:
        from controlplane.models import ConfigEntry

        rows = ConfigEntry.objects.values_list("resource_type", "resource_name", "name", "value")
        for resource_type, resource_name, name, value in rows.iterator(chunk_size=2000):
            image.put_config((resource_type, resource_name, name), value)


register_projection(ConfigProjection())


def quota_entity_key(entity: QuotaEntity) -> str:
    """The canonical JSON of an entity (the projection's `entity_key`)."""
    return json.dumps([list(pair) for pair in entity], separators=(",", ":"))


def quota_row_id(entity: QuotaEntity, key: str) -> str:
    return json.dumps([[list(pair) for pair in entity], key], separators=(",", ":"))


class QuotaProjection:
    """cp_client_quota: one row per (entity, quota key); one upsert and one delete statement."""

    name = "client_quotas"
    tables: tuple[str, ...] = ("cp_client_quota",)

    def persist(self, delta: MetadataDelta) -> None:
        for write in self.prepare(delta):
            write()

    def prepare(self, delta: MetadataDelta) -> list[Write]:
        from controlplane.runtime.bulk import Column, prepared_delete, prepared_upsert

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
    from controlplane.models import ClientQuota

    rows = ClientQuota.objects.values_list("entity", "key", "value")
    for entity, key, value in rows.iterator(chunk_size=2000):
        yield tuple((str(t), n) for t, n in entity), key, float(value)


def client_quota_map() -> dict[QuotaEntity, dict[str, float]]:
    """Every quota from the projection, by entity (what describe and effective read)."""
    quotas: dict[QuotaEntity, dict[str, float]] = {}
    for entity, key, value in client_quota_rows():
        quotas.setdefault(entity, {})[key] = value
    return quotas


register_projection(QuotaProjection())


TOKEN_FIELDS = [
    "token_id",
    "owner",
    "requester",
    "renewers",
    "issue_timestamp",
    "max_timestamp",
    "expiration_timestamp",
]


class TokenProjection:
    """cp_delegation_token: one row per live delegation token (no HMAC)."""

    name = "delegation_tokens"
    tables: tuple[str, ...] = ("cp_delegation_token",)

    def persist(self, delta: MetadataDelta) -> None:
        from controlplane.models import DelegationToken

        if not delta.changed_delegation_tokens:
            return
        removed = [k for k, v in delta.changed_delegation_tokens.items() if v is None]
        if removed:
            DelegationToken.objects.filter(token_id__in=removed).delete()
        rows = [
            DelegationToken(
                token_id=t.token_id,
                owner=t.owner,
                requester=t.requester,
                renewers=list(t.renewers),
                issue_timestamp=t.issue_timestamp,
                max_timestamp=t.max_timestamp,
                expiration_timestamp=t.expiration_timestamp,
            )
            for t in delta.changed_delegation_tokens.values()
            if t is not None
        ]
        if rows:
            DelegationToken.objects.bulk_create(
                rows,
                update_conflicts=True,
                unique_fields=["token_id"],
                update_fields=TOKEN_FIELDS[1:],
            )

    def load(self, image: MetadataImage) -> None:
        for token in delegation_token_rows():
            image.delegation_tokens[token.token_id] = token


def delegation_token_rows() -> Iterator[DelegationTokenRecord]:
    """Every live token from the projection, as its record."""
    from controlplane.models import DelegationToken

    for row in DelegationToken.objects.values(*TOKEN_FIELDS).iterator(chunk_size=2000):
        row["renewers"] = tuple(row["renewers"])
        yield DelegationTokenRecord(**row)


register_projection(TokenProjection())
