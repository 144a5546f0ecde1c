"""The canary reads' answers, for the OpenAPI schema (docs/reference/rest-api.md, canary)."""

from __future__ import annotations

from controlplane.api.responses import BOOL, INT, NSTR, NUM, STR, arr, nullable, obj

CANARY_BROKER = obj(
    "broker_id", "pod", "fenced", broker_id=INT, pod=STR, software_version=NSTR, fenced=BOOL
)
CANARY_TOPIC = obj(
    "name",
    "canary_partitions",
    "not_isolated_count",
    name=STR,
    partition_count=INT,
    canary_partitions=arr(INT),
    not_isolated=arr(obj(partition_index=INT, replica_nodes=arr(INT))),
    not_isolated_count=INT,
)
CANARY = obj(
    "percent_canary_partition",
    "canary_brokers",
    "max_replication_factor",
    "topics",
    percent_canary_partition=NUM,
    canary_stride=nullable(INT),
    canary_brokers=obj("unfenced", "fenced", unfenced=arr(INT), fenced=arr(INT)),
    brokers=arr(CANARY_BROKER),
    max_replication_factor=INT,
    min_canary_brokers_for_isolation=INT,
    enough_canary_brokers=BOOL,
    canary_partitions=INT,
    canary_partitions_not_isolated=INT,
    topics=arr(CANARY_TOPIC),
)
ROLLOUT = obj(
    "verdict",
    "version",
    "evidence",
    verdict={**STR, "enum": ["PROCEED", "HOLD", "ROLLBACK", "NOT_STARTED", "COMPLETE"]},
    version=STR,
    explanation=STR,
    brokers_running_version=arr(INT),
    evidence=obj(),
)
