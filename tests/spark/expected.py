"""Every audit report computed again in plain Python, from the source rows as the ORM read them
(never from Spark or the export): what the Spark reports are compared with.

Written apart from audit/spark/reports.py on purpose: loops and dicts over the records in
offset order, the controller's own image (controlplane.controller.image) for state-at.
"""

from __future__ import annotations

import collections
import datetime
from typing import Any

from controlplane.controller.api_keys import ADMIN_APIS
from controlplane.controller.config_schema import redact_record_data
from controlplane.controller.image import MetadataDelta, MetadataImage
from controlplane.controller.records import record_from_data

Row = dict[str, Any]
AUTHORIZATION_FAILED = {29, 30, 31, 53, 65}  # TOPIC, GROUP, CLUSTER, TRANSACTIONAL_ID, TOKEN
FORWARDABLE = {name for name, api in ADMIN_APIS.items() if api.forwardable}


class Window:
    """A report's period: [start, end] inclusive, either open; `until` closes open periods."""

    def __init__(self, start: int | None, end: int | None, until: int) -> None:
        self.start, self.end, self.until = start, end, until

    def holds(self, ms: int) -> bool:
        return (self.start is None or ms >= self.start) and (self.end is None or ms <= self.end)


def utc(ms: int) -> datetime.datetime:
    return datetime.datetime(1970, 1, 1, tzinfo=datetime.UTC) + datetime.timedelta(milliseconds=ms)


def iso(ms: int) -> str:
    return utc(ms).strftime("%Y-%m-%dT%H:%M:%S.") + f"{ms % 1000:03d}Z"


def admin_activity(events: list[Row], window: Window) -> list[tuple[Any, ...]]:
    counted = collections.Counter(
        (utc(e["time_ms"]).date().isoformat(), e["principal"], e["api"], e["outcome"])
        for e in events
        if window.holds(e["time_ms"]) and e["api"] != "AlterReplicaState"
    )
    return sorted((*key, n) for key, n in counted.items())


def denied_requests(events: list[Row], window: Window) -> list[tuple[Any, ...]]:
    rows = []
    for e in sorted(events, key=lambda e: (-e["time_ms"], -e["id"])):
        if not window.holds(e["time_ms"]):
            continue
        head = (iso(e["time_ms"]), e["principal"], e["api"])
        tail = (e["client_id"], e["client_host"])
        refused = [r for r in e["resources"] if r["error_code"] in AUTHORIZATION_FAILED]
        for r in refused:
            rows.append(
                (*head, f"{r['resource_type']}:{r['resource_name']}", r["error_code"], *tail)
            )
        if not refused and e["outcome"] == "DENIED":
            rows.append((*head, "", e["error_code"], *tail))
    return rows


def forwarding(events: list[Row], window: Window) -> list[tuple[Any, ...]]:
    writes = [e for e in events if window.holds(e["time_ms"]) and e["api"] in FORWARDABLE]
    counted = collections.Counter(
        (e["forwarding_broker_id"], e["forwarding_principal"], e["api"]) for e in writes
    )
    rows = [(*key, n, n / len(writes)) for key, n in counted.items()]
    return sorted(rows, key=lambda r: (r[0] is not None, r[0] or 0, r[1], r[2]))


def _partition_change(record: Row) -> tuple[tuple[str, int], int] | None:
    """(topic id, partition) and the leader a record set, if it set one."""
    data = record["data"]
    if record["record_type"] == "PartitionRecord" or (
        record["record_type"] == "PartitionChangeRecord" and data["leader"] != -2
    ):
        return (data["topic_id"], data["partition_id"]), data["leader"]
    return None


def _leaderless_until(records: list[Row], tp: tuple[str, int], after: int, until: int) -> int:
    """When a partition leaderless at offset `after` next had a leader (or its topic went)."""
    for record in records:
        if record["offset"] <= after:
            continue
        if record["timestamp_ms"] > until:
            break
        change = _partition_change(record)
        if change is not None and change[0] == tp and change[1] >= 0:
            return int(record["timestamp_ms"])
        if record["record_type"] == "RemoveTopicRecord" and record["data"]["topic_id"] == tp[0]:
            return int(record["timestamp_ms"])
    return until


def _named(event: Row, resource_type: str) -> list[Row]:
    return [r for r in event["resources"] if r["resource_type"] == resource_type]


def replica_health(records: list[Row], events: list[Row], window: Window) -> list[Row]:
    by_offset = {r["offset"]: r for r in records}
    groups: dict[tuple[int, str], Row] = {}
    for e in events:
        if e["api"] != "AlterReplicaState" or not window.holds(e["time_ms"]):
            continue
        broker = int(_named(e, "BROKER")[0]["resource_name"])
        log_dirs = _named(e, "LOG_DIR")
        log_dir = log_dirs[0]["resource_name"] if log_dirs else "(not named)"
        moved: set[tuple[str, int]] = set()
        leaderless: dict[tuple[str, int], Row] = {}
        if e["first_offset"] is not None:
            for offset in range(e["first_offset"], e["last_offset"] + 1):
                record = by_offset[offset]
                change = _partition_change(record)
                if change is None or record["record_type"] != "PartitionChangeRecord":
                    continue
                if change[1] >= 0:
                    moved.add(change[0])
                elif change[1] == -1:
                    leaderless[change[0]] = record
        group = groups.setdefault(
            (broker, log_dir),
            {"reports": 0, "offline": 0, "moved": 0, "leaderless": 0, "seconds": 0.0, "took": []},
        )
        group["reports"] += 1
        group["offline"] += sum(1 for r in _named(e, "PARTITION") if r["error_code"] == 0)
        group["moved"] += len(moved)
        group["leaderless"] += len(leaderless)
        for tp, record in leaderless.items():
            end = _leaderless_until(records, tp, record["offset"], window.until)
            group["seconds"] += max(end - record["timestamp_ms"], 0) / 1000
        if moved:
            group["took"].append(e["duration_ms"] / 1000)
    return [
        {
            "broker_id": broker,
            "log_dir": log_dir,
            "reports": g["reports"],
            "offline_replicas": g["offline"],
            "leaders_moved": g["moved"],
            "partitions_left_leaderless": g["leaderless"],
            "seconds_to_new_leader_avg": sum(g["took"]) / len(g["took"]) if g["took"] else None,
            "seconds_to_new_leader_max": max(g["took"]) if g["took"] else None,
            "leaderless_partition_seconds": g["seconds"],
        }
        for (broker, log_dir), g in sorted(groups.items())
    ]


def _registrations(records: list[Row]) -> list[Row]:
    return [r for r in records if r["record_type"] == "RegisterBrokerRecord"]


def latest_pods(records: list[Row], until: int) -> dict[int, str]:
    pods: dict[int, str] = {}
    for r in _registrations(records):  # in offset order: the latest wins
        if r["timestamp_ms"] <= until:
            pods[r["data"]["broker_id"]] = r["data"]["pod"]
    return pods


def broker_lifecycle(records: list[Row], window: Window) -> list[Row]:
    counts: dict[int, collections.Counter[str]] = collections.defaultdict(collections.Counter)
    for r in records:
        if not window.holds(r["timestamp_ms"]):
            continue
        data, kind = r["data"], r["record_type"]
        if kind == "RegisterBrokerRecord":
            counts[data["broker_id"]]["registrations"] += 1
        elif kind == "UnregisterBrokerRecord":
            counts[data["broker_id"]]["unregistrations"] += 1
        elif kind == "BrokerRegistrationChangeRecord":
            seen = counts[data["broker_id"]]
            seen["changes"] += 1
            if data["fenced"] == 1:
                seen["fencings"] += 1
                seen["session_expiries"] += r["principal"] == "User:controller"
            seen["controlled_shutdowns"] += data["in_controlled_shutdown"] == 1
    pods = latest_pods(records, window.until)
    names = [
        "registrations",
        "fencings",
        "session_expiries",
        "controlled_shutdowns",
        "unregistrations",
    ]
    return [
        {"broker_id": broker, "pod": pods.get(broker), **{n: counts[broker][n] for n in names}}
        for broker in sorted(counts)
    ]


def canary(records: list[Row], events: list[Row], window: Window) -> list[Row]:
    registrations = _registrations(records)

    def pod(broker: int, *, before_offset: int | None = None, at_ms: int | None = None) -> str:
        found = "(unregistered)"
        for r in registrations:
            if r["data"]["broker_id"] != broker:
                continue
            if (before_offset is not None and r["offset"] < before_offset) or (
                at_ms is not None and r["timestamp_ms"] <= at_ms
            ):
                found = r["data"]["pod"]
        return found

    counts: dict[str, collections.Counter[str]] = collections.defaultdict(collections.Counter)
    leaders: dict[tuple[str, int], int] = {}
    for r in records:
        change = _partition_change(r)
        if change is not None:
            previous = leaders.get(change[0])
            leaders[change[0]] = change[1]
            if (
                change[1] == -1
                and previous is not None
                and previous >= 0
                and window.holds(r["timestamp_ms"])
                and r["timestamp_ms"] <= window.until
            ):
                counts[pod(previous, before_offset=r["offset"])]["leaderless_partitions"] += 1
        if not window.holds(r["timestamp_ms"]):
            continue
        if r["record_type"] == "BrokerRegistrationChangeRecord" and r["data"]["fenced"] == 1:
            seen = counts[pod(r["data"]["broker_id"], before_offset=r["offset"])]
            seen["fencings"] += 1
            seen["session_expiries"] += r["principal"] == "User:controller"
    for e in events:
        if e["api"] == "AlterReplicaState" and window.holds(e["time_ms"]):
            broker = int(_named(e, "BROKER")[0]["resource_name"])
            offline = sum(1 for r in _named(e, "PARTITION") if r["error_code"] == 0)
            counts[pod(broker, at_ms=e["time_ms"])]["offline_replicas"] += offline
    brokers = collections.Counter(latest_pods(records, window.until).values())
    rows = []
    for name in sorted(set(brokers) | set(counts)):
        seen = counts[name]
        incidents = seen["fencings"] + seen["offline_replicas"] + seen["leaderless_partitions"]
        rows.append(
            {
                "pod": name,
                "brokers": brokers[name],
                "fencings": seen["fencings"],
                "session_expiries": seen["session_expiries"],
                "offline_replicas": seen["offline_replicas"],
                "leaderless_partitions": seen["leaderless_partitions"],
                "incidents_per_broker": incidents / brokers[name] if brokers[name] else None,
            }
        )
    return rows


# --- state-at: the controller's own image, replayed up to a moment -------------------------


State = tuple[
    dict[tuple[str, str], dict[str, str]],  # configs by resource
    set[tuple[str, ...]],  # ACL bindings
    dict[str, dict[str, float]],  # quotas by entity
]


def image_state(records: list[Row], at_ms: int) -> State:
    """Configs (sensitive values redacted), ACLs and quotas of the image the controller builds
    from the records up to `at_ms`."""
    image = MetadataImage(cluster_id="replayed")
    delta = MetadataDelta(image)
    for r in records:
        if r["timestamp_ms"] <= at_ms:
            delta.replay(record_from_data(r["record_type"], r["data"]))
    image.apply(delta)
    configs = {
        resource: {
            name: redact_record_data(
                "ConfigRecord",
                {"resource_type": resource[0], "name": name, "value": value},
            )["value"]
            for name, value in values.items()
        }
        for resource, values in image.configs.items()
    }
    acls = {
        (a.resource_type, a.resource_name, a.pattern_type, a.principal, a.host, a.operation,
         a.permission_type)
        for a in image.acls.values()
    }  # fmt: skip
    quotas = {
        ",".join(f"{t}={'<default>' if n is None else n}" for t, n in entity): dict(values)
        for entity, values in image.client_quotas.items()
    }
    return configs, acls, quotas


def described_configs(configs: dict[tuple[str, str], dict[str, str]]) -> dict[Any, Any]:
    """Configs as describe-configs shows a resource's dynamic ones: a broker's own over the
    cluster-wide defaults (resource BROKER "")."""
    defaults = configs.get(("BROKER", ""), {})
    shown = dict(configs)
    for (kind, name), values in configs.items():
        if kind == "BROKER" and name:
            shown[(kind, name)] = {**defaults, **values}
    return shown
