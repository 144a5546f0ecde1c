"""state-at: configs, ACLs and client quotas as they were at a moment, rebuilt by replaying the
log's records up to it as the controller's image does (controlplane/controller/image/):

- a config key's latest ConfigRecord wins, a null value deletes it, and a RemoveTopicRecord
  drops the configs its topic had (those set later, on a topic of the same name made again,
  stay);
- an ACL is an AccessControlEntryRecord not removed since by a RemoveAccessControlEntryRecord
  of its id;
- a client quota key's latest ClientQuotaRecord wins, `remove` deletes it; the entity is named
  as describe-client-quotas names it (`client-id=app,user=bob`).

One pass over the log: the records of the five types are grouped by what they are about (a
config key, an ACL id, a quota key, a removed topic) and the latest of each group is kept.
Sensitive config values read `(redacted)`, as the export holds them.
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from audit.spark.builders import builds
from audit.spark.catalog import STATE_AT
from audit.spark.frames import data, latest, sorted_rows
from audit.spark.params import Params, ReportError, iso
from audit.spark.reader import Export

KINDS = ("CONFIG", "ACL", "QUOTA")
ACL_ADDED = "AccessControlEntryRecord"
ACL_REMOVED = "RemoveAccessControlEntryRecord"
FIELDS = (
    "name string, value string, id string, resource_type string, resource_name string, "
    "pattern_type string, principal string, host string, operation string, "
    "permission_type string, key string, remove boolean"
)


def state_at_check(export: Export, at_ms: int, now_ms: int) -> None:
    """Refuse a moment the log cannot answer: before its first record, or in the future."""
    if at_ms > now_ms:
        raise ReportError(f"--at {iso(at_ms)} is in the future (now is {iso(now_ms)})")
    first = export.metadata_log.agg(F.min("timestamp_ms")).first()
    first_ms = None if first is None else first[0]
    if first_ms is None:
        raise ReportError(f"the export at {export.location} holds no metadata records")
    if at_ms < first_ms:
        raise ReportError(
            f"--at {iso(at_ms)} is before the log's first record ({iso(int(first_ms))})"
        )


def _row(kind: str, **columns: Column) -> list[Column]:
    none = F.lit(None).cast("string")
    return [F.lit(kind).alias("kind")] + [
        columns.get(name, none).alias(name) for name in STATE_AT.columns[1:]
    ]


@builds("state-at")
def state_at(export: Export, params: Params) -> DataFrame:
    """The state at `--at` (else at `--to`, else now)."""
    at = next(ms for ms in (params.at_ms, params.to_ms, params.now_ms) if ms is not None)
    state_at_check(export, at, params.now_ms)
    record_type = F.col("record_type")
    records = export.metadata_log.where(
        (F.col("timestamp_ms") <= at)
        & record_type.isin(
            "ConfigRecord", "RemoveTopicRecord", ACL_ADDED, ACL_REMOVED, "ClientQuotaRecord"
        )
    ).select("offset", "record_type", "topic", "resource_name", data(FIELDS).alias("d"))
    d = F.col("d")
    about = (
        F.when(record_type == "ConfigRecord", F.lit("CONFIG"))
        .when(record_type.isin(ACL_ADDED, ACL_REMOVED), F.lit("ACL"))
        .when(record_type == "ClientQuotaRecord", F.lit("QUOTA"))
        .otherwise(F.lit("REMOVED_TOPIC"))
    )
    key = (
        F.when(about == "CONFIG", F.array(d["resource_type"], d["resource_name"], d["name"]))
        .when(about == "ACL", F.array(d["id"]))
        .when(about == "QUOTA", F.array(F.col("resource_name"), d["key"]))
        .otherwise(F.array(F.col("topic")))
    )
    last = (
        records.groupBy(about.alias("about"), key.alias("key"))
        .agg(latest("record_type", "d").alias("last"))
        .select("about", "key", "last.offset", "last.record_type", "last.d")
        .cache()  # read by four branches of the plan: computed once (the job clears the cache)
    )
    rank = F.array_position(F.array(*(F.lit(k) for k in KINDS)), F.col("kind"))
    return sorted_rows(
        _configs(last).unionByName(_acls(last)).unionByName(_quotas(last)),
        rank,
        *STATE_AT.columns[1:],
    )


def _configs(last: DataFrame) -> DataFrame:
    removed = last.where(F.col("about") == "REMOVED_TOPIC").select(
        F.get(F.col("key"), 0).alias("removed_topic"), F.col("offset").alias("removed_offset")
    )
    d = F.col("d")
    return (
        last.where((F.col("about") == "CONFIG") & d["value"].isNotNull())
        .join(
            removed,
            (d["resource_type"] == "TOPIC") & (d["resource_name"] == F.col("removed_topic")),
            "left",
        )
        .where(F.col("removed_offset").isNull() | (F.col("offset") > F.col("removed_offset")))
        .select(
            *_row(
                "CONFIG",
                resource_type=d["resource_type"],
                resource_name=d["resource_name"],
                key_or_principal=d["name"],
                value_or_operation=d["value"],
            )
        )
    )


def _acls(last: DataFrame) -> DataFrame:
    d = F.col("d")
    return last.where((F.col("about") == "ACL") & (F.col("record_type") == ACL_ADDED)).select(
        *_row(
            "ACL",
            resource_type=d["resource_type"],
            resource_name=d["resource_name"],
            key_or_principal=d["principal"],
            value_or_operation=d["operation"],
            permission_type=d["permission_type"],
            pattern_type=d["pattern_type"],
            host=d["host"],
        )
    )


def _quotas(last: DataFrame) -> DataFrame:
    d = F.col("d")
    return last.where((F.col("about") == "QUOTA") & ~F.coalesce(d["remove"], F.lit(False))).select(
        *_row(
            "QUOTA",
            resource_type=F.lit("CLIENT_QUOTA"),
            resource_name=F.get(F.col("key"), 0),
            key_or_principal=F.get(F.col("key"), 1),
            value_or_operation=d["value"],
        )
    )
