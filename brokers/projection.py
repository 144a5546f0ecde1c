"""The brokers table as a projection of broker registration records."""

from __future__ import annotations

import dataclasses
import functools

from brokers.models import Broker
from controlplane.controller.image import BrokerRegistration, MetadataDelta, MetadataImage
from controlplane.controller.records import Listener
from controlplane.runtime.projections import AppliedWrites, Write

UPDATE_FIELDS = [
    "incarnation_id",
    "epoch",
    "rack",
    "pod",
    "listeners",
    "log_dirs",
    "fenced",
    "in_controlled_shutdown",
    "controlled_shutdown_offset",
    "software_version",
    "offline_log_dirs",
    "supported_features",
    "cordoned_log_dirs",
]


def broker_row(registration: BrokerRegistration) -> Broker:
    return Broker(
        broker_id=registration.broker_id,
        incarnation_id=registration.incarnation_id,
        epoch=registration.epoch,
        rack=registration.rack,
        pod=registration.pod,
        listeners=[dataclasses.asdict(listener) for listener in registration.listeners],
        log_dirs=list(registration.log_dirs),
        fenced=registration.fenced,
        in_controlled_shutdown=registration.in_controlled_shutdown,
        controlled_shutdown_offset=registration.controlled_shutdown_offset,
        software_version=registration.software_version,
        offline_log_dirs=list(registration.offline_log_dirs),
        supported_features=[list(feature) for feature in registration.features],
        cordoned_log_dirs=None
        if registration.cordoned_log_dirs is None
        else list(registration.cordoned_log_dirs),
    )


def registration_from_row(row: Broker) -> BrokerRegistration:
    return BrokerRegistration(
        broker_id=row.broker_id,
        incarnation_id=row.incarnation_id,
        epoch=row.epoch,
        listeners=tuple(Listener(**item) for item in row.listeners),
        rack=row.rack,
        pod=row.pod,
        log_dirs=tuple(row.log_dirs),
        fenced=row.fenced,
        in_controlled_shutdown=row.in_controlled_shutdown,
        controlled_shutdown_offset=row.controlled_shutdown_offset,
        software_version=row.software_version,
        offline_log_dirs=tuple(row.offline_log_dirs),
        features=tuple((str(n), int(lo), int(hi)) for n, lo, hi in row.supported_features),
        cordoned_log_dirs=None if row.cordoned_log_dirs is None else tuple(row.cordoned_log_dirs),
    )


class BrokerProjection:
    name = "brokers"
    tables: tuple[str, ...] = ("cp_broker",)

    def prepare(
        self, delta: MetadataDelta, applied: AppliedWrites, timestamp_ms: int
    ) -> list[Write]:
        if not delta.changed_brokers:
            return []
        upserts = [broker_row(b) for b in delta.changed_brokers.values() if b is not None]
        removed = [broker_id for broker_id, b in delta.changed_brokers.items() if b is None]
        return [functools.partial(_write_brokers, upserts, removed)]

    def load(self, image: MetadataImage) -> None:
        for row in Broker.objects.all().iterator(chunk_size=2000):
            image.brokers[row.broker_id] = registration_from_row(row)


def _write_brokers(upserts: list[Broker], removed: list[int]) -> None:
    if upserts:
        Broker.objects.bulk_create(
            upserts,
            update_conflicts=True,
            unique_fields=["broker_id"],
            update_fields=UPDATE_FIELDS,
        )
    if removed:
        Broker.objects.filter(broker_id__in=removed).delete()
