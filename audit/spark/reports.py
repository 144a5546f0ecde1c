"""The audit reports: one function per report, each a DataFrame computed over an export with
Spark's DataFrame API (nothing is collected to the driver to compute it; the caller collects or
writes the small result).

Records are read as the controller's image replays them (controlplane/controller/image/):
a PartitionChangeRecord's `leader` -2 leaves the leader as it is and -1 leaves the partition
without one; a RemoveTopicRecord takes the topic's configs with it; a
BrokerRegistrationChangeRecord with `fenced` 1 fences a broker (a session expiry when the
controller did it itself: principal `User:controller`), with `in_controlled_shutdown` 1 starts a
controlled shutdown. An applied AlterReplicaState report is audited with its broker, its log dir
and the partitions it named, and the metadata offsets of the records it wrote.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F

from audit.resources import AUTHORIZATION_CODES
from audit.spark.params import Params, ReportError, day, iso
from audit.spark.reader import Export

# The admin writes a broker may forward in an Envelope (KIP-590; CONTRACT.md's list).
FORWARDABLE_APIS = (
    "CreateTopics",
    "DeleteTopics",
    "AlterConfigs",
    "CreatePartitions",
    "CreateDelegationToken",
    "RenewDelegationToken",
    "ExpireDelegationToken",
    "ElectLeaders",
    "IncrementalAlterConfigs",
    "AlterClientQuotas",
    "CreateAcls",
    "DeleteAcls",
    "UnregisterBroker",
)
REPLICA_REPORT = "AlterReplicaState"  # a broker's report, audited when the controller applies it
CONTROLLER = "User:controller"  # the principal of the controller's own changes
NO_LEADER, NO_LEADER_CHANGE = -1, -2
NOT_NAMED = "(not named)"  # an AlterReplicaState report that named no log dir
UNREGISTERED = "(unregistered)"  # the pod of a broker the log never registered
RESOURCES = "array<struct<resource_type:string,resource_name:string,error_code:int>>"

# Each report's columns, in order (CONTRACT.md fixes admin-activity, denied-requests, forwarding
# and state-at's first six).
STATE_COLUMNS = (
    "kind",
    "resource_type",
    "resource_name",
    "key_or_principal",
    "value_or_operation",
    "permission_type",
    "pattern_type",
    "host",
)
COLUMNS: dict[str, tuple[str, ...]] = {
    "admin-activity": ("day", "principal", "api", "outcome", "requests"),
    "denied-requests": (
        "time",
        "principal",
        "api",
        "resource",
        "error_code",
        "client_id",
        "client_address",
    ),
    "forwarding": (
        "forwarding_broker_id",
        "forwarding_principal",
        "api",
        "requests",
        "share_of_writes",
    ),
    "replica-health": (
        "broker_id",
        "log_dir",
        "reports",
        "offline_replicas",
        "leaders_moved",
        "partitions_left_leaderless",
        "seconds_to_new_leader_avg",
        "seconds_to_new_leader_max",
        "leaderless_partition_seconds",
    ),
    "broker-lifecycle": (
        "broker_id",
        "pod",
        "registrations",
        "fencings",
        "session_expiries",
        "controlled_shutdowns",
        "unregistrations",
    ),
    "canary": (
        "pod",
        "brokers",
        "fencings",
        "session_expiries",
        "offline_replicas",
        "leaderless_partitions",
        "incidents_per_broker",
    ),
    "state-at": STATE_COLUMNS,
}

REGISTER = "RegisterBrokerRecord"
CHANGE = "BrokerRegistrationChangeRecord"
UNREGISTER = "UnregisterBrokerRecord"


def _field(name: str) -> Column:
    """A field of the record's data, as the text JSON holds (null when absent or null)."""
    return F.get_json_object(F.col("data"), f"$.{name}")


def _latest(*columns: str | Column) -> Column:
    """The values of the row with the highest offset (as a struct), nulls kept: the record
    that wins when the log is replayed."""
    return F.max(F.struct(F.col("offset").alias("offset"), *columns))


def _in_period(frame: DataFrame, ms_column: str, params: Params) -> DataFrame:
    """Rows whose time lies in [from, to] (both inclusive); the `date` partition is filtered
    too, so Spark reads only the days that can hold them."""
    if params.from_ms is not None:
        frame = frame.where(F.col("date") >= day(params.from_ms))
        frame = frame.where(F.col(ms_column) >= params.from_ms)
    if params.to_ms is not None:
        frame = frame.where(F.col("date") <= day(params.to_ms))
        frame = frame.where(F.col(ms_column) <= params.to_ms)
    return frame


def _resources() -> Column:
    return F.from_json(F.col("resources"), RESOURCES)


def _count(condition: Column) -> Column:
    return F.sum(F.when(condition, 1).otherwise(0))


# --- admin-activity, denied-requests, forwarding: the audit trail ------------------------------


def admin_activity(export: Export, params: Params) -> DataFrame:
    """Requests by day, principal, API and outcome. A broker's AlterReplicaState report is not
    an admin request and is left out."""
    events = _in_period(export.audit_events, "time_ms", params)
    return (
        events.where(F.col("api") != REPLICA_REPORT)
        .groupBy(F.col("date").alias("day"), "principal", "api", "outcome")
        .agg(F.count(F.lit(1)).alias("requests"))
        .orderBy("day", "principal", "api", "outcome")
    )


def denied_requests(export: Export, params: Params) -> DataFrame:
    """One row per resource refused for authorization, newest first; a DENIED request naming no
    such resource is one row with resource "" and the request's error code."""
    codes = sorted(AUTHORIZATION_CODES)

    def refused(named: Column) -> Column:
        return F.filter(named, lambda r: r["error_code"].isin(codes))

    events = _in_period(export.audit_events, "time_ms", params).withColumn("named", _resources())
    common = ["time", "principal", "api", "client_id", "client_host", "id"]
    per_resource = events.select(
        *common, F.posexplode(refused(F.col("named"))).alias("position", "refused")
    ).select(
        *common,
        "position",
        F.concat_ws(":", F.col("refused.resource_type"), F.col("refused.resource_name")).alias(
            "resource"
        ),
        F.col("refused.error_code").alias("error_code"),
    )
    unnamed = events.where(
        (F.col("outcome") == "DENIED")
        & (F.coalesce(F.size(refused(F.col("named"))), F.lit(0)) <= 0)
    ).select(*common, F.lit(0).alias("position"), F.lit("").alias("resource"), "error_code")
    return (
        per_resource.unionByName(unnamed)
        .orderBy(F.col("time").desc(), F.col("id").desc(), "position")
        .select(
            "time",
            "principal",
            "api",
            "resource",
            "error_code",
            "client_id",
            F.col("client_host").alias("client_address"),
        )
    )


def forwarding(export: Export, params: Params) -> DataFrame:
    """Admin writes (the forwardable APIs, any outcome) by the broker that forwarded them in an
    Envelope (direct requests: broker id null, principal ""), with their share of every admin
    write in the period."""
    writes = _in_period(export.audit_events, "time_ms", params).where(
        F.col("api").isin(*FORWARDABLE_APIS)
    )
    total = writes.agg(F.count(F.lit(1)).alias("all_writes"))
    return (
        writes.groupBy("forwarding_broker_id", "forwarding_principal", "api")
        .agg(F.count(F.lit(1)).alias("requests"))
        .crossJoin(total)
        .select(
            "forwarding_broker_id",
            "forwarding_principal",
            "api",
            "requests",
            F.try_divide(F.col("requests"), F.col("all_writes")).alias("share_of_writes"),
        )
        .orderBy(F.col("forwarding_broker_id").asc_nulls_first(), "forwarding_principal", "api")
    )


# --- replica-health: AlterReplicaState reports (KIP-589) ----------------------------------------


def _replica_reports(export: Export, params: Params) -> DataFrame:
    """The AlterReplicaState reports of the period: the reporting broker, its log dir, and how
    many partitions it named that the controller accepted (error code 0)."""
    named = _resources()
    log_dir = F.get(F.filter(named, lambda r: r["resource_type"] == "LOG_DIR"), 0)
    partitions = F.filter(
        named, lambda r: (r["resource_type"] == "PARTITION") & (r["error_code"] == 0)
    )
    return (
        _in_period(export.audit_events, "time_ms", params)
        .where(F.col("api") == REPLICA_REPORT)
        .select(
            "id",
            "time_ms",
            "duration_ms",
            "broker_id",
            "first_offset",
            "last_offset",
            F.coalesce(log_dir["resource_name"], F.lit(NOT_NAMED)).alias("log_dir"),
            F.greatest(F.size(partitions), F.lit(0)).alias("named_partitions"),
        )
    )


def _leader_changes(export: Export, until_ms: int) -> DataFrame:
    """Every record that set a partition's leader (its creation, and changes that moved it) up
    to `until_ms`, with the leader it had before (`previous_leader`, null at creation) and
    when it next got a leader (`next_leader_ms`, null if not by then)."""
    by_partition = Window.partitionBy("topic_id", "partition").orderBy("offset")
    following = by_partition.rowsBetween(1, Window.unboundedFollowing)
    next_leader = F.min(F.when(F.col("leader") >= 0, F.struct("offset", "timestamp_ms"))).over(
        following
    )
    return (
        export.metadata_log.where(
            F.col("record_type").isin("PartitionRecord", "PartitionChangeRecord")
            & (F.col("timestamp_ms") <= until_ms)
        )
        .select(
            "offset",
            "timestamp_ms",
            "date",
            "record_type",
            "topic_id",
            "partition",
            _field("leader").cast("int").alias("leader"),
        )
        .where(F.col("leader") != NO_LEADER_CHANGE)
        .withColumn("previous_leader", F.lag("leader").over(by_partition))
        .withColumn("next_leader_ms", next_leader["timestamp_ms"])
    )


def replica_health(export: Export, params: Params) -> DataFrame:
    """Per broker and log dir: its reports, the replicas they took offline, the partitions whose
    leader moved (and how long that took) or that were left leaderless, and the partition-
    seconds without a leader that those leaderless periods lasted: each ends at the partition's
    next leader, at its topic's deletion, or at `--to` (now when not given)."""
    until = params.until_ms
    reports = _replica_reports(export, params)
    records = reports.where(F.col("first_offset").isNotNull()).select(
        "id", F.explode(F.sequence("first_offset", "last_offset")).alias("offset")
    )
    removals = export.metadata_log.where(
        (F.col("record_type") == "RemoveTopicRecord") & (F.col("timestamp_ms") <= until)
    ).select(
        "topic_id",
        F.col("offset").alias("removed_offset"),
        F.col("timestamp_ms").alias("removed_ms"),
    )
    changes = (
        records.join(
            _leader_changes(export, until).where(F.col("record_type") == "PartitionChangeRecord"),
            "offset",
        )
        .join(removals, "topic_id", "left")
        .withColumn("partition_key", F.struct("topic_id", "partition"))
    )
    leaderless = F.col("leader") == NO_LEADER
    period_end = F.least(
        F.col("next_leader_ms"),
        F.when(F.col("removed_offset") > F.col("offset"), F.col("removed_ms")),
        F.lit(until),
    )
    per_report = changes.groupBy("id").agg(
        F.count_distinct(F.when(F.col("leader") >= 0, F.col("partition_key"))).alias("moved"),
        F.count_distinct(F.when(leaderless, F.col("partition_key"))).alias("left_leaderless"),
        F.sum(
            F.when(leaderless, F.greatest(period_end - F.col("timestamp_ms"), F.lit(0)) / 1000.0)
        ).alias("leaderless_seconds"),
    )
    moved_seconds = F.when(F.col("moved") > 0, F.col("duration_ms") / 1000.0)
    return (
        reports.join(per_report, "id", "left")
        .groupBy("broker_id", "log_dir")
        .agg(
            F.count(F.lit(1)).alias("reports"),
            F.sum("named_partitions").alias("offline_replicas"),
            F.coalesce(F.sum("moved"), F.lit(0)).alias("leaders_moved"),
            F.coalesce(F.sum("left_leaderless"), F.lit(0)).alias("partitions_left_leaderless"),
            F.avg(moved_seconds).alias("seconds_to_new_leader_avg"),
            F.max(moved_seconds).alias("seconds_to_new_leader_max"),
            F.coalesce(F.sum("leaderless_seconds"), F.lit(0.0)).alias(
                "leaderless_partition_seconds"
            ),
        )
        .orderBy("broker_id", "log_dir")
    )


# --- broker-lifecycle and canary: the brokers' registrations ------------------------------------


def _registrations(export: Export) -> DataFrame:
    return export.metadata_log.where(F.col("record_type") == REGISTER).select(
        F.col("broker_id").alias("registered_broker"),
        F.col("offset").alias("registered_offset"),
        F.col("timestamp_ms").alias("registered_ms"),
        _field("pod").alias("pod"),
    )


def _latest_pods(export: Export, until_ms: int) -> DataFrame:
    """Each broker's pod, as its latest registration up to `until_ms` gave it."""
    latest = F.max(F.struct("registered_offset", "pod"))
    return (
        _registrations(export)
        .where(F.col("registered_ms") <= until_ms)
        .groupBy(F.col("registered_broker").alias("broker_id"))
        .agg(latest["pod"].alias("pod"))
    )


def _broker_changes(export: Export, params: Params) -> DataFrame:
    """The period's broker records, with what each one is: fencing, session expiry (a fencing
    by the controller itself), controlled shutdown, registration, unregistration."""
    is_change = F.col("record_type") == CHANGE
    fencing = is_change & (_field("fenced") == "1")
    return (
        _in_period(export.metadata_log, "timestamp_ms", params)
        .where(F.col("record_type").isin(REGISTER, CHANGE, UNREGISTER))
        .select(
            "offset",
            "broker_id",
            (F.col("record_type") == REGISTER).alias("registration"),
            fencing.alias("fencing"),
            (fencing & (F.col("principal") == CONTROLLER)).alias("session_expiry"),
            (is_change & (_field("in_controlled_shutdown") == "1")).alias("controlled_shutdown"),
            (F.col("record_type") == UNREGISTER).alias("unregistration"),
        )
    )


def broker_lifecycle(export: Export, params: Params) -> DataFrame:
    """Per broker: registrations, fencings, session expiries, controlled shutdowns and
    unregistrations in the period, and its pod (its latest registration up to `--to`)."""
    counts = (
        _broker_changes(export, params)
        .groupBy("broker_id")
        .agg(
            _count(F.col("registration")).alias("registrations"),
            _count(F.col("fencing")).alias("fencings"),
            _count(F.col("session_expiry")).alias("session_expiries"),
            _count(F.col("controlled_shutdown")).alias("controlled_shutdowns"),
            _count(F.col("unregistration")).alias("unregistrations"),
        )
    )
    return (
        counts.join(_latest_pods(export, params.until_ms), "broker_id", "left")
        .select(*COLUMNS["broker-lifecycle"])
        .orderBy("broker_id")
    )


def _with_pod(events: DataFrame, registrations: DataFrame, registered_before: Column) -> DataFrame:
    """`events` (with a `broker_id`) each with the pod of that broker's latest registration
    before it (`registered_before`: the join's condition on time or offset)."""
    joined = events.join(
        registrations,
        (F.col("broker_id") == F.col("registered_broker")) & registered_before,
        "left",
    )
    latest = F.max(F.struct("registered_offset", "pod"))
    return joined.groupBy(*events.columns).agg(
        F.coalesce(latest["pod"], F.lit(UNREGISTERED)).alias("pod")
    )


def canary(export: Export, params: Params) -> DataFrame:
    """Incidents by pod (`canary-broker` or `broker`): fencings and session expiries of its
    brokers, replicas its brokers reported offline, and partitions that became leaderless while
    one of its brokers led them. A broker's pod is its latest registration before the event."""
    registrations = _registrations(export)
    fencings = _with_pod(
        _broker_changes(export, params)
        .where(F.col("fencing"))
        .select("offset", "broker_id", "session_expiry"),
        registrations,
        F.col("registered_offset") < F.col("offset"),
    ).select(
        "pod",
        F.lit(1).alias("fencings"),
        F.col("session_expiry").cast("int").alias("session_expiries"),
        F.lit(0).alias("offline_replicas"),
        F.lit(0).alias("leaderless_partitions"),
    )
    offline = _with_pod(
        _replica_reports(export, params).select("id", "time_ms", "broker_id", "named_partitions"),
        registrations,
        F.col("registered_ms") <= F.col("time_ms"),
    ).select(
        "pod",
        F.lit(0).alias("fencings"),
        F.lit(0).alias("session_expiries"),
        F.col("named_partitions").alias("offline_replicas"),
        F.lit(0).alias("leaderless_partitions"),
    )
    became_leaderless = _in_period(
        _leader_changes(export, params.until_ms), "timestamp_ms", params
    ).where((F.col("leader") == NO_LEADER) & (F.col("previous_leader") >= 0))
    leaderless = _with_pod(
        became_leaderless.select("offset", F.col("previous_leader").alias("broker_id")),
        registrations,
        F.col("registered_offset") < F.col("offset"),
    ).select(
        "pod",
        F.lit(0).alias("fencings"),
        F.lit(0).alias("session_expiries"),
        F.lit(0).alias("offline_replicas"),
        F.lit(1).alias("leaderless_partitions"),
    )
    kinds = ["fencings", "session_expiries", "offline_replicas", "leaderless_partitions"]
    incidents = (
        fencings.unionByName(offline)
        .unionByName(leaderless)
        .groupBy("pod")
        .agg(*(F.sum(kind).alias(kind) for kind in kinds))
    )
    brokers = (
        _latest_pods(export, params.until_ms).groupBy("pod").agg(F.count(F.lit(1)).alias("brokers"))
    )
    every = brokers.join(incidents, "pod", "full").na.fill(0, ["brokers", *kinds])
    incident_count = F.col("fencings") + F.col("offline_replicas") + F.col("leaderless_partitions")
    return every.select(
        "pod",
        F.col("brokers").cast("long").alias("brokers"),
        *(F.col(kind).cast("long").alias(kind) for kind in kinds),
        F.try_divide(incident_count.cast("double"), F.col("brokers")).alias("incidents_per_broker"),
    ).orderBy("pod")


# --- state-at: configs, ACLs and client quotas rebuilt from the log ----------------------------


KINDS = ("CONFIG", "ACL", "QUOTA")


def _state_row(kind: str, **columns: Column) -> list[Column]:
    none = F.lit(None).cast("string")
    return [F.lit(kind).alias("kind")] + [
        columns.get(name, none).alias(name) for name in STATE_COLUMNS[1:]
    ]


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


def state_at(export: Export, params: Params) -> DataFrame:
    """Configs, ACLs and client quotas as they were at `--at` (else at `--to`, else now): the
    log's records up to it replayed as the controller's image does. Sensitive config values
    read `(redacted)`, as the export holds them."""
    at = next(ms for ms in (params.at_ms, params.to_ms, params.now_ms) if ms is not None)
    state_at_check(export, at, params.now_ms)
    log = export.metadata_log.where(F.col("timestamp_ms") <= at)
    rank = F.array_position(F.array(*(F.lit(k) for k in KINDS)), F.col("kind"))
    return (
        _configs_at(log)
        .unionByName(_acls_at(log))
        .unionByName(_quotas_at(log))
        .orderBy(rank, *STATE_COLUMNS[1:])
    )


def _configs_at(log: DataFrame) -> DataFrame:
    """The latest value of each config key (null: deleted); a topic's removal drops what it
    had (configs set after, on a topic of the same name made again, stay)."""
    latest = (
        log.where(F.col("record_type") == "ConfigRecord")
        .groupBy("resource_type", "resource_name", _field("name").alias("name"))
        .agg(_latest(_field("value").alias("value")).alias("config"))
    )
    removals = (
        log.where(F.col("record_type") == "RemoveTopicRecord")
        .groupBy(F.col("topic").alias("removed_topic"))
        .agg(F.max("offset").alias("removed_offset"))
    )
    kept = (
        latest.join(
            removals,
            (F.col("resource_type") == "TOPIC")
            & (F.col("resource_name") == F.col("removed_topic")),
            "left",
        )
        .where(F.col("config.value").isNotNull())
        .where(
            F.col("removed_offset").isNull() | (F.col("config.offset") > F.col("removed_offset"))
        )
    )
    return kept.select(
        *_state_row(
            "CONFIG",
            resource_type=F.col("resource_type"),
            resource_name=F.col("resource_name"),
            key_or_principal=F.col("name"),
            value_or_operation=F.col("config.value"),
        )
    )


def _acls_at(log: DataFrame) -> DataFrame:
    """ACLs added and not removed since (by id)."""
    fields = ["resource_type", "resource_name", "pattern_type", "principal", "host"]
    latest = (
        log.where(
            F.col("record_type").isin("AccessControlEntryRecord", "RemoveAccessControlEntryRecord")
        )
        .groupBy(_field("id").alias("acl_id"))
        .agg(
            _latest(
                "record_type",
                *(_field(f).alias(f) for f in [*fields, "operation", "permission_type"]),
            ).alias("acl")
        )
        .where(F.col("acl.record_type") == "AccessControlEntryRecord")
    )
    return latest.select(
        *_state_row(
            "ACL",
            resource_type=F.col("acl.resource_type"),
            resource_name=F.col("acl.resource_name"),
            key_or_principal=F.col("acl.principal"),
            value_or_operation=F.col("acl.operation"),
            permission_type=F.col("acl.permission_type"),
            pattern_type=F.col("acl.pattern_type"),
            host=F.col("acl.host"),
        )
    )


def _quotas_at(log: DataFrame) -> DataFrame:
    """The latest value of each quota key of each entity (removed: gone). The entity is named
    as describe-client-quotas names it (`client-id=app,user=bob`)."""
    latest = (
        log.where(F.col("record_type") == "ClientQuotaRecord")
        .groupBy(F.col("resource_name").alias("entity"), _field("key").alias("key"))
        .agg(_latest(_field("value").alias("value"), _field("remove").alias("remove")).alias("q"))
        .where(F.coalesce(F.col("q.remove"), F.lit("false")) != "true")
    )
    return latest.select(
        *_state_row(
            "QUOTA",
            resource_type=F.lit("CLIENT_QUOTA"),
            resource_name=F.col("entity"),
            key_or_principal=F.col("key"),
            value_or_operation=F.col("q.value"),
        )
    )


# --- the registry ------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True, slots=True)
class Report:
    name: str
    title: str
    build: Callable[[Export, Params], DataFrame]
    at_moment: bool = False  # takes --at (a moment) instead of --from/--to (a period)

    @property
    def columns(self) -> tuple[str, ...]:
        return COLUMNS[self.name]


REPORTS: dict[str, Report] = {
    r.name: r
    for r in (
        Report(
            "admin-activity",
            "Admin activity: requests by day, principal, API and outcome",
            admin_activity,
        ),
        Report("denied-requests", "Requests denied by authorization", denied_requests),
        Report("forwarding", "Admin writes by forwarding broker (Envelope, KIP-590)", forwarding),
        Report(
            "replica-health",
            "Replica health: offline-replica reports by broker and log dir (KIP-589)",
            replica_health,
        ),
        Report(
            "broker-lifecycle",
            "Broker lifecycle: registrations, fencings, session expiries, controlled shutdowns",
            broker_lifecycle,
        ),
        Report("canary", "Incidents on canary and other brokers (KIP-1095)", canary),
        Report(
            "state-at", "Configs, ACLs and client quotas as they were", state_at, at_moment=True
        ),
    )
}


def report_build(name: str, export: Export, params: Params) -> Any:
    """The DataFrame of report `name` (refused with the known names when there is none)."""
    report = REPORTS.get(name)
    if report is None:
        raise ReportError(f"unknown report {name!r}: known reports are {', '.join(REPORTS)}")
    return report.build(export, params).select(*report.columns)
