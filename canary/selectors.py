"""Reads of canary isolation (KIP-1095): the cluster's canary brokers and partitions, the count
the metric reports, and the rollout guard's verdict, computed from the metadata log by the pure
core (`controlplane.controller.canary.rollout`)."""

from __future__ import annotations

from collections import Counter
from typing import Any

from django.db.models import Max

from brokers.models import Broker
from controlplane.controller.canary import rollout
from controlplane.controller.canary.rules import (
    CANARY_BROKER_POD,
    PERCENT_CANARY_PARTITION,
    canary_stride,
)
from controlplane.models import AppliedRequest, MetadataRecord
from controlplane.runtime.lease import cluster_read, now_ms
from controlplane.selectors import config_view
from replicas.models import Partition
from replicas.selectors import cluster_health

BAKE_TIME = "canary.bake.time.ms"


def canary_brokers() -> list[dict[str, Any]]:
    """Every broker with its pod, state and version, canary brokers first (one query)."""
    rows = Broker.objects.order_by("broker_id").values(
        "broker_id", "pod", "rack", "fenced", "in_controlled_shutdown", "software_version"
    )
    brokers = [
        {
            **row,
            "state": "FENCED"
            if row["fenced"]
            else "CONTROLLED_SHUTDOWN"
            if row["in_controlled_shutdown"]
            else "UNFENCED",
        }
        for row in rows
    ]
    return sorted(brokers, key=lambda b: (b["pod"] != CANARY_BROKER_POD, b["broker_id"]))


def canary_topics(*, topic: str | None = None) -> list[dict[str, Any]]:
    """Per topic with canary partitions: their indexes, and those not isolated with their
    replicas (one query over the canary partitions alone)."""
    partitions = Partition.objects.filter(is_canary=True)
    if topic is not None:
        partitions = partitions.filter(topic__name=topic)
    rows = partitions.order_by("topic__name", "partition_index").values_list(
        "topic__name", "topic__partition_count", "partition_index", "canary_isolated", "replicas"
    )
    topics: dict[str, dict[str, Any]] = {}
    for name, count, index, isolated, replicas in rows:
        entry = topics.setdefault(
            name,
            {
                "name": name,
                "partition_count": count,
                "canary_partitions": [],
                "not_isolated": [],
                "not_isolated_count": 0,
            },
        )
        entry["canary_partitions"].append(index)
        if not isolated:
            entry["not_isolated"].append({"partition_index": index, "replica_nodes": replicas})
            entry["not_isolated_count"] += 1
    return list(topics.values())


def canary_summary(*, topic: str | None = None) -> dict[str, Any]:
    """What GET /api/v1/canary answers (five queries, whatever the cluster's size)."""
    configs = config_view()
    percent = float(configs.broker_value(PERCENT_CANARY_PARTITION))
    brokers = canary_brokers()
    canary = [b for b in brokers if b["pod"] == CANARY_BROKER_POD]
    largest_rf = Partition.objects.aggregate(rf=Max("replica_count"))["rf"] or 0
    topics = canary_topics(topic=topic)
    return {
        "percent_canary_partition": percent,
        "canary_stride": canary_stride(percent),
        "canary_brokers": {
            "unfenced": [b["broker_id"] for b in canary if not b["fenced"]],
            "fenced": [b["broker_id"] for b in canary if b["fenced"]],
        },
        "brokers": brokers,
        "max_replication_factor": largest_rf,
        # The fewest canary brokers that can isolate every topic's canary partitions.
        "min_canary_brokers_for_isolation": largest_rf,
        "enough_canary_brokers": sum(1 for b in canary if not b["fenced"]) >= largest_rf,
        "canary_partitions": sum(len(t["canary_partitions"]) for t in topics),
        "canary_partitions_not_isolated": sum(t["not_isolated_count"] for t in topics),
        "topics": topics,
    }


def canary_partitions_not_isolated() -> int:
    """Canary partitions with a replica off the canary brokers (the metric), as the
    controller's health index last counted them: one row, never a scan of the partitions."""
    return int(cluster_health()["canary_partitions_not_isolated"])


# --- the rollout guard ------------------------------------------------------------------------


def _brokers_now() -> list[rollout.BrokerNow]:
    return [
        rollout.BrokerNow(broker_id, pod, version, fenced)
        for broker_id, pod, version, fenced in Broker.objects.values_list(
            "broker_id", "pod", "software_version", "fenced"
        )
    ]


def _registrations(broker_ids: set[int]) -> list[rollout.Registration]:
    rows = MetadataRecord.objects.filter(
        record_type="RegisterBrokerRecord", broker_id__in=broker_ids
    ).values_list("offset", "timestamp_ms", "data")
    found = [
        rollout.Registration(
            offset=offset,
            timestamp_ms=timestamp,
            broker_id=int(data["broker_id"]),
            pod=str(data.get("pod") or "broker"),
            software_version=data.get("software_version"),
        )
        for offset, timestamp, data in rows
    ]
    return found + _registrations_cut(broker_ids)


def _registrations_cut(broker_ids: set[int]) -> list[rollout.Registration]:
    """The current registrations that retention cut from the log (a broker's epoch is its
    registration's offset), each dated as the log's first kept record: it is at least that old,
    so a bake never counts longer than it has run."""
    start = cluster_read().log_start_offset
    if start <= 0:
        return []
    cut = Broker.objects.filter(broker_id__in=broker_ids, epoch__lt=start).values_list(
        "epoch", "broker_id", "pod", "software_version"
    )
    if not cut:
        return []
    oldest_kept = (
        MetadataRecord.objects.filter(offset__gte=start)
        .order_by("offset")
        .values_list("timestamp_ms", flat=True)
        .first()
    )
    dated = now_ms() if oldest_kept is None else int(oldest_kept)
    return [
        rollout.Registration(
            offset=epoch,
            timestamp_ms=dated,
            broker_id=broker_id,
            pod=pod,
            software_version=version,
        )
        for epoch, broker_id, pod, version in cut
    ]


def _window(start: rollout.Registration) -> rollout.Window:
    """Fencings, offline replica reports and partitions that lost their leader since `start`
    (three queries, and one more for the leaderless partitions' replicas)."""
    records = MetadataRecord.objects.filter(offset__gt=start.offset)
    fencings = [
        rollout.Fencing(offset, int(data["broker_id"]), principal == rollout.CONTROLLER_PRINCIPAL)
        for offset, principal, data in records.filter(
            record_type="BrokerRegistrationChangeRecord", data__fenced=1
        ).values_list("offset", "principal", "data")
    ]
    reports: Counter[int] = Counter()
    for response in AppliedRequest.objects.filter(
        api="AlterReplicaState", first_offset__gt=start.offset
    ).values_list("response", flat=True):
        if isinstance(response, dict) and response.get("broker_id") is not None:
            reports[int(response["broker_id"])] += int(response.get("offline_replicas") or 0)
    lost = [
        (str(data["topic_id"]), int(data["partition_id"]))
        for data in records.filter(
            record_type="PartitionChangeRecord", data__leader=-1
        ).values_list("data", flat=True)
    ]
    replicas = {
        (topic_id, index): tuple(r)
        for topic_id, index, r in Partition.objects.filter(
            topic_id__in={t for t, _ in lost}
        ).values_list("topic_id", "partition_index", "replicas")
    }
    return rollout.Window(
        fencings=fencings,
        offline_reports=dict(reports),
        leaderless=[replicas[tp] for tp in lost if tp in replicas],
    )


def _fleet_version(version: str, brokers: list[rollout.BrokerNow]) -> dict[str, Any] | None:
    """COMPLETE when `version` is the fleet's current version, not a rollout: every broker that
    reports a version reports it, or every non-canary broker does while the canary brokers run
    another (the version a canary is moving away from). The guard alone answered HOLD ("deploy
    it to the canary brokers first") for the version the whole fleet already runs. Brokers that
    report no version cannot be judged either way, so they are left out and named."""
    known = [b for b in brokers if b.software_version is not None]
    fleet = [b for b in known if b.pod != CANARY_BROKER_POD]
    running = sorted(b.broker_id for b in known if b.software_version == version)
    if not running or not fleet or any(b.software_version != version for b in fleet):
        return None
    others = sorted({str(b.software_version) for b in known if b.software_version != version})
    if not others and len(known) == len(brokers):
        return None  # every broker runs it: the guard's own COMPLETE says so
    unknown = sorted(b.broker_id for b in brokers if b.software_version is None)
    if others:
        canary = sorted(b.broker_id for b in known if b.software_version != version)
        why = (
            f"Version {version} is the fleet's current version: every non-canary broker "
            f"({len(fleet)}) runs it, so it is not a rollout. Canary broker(s) "
            f"{', '.join(map(str, canary))} run {', '.join(others)}: that is the rollout to "
            "check."
        )
    else:
        why = (
            f"Every broker that reports a version ({len(known)}) reports version {version}: "
            "the rollout is complete."
        )
    if unknown:
        why += f" Broker(s) {', '.join(map(str, unknown))} report no version."
    return {
        "verdict": rollout.COMPLETE,
        "version": version,
        "explanation": why,
        "brokers_running_version": running,
        "evidence": {},
    }


def canary_rollout(*, version: str) -> dict[str, Any]:
    """GET /api/v1/canary/rollout: the verdict on rolling `version` out, with its evidence."""
    brokers = _brokers_now()
    fleet_version = _fleet_version(version, brokers)
    if fleet_version is not None:
        return fleet_version
    running = {b.broker_id for b in brokers if b.software_version == version}
    bake = rollout.bake_of(version, brokers, _registrations(running))
    window = rollout.Window() if bake.start is None else _window(bake.start)
    bake_time_ms = int(config_view().broker_value(BAKE_TIME))
    return rollout.rollout_verdict(
        bake=bake, brokers=brokers, window=window, now_ms=now_ms(), bake_time_ms=bake_time_ms
    )
