"""State tables as projections of the metadata log.

Each projection writes what a delta changed (bulk SQL, a fixed number of statements whatever the
size of the delta) and loads its part of the image back. Apps register theirs in `ready()`.
"""

from __future__ import annotations

from typing import Protocol

from controlplane.controller.image import MetadataDelta, MetadataImage
from controlplane.controller.records import AccessControlEntryRecord


class Projection(Protocol):
    name: str

    def persist(self, delta: MetadataDelta) -> None: ...

    def load(self, image: MetadataImage) -> None: ...


PROJECTIONS: dict[str, Projection] = {}


def register_projection(projection: Projection) -> Projection:
    PROJECTIONS[projection.name] = projection
    return projection


def persist_delta(delta: MetadataDelta) -> None:
    for projection in PROJECTIONS.values():
        projection.persist(delta)


def load_image(cluster_id: str, last_offset: int) -> MetadataImage:
    image = MetadataImage(cluster_id=cluster_id, last_offset=last_offset)
    for projection in PROJECTIONS.values():
        projection.load(image)
    return image


ACL_FIELDS = [
    "resource_type",
    "resource_name",
    "pattern_type",
    "principal",
    "host",
    "operation",
    "permission_type",
]


class AclProjection:
    name = "acls"

    def persist(self, delta: MetadataDelta) -> None:
        from controlplane.models import Acl

        if not delta.changed_acls:
            return
        upserts = [Acl(**r.to_data()) for r in delta.changed_acls.values() if r is not None]
        removed = [acl_id for acl_id, r in delta.changed_acls.items() if r is None]
        if upserts:
            Acl.objects.bulk_create(
                upserts, update_conflicts=True, unique_fields=["id"], update_fields=ACL_FIELDS
            )
        if removed:
            Acl.objects.filter(id__in=removed).delete()

    def load(self, image: MetadataImage) -> None:
        from controlplane.models import Acl

        for row in Acl.objects.values("id", *ACL_FIELDS).iterator(chunk_size=2000):
            image.acls[row["id"]] = AccessControlEntryRecord(**row)


register_projection(AclProjection())
