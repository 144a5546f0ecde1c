"""State tables as projections of the metadata log.

Each projection writes what a delta changed (bulk SQL, a fixed number of statements whatever the
size of the delta) and loads its part of the image back. Apps register theirs in `ready()`.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any, Protocol

from django.db.models import Q

from controlplane.controller.acls.control import ACL_FIELDS
from controlplane.controller.image import MetadataDelta, MetadataImage
from controlplane.controller.records import AccessControlEntryRecord

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


def prepare_delta(
    delta: MetadataDelta, commit: Sequence[Any] = (), timestamp_ms: int = 0
) -> list[Callable[[], None]]:
    """Every projection's writes for `delta`. Projections that can build their SQL ahead
    (`prepare`) do it now, before the commit takes the cluster lock; the rest write then.
    Those that need to know which write each record came from and when (the timeline)
    declare `prepare_commit(delta, writes, timestamp_ms)`: `commit` are the AppliedWrites."""
    writes: list[Callable[[], None]] = []
    for projection in PROJECTIONS.values():
        prepare_commit = getattr(projection, "prepare_commit", None)
        if prepare_commit is not None:
            writes.extend(prepare_commit(delta, commit, timestamp_ms))
            continue
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
        # A few hundred keys per statement: SQLite refuses an expression tree over 1,000 deep.
        for start in range(0, len(removed), REMOVED_CONFIGS_PER_STATEMENT):
            query = Q()
            for resource_type, resource_name, name in removed[
                start : start + REMOVED_CONFIGS_PER_STATEMENT
            ]:
                query |= Q(resource_type=resource_type, resource_name=resource_name, name=name)
            ConfigEntry.objects.filter(query).delete()

    def load(self, image: MetadataImage) -> None:
        from controlplane.models import ConfigEntry

        rows = ConfigEntry.objects.values_list("resource_type", "resource_name", "name", "value")
        for resource_type, resource_name, name, value in rows.iterator(chunk_size=2000):
            image.put_config((resource_type, resource_name, name), value)


REMOVED_CONFIGS_PER_STATEMENT = 300

register_projection(ConfigProjection())
