"""Reads of the control plane's state: cluster summary, the metadata log and stored configs.
ACLs and tokens are read through `security.selectors`, configs and quotas through
`configs.selectors`; the API and the UI read through these."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from django.conf import settings
from django.db import connection
from django.db.models import Q, QuerySet

from controlplane.chunked import in_chunks
from controlplane.controller.config_schema import BROKER, CLUSTER_DEFAULT, REDACTED, ConfigView
from controlplane.controller.scram_records import SECRET_FIELDS, USER_SCRAM_CREDENTIAL_RECORD
from controlplane.models import Cluster, ConfigEntry, ControllerNode, MetadataRecord
from controlplane.runtime.lease import cluster_fields, now_ms
from controlplane.runtime.snapshot_reads import metadata_snapshot_latest_intact, snapshot_id_of


def controller_active(cluster: Cluster) -> bool:
    return bool(cluster.lease_holder) and cluster.lease_expires_ms >= now_ms()


HEAD_FIELDS = (
    "cluster_id",
    "controller_id",
    "controller_epoch",
    "last_offset",
    "log_start_offset",
    "lease_holder",
    "lease_expires_ms",
)


def metadata_head() -> dict[str, Any]:
    """What a metadata fetch answers besides records: one read of the cluster row, plain SQL
    (every broker's long-poll reads it, and the ORM's query costs several times the CPU)."""
    return _head(cluster_fields(HEAD_FIELDS))


def metadata_head_with_tables_offset() -> dict[str, Any]:
    """The head, and in the same read `tables_offset`: the offset the state tables reached,
    what a read of them shows (a commit is the log's transaction, then the tables'), so the
    key of an answer cached from them."""
    *row, tables = cluster_fields((*HEAD_FIELDS, "projected_offset"))
    return {**_head(row), "tables_offset": tables}


def _head(row: Sequence[Any]) -> dict[str, Any]:
    cluster_id, controller_id, epoch, last_offset, log_start, holder, expires = row
    return {
        "cluster_id": cluster_id,
        "controller_id": controller_id if holder and expires >= now_ms() else None,
        "controller_epoch": epoch,
        "last_offset": last_offset,
        # Kafka's FetchResponse log_start_offset: records before it are in a snapshot only.
        "log_start_offset": log_start,
    }


class LogStartMoved(Exception):
    """Records asked for were deleted by retention after the fetch read the log's start."""


# Rows read per query: a fetch of 100,000 records holds one chunk besides its answer, and stops
# reading once the answer is full (max_bytes). A range of offsets (gap-free), not a LIMIT: the
# plan stays an index range scan whatever the table's statistics say.
METADATA_READ_CHUNK = 5000


def metadata_records_json(
    *, after_offset: int, up_to_offset: int, max_records: int, max_bytes: int
) -> list[str]:
    """The records in (`after_offset`, `up_to_offset`], each already as its JSON text: the
    stored data is passed through without being decoded and encoded again (brokers fetch
    thousands at a time). At most `max_records`, and no more than `max_bytes` of JSON text
    (a record and its comma), except that the first record always comes, as Kafka's fetch
    answers at least one batch. A plain cursor: a tenth faster than the ORM's rows.

    Offsets are gap-free: a record missing means retention deleted it since the caller read
    the log's start (LogStartMoved), and records are never skipped."""
    records: list[str] = []
    size = 0
    data = _redacted_data_sql()
    sql = (
        f'SELECT "offset", record_type, controller_epoch, timestamp_ms, {data}'
        ' FROM cp_metadata_record WHERE "offset" > %s AND "offset" <= %s ORDER BY "offset"'
    )
    low = after_offset
    with connection.cursor() as cursor:
        while low < up_to_offset and len(records) < max_records:
            high = min(up_to_offset, low + min(METADATA_READ_CHUNK, max_records - len(records)))
            cursor.execute(sql, [low, high])
            rows = cursor.fetchall()
            if len(rows) != high - low or rows[0][0] != low + 1:
                raise LogStartMoved(f"records in ({low}, {high}] are no longer in the log")
            for offset, record_type, epoch, timestamp, text in rows:
                record = (
                    f'{{"offset":{offset},"type":"{record_type}","controller_epoch":{epoch},'
                    f'"timestamp_ms":{timestamp},"data":{text}}}'
                )
                size += (len(record) if record.isascii() else len(record.encode())) + 1
                if size > max_bytes and records:
                    return records
                records.append(record)
            low = high
    return records


def _redacted_data_sql() -> str:
    """A record's stored JSON as text, a UserScramCredentialRecord's salt and keys
    "(redacted)" (SQL beside the rest of the read: no record is decoded in Python). Brokers
    that log SCRAM users in read them from Kafka's binary log (the Raft Fetch), not from here."""
    kind = f"record_type = '{USER_SCRAM_CREDENTIAL_RECORD}'"
    if connection.vendor == "postgresql":
        hidden = json.dumps(dict.fromkeys(SECRET_FIELDS, REDACTED))
        redacted = f"""("data"::jsonb || '{hidden}'::jsonb)::text"""
        return f'CASE WHEN {kind} THEN {redacted} ELSE "data"::text END'
    pairs = ", ".join(f"'$.{field}', '{REDACTED}'" for field in SECRET_FIELDS)
    return f'CASE WHEN {kind} THEN json_set("data", {pairs}) ELSE CAST("data" AS TEXT) END'


def metadata_snapshot_id() -> dict[str, int] | None:
    """The SnapshotId of the latest intact snapshot, None when there is none."""
    latest = metadata_snapshot_latest_intact()
    return None if latest is None else snapshot_id_of(latest)


def metadata_log_queryset() -> QuerySet[MetadataRecord]:
    return MetadataRecord.objects.all().order_by("offset")


StoredConfigs = dict[tuple[str, str], dict[str, str]]


def configs_stored(*, resources: list[tuple[str, str]]) -> StoredConfigs:
    """The dynamic configs of the named resources and the cluster default, in one query."""
    names_by_type: dict[str, set[str]] = {}
    for resource_type, resource_name in {*resources, (BROKER, CLUSTER_DEFAULT)}:
        names_by_type.setdefault(resource_type, set()).add(resource_name)
    query = Q()
    for resource_type, names in names_by_type.items():
        query |= Q(resource_type=resource_type) & in_chunks("resource_name", sorted(names))
    stored: StoredConfigs = {}
    rows = ConfigEntry.objects.filter(query).values_list(
        "resource_type", "resource_name", "name", "value"
    )
    for resource_type, resource_name, name, value in rows:
        stored.setdefault((resource_type, resource_name), {})[name] = value
    return stored


def config_view() -> ConfigView:
    """The configs as the controller resolves them, each key read from the projection when
    asked (a delegation token's secret key, say)."""

    def lookup(resource_type: str, resource_name: str, name: str) -> str | None:
        row = ConfigEntry.objects.filter(
            resource_type=resource_type, resource_name=resource_name, name=name
        ).first()
        return None if row is None else row.value

    return ConfigView(lookup, settings.CP_STATIC_BROKER_CONFIGS)


def quorum_voters() -> list[dict[str, int]]:
    """The controllers as Kafka's DescribeQuorum lists voters: one per controller id (its
    furthest process: the active one, or a standby caught up), with the end of the log its
    image holds and when it last said so."""
    voters: dict[int, dict[str, int]] = {}
    for node in ControllerNode.objects.order_by("-last_offset"):
        if node.controller_id not in voters:
            voters[node.controller_id] = {
                "replica_id": node.controller_id,
                "log_end_offset": node.last_offset + 1,
                "last_fetch_timestamp": node.updated_ms,
                "last_caught_up_timestamp": node.updated_ms,
            }
    return sorted(voters.values(), key=lambda v: v["replica_id"])
