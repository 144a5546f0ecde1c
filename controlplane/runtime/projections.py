"""State tables as projections of the metadata log.

Each projection builds the statements writing what a delta changed (bulk SQL, a fixed number of
statements whatever the size of the delta) before the commit takes the cluster lock, and loads
its part of the image back. Apps register theirs from `ready()` (`register_projection`).
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING, Protocol

from django.db import connection, transaction
from django.db.models import Q

from controlplane.controller.acls.control import ACL_FIELDS
from controlplane.controller.image import MetadataDelta, MetadataImage
from controlplane.controller.quorum_records import Voter, VotersRecord
from controlplane.controller.records import AccessControlEntryRecord
from controlplane.runtime.conversation import AppliedWrite
from controlplane.runtime.plugins import is_same_plugin

if TYPE_CHECKING:
    from controlplane.models import Acl

Write = Callable[[], None]
# The commit's writes: which request each record came from.
AppliedWrites = Sequence[AppliedWrite]


class Projection(Protocol):
    name: str
    tables: tuple[str, ...]  # the state tables it writes (only in the commit: single_writer)

    def prepare(
        self, delta: MetadataDelta, applied: AppliedWrites, timestamp_ms: int
    ) -> list[Write]:
        """The statements writing what `delta` changed, run in the commit's transaction;
        `applied` are the commit's writes and `timestamp_ms` its time."""
        ...

    def load(self, image: MetadataImage) -> None: ...


PROJECTIONS: dict[str, Projection] = {}


def register_projection(projection: Projection) -> None:
    """Project the log into `projection`'s tables from the next commit on (once per name)."""
    present = PROJECTIONS.setdefault(projection.name, projection)
    if not is_same_plugin(projection, present):
        raise ValueError(f"two projections are named {projection.name!r}")


def prepare_delta(
    delta: MetadataDelta, applied: AppliedWrites = (), timestamp_ms: int = 0
) -> Iterator[Write]:
    """Every projection's statements for `delta`, one projection's at a time: the commit runs
    the first ones while the next are built (controlplane.runtime.write_behind)."""
    for projection in PROJECTIONS.values():
        yield from projection.prepare(delta, applied, timestamp_ms)


def load_image(cluster_id: str, last_offset: int) -> MetadataImage:
    image = MetadataImage(cluster_id=cluster_id, last_offset=last_offset)
    for projection in PROJECTIONS.values():
        projection.load(image)
    return image


@contextlib.contextmanager
def consistent_read() -> Iterator[None]:
    """Every read inside sees the database at one moment: a REPEATABLE READ, read-only
    transaction on PostgreSQL (SQLite's one transaction is a snapshot already). Inside a
    caller's transaction, that transaction is the snapshot."""
    outermost = not connection.in_atomic_block
    with transaction.atomic():
        if outermost and connection.vendor == "postgresql":
            with connection.cursor() as cursor:
                cursor.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
        yield


class AclProjection:
    name = "acls"
    tables: tuple[str, ...] = ("cp_acl",)

    def prepare(
        self, delta: MetadataDelta, applied: AppliedWrites, timestamp_ms: int
    ) -> list[Write]:
        from controlplane.models import Acl

        if not delta.changed_acls:
            return []
        upserts = [Acl(**r.to_data()) for r in delta.changed_acls.values() if r is not None]
        removed = [acl_id for acl_id, r in delta.changed_acls.items() if r is None]
        return [functools.partial(_write_acls, upserts, removed)]

    def load(self, image: MetadataImage) -> None:
        from controlplane.models import Acl

        for row in Acl.objects.values(*ACL_FIELDS).iterator(chunk_size=2000):
            image.acls[row["id"]] = AccessControlEntryRecord(**row)


def _write_acls(upserts: list[Acl], removed: list[str]) -> None:
    from controlplane.models import Acl

    if upserts:
        Acl.objects.bulk_create(
            upserts,
            update_conflicts=True,
            unique_fields=["id"],
            update_fields=list(ACL_FIELDS[1:]),
        )
    if removed:
        Acl.objects.filter(id__in=removed).delete()


class ConfigProjection:
    name = "configs"
    tables: tuple[str, ...] = ("cp_config",)

    def prepare(
        self, delta: MetadataDelta, applied: AppliedWrites, timestamp_ms: int
    ) -> list[Write]:
        from controlplane.runtime.bulk import Column, prepared_upsert

        if not delta.changed_configs:
            return []
        upserts = [
            (*key, value) for key, value in delta.changed_configs.items() if value is not None
        ]
        removed = [key for key, value in delta.changed_configs.items() if value is None]
        upsert = prepared_upsert(
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
        return [upsert, functools.partial(_delete_configs, removed)]

    def load(self, image: MetadataImage) -> None:
        from controlplane.models import ConfigEntry

        rows = ConfigEntry.objects.values_list("resource_type", "resource_name", "name", "value")
        for resource_type, resource_name, name, value in rows.iterator(chunk_size=2000):
            image.put_config((resource_type, resource_name, name), value)


REMOVED_CONFIGS_PER_STATEMENT = 300


def _delete_configs(removed: list[tuple[str, str, str]]) -> None:
    from controlplane.models import ConfigEntry

    # A few hundred keys per statement: SQLite refuses an expression tree over 1,000 deep.
    for start in range(0, len(removed), REMOVED_CONFIGS_PER_STATEMENT):
        query = Q()
        for resource_type, resource_name, name in removed[
            start : start + REMOVED_CONFIGS_PER_STATEMENT
        ]:
            query |= Q(resource_type=resource_type, resource_name=resource_name, name=name)
        ConfigEntry.objects.filter(query).delete()


class FeaturesProjection:
    """cp_finalized_feature (FeatureLevelRecord), cp_producer_id_block (ProducerIdsRecord) and
    cp_kraft_quorum (KRaftVersionRecord, VotersRecord): a few rows, written when they change."""

    name = "features"
    tables: tuple[str, ...] = ("cp_finalized_feature", "cp_producer_id_block", "cp_kraft_quorum")

    def prepare(
        self, delta: MetadataDelta, applied: AppliedWrites, timestamp_ms: int
    ) -> list[Write]:
        quorum = delta.features_delta
        writes: list[Write] = []
        if quorum.kraft_version is not None or quorum.voters is not None:
            writes.append(functools.partial(_write_quorum, delta.kraft_version, list(delta.voters)))
        if not delta.changed_features and delta.changed_producer_ids is None:
            return writes
        return [
            *writes,
            functools.partial(
                _write_features, dict(delta.changed_features), delta.changed_producer_ids
            ),
        ]

    def load(self, image: MetadataImage) -> None:
        from controlplane.models import FinalizedFeature, KRaftQuorum, ProducerIdBlock

        features = image.features_image
        for name, level in FinalizedFeature.objects.values_list("name", "level"):
            features.finalized_features[name] = level
        block = ProducerIdBlock.objects.filter(pk=1).first()
        if block is not None:
            features.producer_ids_owner = (block.broker_id, block.broker_epoch)
            features.next_producer_id = block.next_producer_id
        quorum = KRaftQuorum.objects.filter(pk=1).first()
        if quorum is not None:
            features.kraft_version = quorum.kraft_version
            features.voters = VotersRecord.from_data({"voters": quorum.voters}).voters


def _write_quorum(kraft_version: int, voters: list[Voter]) -> None:
    from controlplane.models import KRaftQuorum

    KRaftQuorum.objects.update_or_create(
        pk=1,
        defaults={
            "kraft_version": kraft_version,
            "voters": [dataclasses.asdict(voter) for voter in voters],
        },
    )


def _write_features(
    changed: dict[str, int | None], producer_ids: tuple[int, int, int] | None
) -> None:
    from controlplane.models import FinalizedFeature, ProducerIdBlock

    for name, level in changed.items():
        if level is None:
            FinalizedFeature.objects.filter(name=name).delete()
        else:
            FinalizedFeature.objects.update_or_create(name=name, defaults={"level": level})
    if producer_ids is not None:
        broker_id, broker_epoch, next_producer_id = producer_ids
        ProducerIdBlock.objects.update_or_create(
            pk=1,
            defaults={
                "broker_id": broker_id,
                "broker_epoch": broker_epoch,
                "next_producer_id": next_producer_id,
            },
        )
