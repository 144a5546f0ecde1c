from __future__ import annotations

from typing import Any

from django.db.models import Count, Q, QuerySet

from brokers.models import Broker
from controlplane.controller.features import KRAFT_VERSION, SUPPORTED_FEATURES
from controlplane.controller.metadata_versions import METADATA_VERSIONS
from controlplane.models import FinalizedFeature, KRaftQuorum, MetadataRecord
from controlplane.runtime.lease import cluster_read
from controlplane.runtime.sessions import session_store
from controlplane.selectors import controller_active


def broker_list() -> QuerySet[Broker]:
    return Broker.objects.all().order_by("broker_id")


def broker_get(*, broker_id: int) -> Broker | None:
    return broker_list().filter(broker_id=broker_id).first()


def broker_search(*, contains: str, limit: int) -> list[Broker]:
    """Brokers whose id is `contains`, or whose rack, pod or a listener's host contains it."""
    query = Q(rack__icontains=contains) | Q(pod__icontains=contains)
    query |= Q(listeners__icontains=contains)
    if contains.isdigit():
        query |= Q(broker_id=int(contains))
    return list(broker_list().filter(query)[:limit])


def broker_exists(*, broker_id: int) -> bool:
    return Broker.objects.filter(broker_id=broker_id).exists()


def broker_id_list() -> list[int]:
    """The ids of the registered brokers, in order."""
    return list(broker_list().values_list("broker_id", flat=True))


def broker_live_ids() -> list[int]:
    """The unfenced brokers' ids: a replica on any other broker (fenced, or gone) is offline,
    as the controller's health index counts it (controlplane.controller.health)."""
    return list(
        Broker.objects.filter(fenced=False)
        .order_by("broker_id")
        .values_list("broker_id", flat=True)
    )


def brokers_alive() -> list[dict[str, Any]]:
    """The unfenced brokers as DescribeCluster lists them: id, first listener, rack and pod
    (KIP-1095), by id."""
    rows = Broker.objects.filter(fenced=False).order_by("broker_id")
    return [
        {
            "broker_id": b.broker_id,
            "host": b.listeners[0]["host"] if b.listeners else "",
            "port": b.listeners[0]["port"] if b.listeners else -1,
            "rack": b.rack,
            "pod": b.pod,
        }
        for b in rows.only("broker_id", "listeners", "rack", "pod")
    ]


def broker_sessions() -> dict[int, dict[str, int]]:
    """Last contact and metadata offset per broker, from the heartbeat tracker."""
    return {
        broker_id: {"last_contact_ms": s.last_contact_ms, "metadata_offset": s.metadata_offset}
        for broker_id, s in session_store().snapshot().items()
    }


def broker_records(*, broker_id: int, limit: int = 100) -> list[MetadataRecord]:
    return list(MetadataRecord.objects.filter(broker_id=broker_id).order_by("-offset")[:limit])


def broker_as_dict(broker: Broker, sessions: dict[int, dict[str, int]]) -> dict[str, Any]:
    session = sessions.get(broker.broker_id, {})
    return {
        "broker_id": broker.broker_id,
        "incarnation_id": broker.incarnation_id,
        "broker_epoch": broker.epoch,
        "state": broker.state,
        "fenced": broker.fenced,
        "in_controlled_shutdown": broker.in_controlled_shutdown,
        "pod": broker.pod,
        "rack": broker.rack,
        "software_version": broker.software_version,
        "listeners": broker.listeners,
        "log_dirs": broker.log_dirs,
        "offline_log_dirs": broker.offline_log_dirs,
        "last_contact_ms": session.get("last_contact_ms"),
        "metadata_offset": session.get("metadata_offset"),
    }


def cluster_summary() -> dict[str, Any]:
    cluster = cluster_read()
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


def registered_epoch(*, broker_id: int) -> int | None:
    """The broker's current epoch (its registration's offset), None when it is not registered."""
    epoch = Broker.objects.filter(pk=broker_id).values_list("epoch", flat=True).first()
    return None if epoch is None else int(epoch)


def registered_epochs() -> dict[int, int]:
    """Each registered broker's epoch (the offset of its registration)."""
    return dict(Broker.objects.values_list("broker_id", "epoch"))


def features_describe() -> dict[str, Any]:
    """The cluster's features, as an operator plans an upgrade from them: what the controller
    supports, the finalized levels (kraft.version among them once the quorum keeps voters, as
    Kafka's brokers list it) with the epoch they were read at (the committed log's end, as a
    Kafka broker answers its image's offset), the quorum's voters, and each registered broker's
    supported range of every feature it listed. Three queries, whatever the cluster's size."""
    finalized = dict(FinalizedFeature.objects.values_list("name", "level"))
    quorum = KRaftQuorum.objects.filter(pk=1).first()
    if quorum is not None and quorum.kraft_version:
        finalized[KRAFT_VERSION] = quorum.kraft_version
    level = finalized.get("metadata.version")
    brokers = [
        {
            "broker_id": broker_id,
            "supported_features": {
                name: {"min_version": low, "max_version": high} for name, low, high in features
            },
        }
        for broker_id, features in Broker.objects.order_by("broker_id").values_list(
            "broker_id", "supported_features"
        )
    ]
    return {
        "finalized_features_epoch": cluster_read().last_offset,
        "finalized_features": dict(sorted(finalized.items())),
        "metadata_version": None
        if level is None or level not in METADATA_VERSIONS
        else {"level": level, "name": METADATA_VERSIONS[level].name},
        "supported_features": {
            name: {"min_version": low, "max_version": high}
            for name, (low, high) in sorted(SUPPORTED_FEATURES.items())
        },
        "voters": [] if quorum is None else quorum.voters,
        "brokers": brokers,
    }
