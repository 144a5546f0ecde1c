"""The reports on brokers and replicas: replica-health (AlterReplicaState reports, KIP-589),
broker-lifecycle, and canary (incidents by pod, KIP-1095).

An applied AlterReplicaState report is audited with its broker, its log dir and the partitions
it named, and the metadata offsets of the records it wrote: a report's records are the log's
records in that range. The JSON data of a record is parsed only where it is needed: after the
joins that pick the few records a report asks about, not for the whole log.
"""

from __future__ import annotations

from collections.abc import Callable

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from audit.spark.builders import builds
from audit.spark.catalog import BROKER_LIFECYCLE, CANARY_INCIDENTS
from audit.spark.frames import (
    CONTROLLER,
    NO_LEADER,
    NO_LEADER_CHANGE,
    REPLICA_REPORT,
    count_if,
    data,
    in_period,
    leader,
    resources,
    sorted_rows,
)
from audit.spark.params import Params
from audit.spark.reader import Export

NOT_NAMED = "(not named)"  # an AlterReplicaState report that named no log dir
UNREGISTERED = "(unregistered)"  # the pod of a broker the log never registered
REGISTER = "RegisterBrokerRecord"
CHANGE = "BrokerRegistrationChangeRecord"
UNREGISTER = "UnregisterBrokerRecord"
PARTITION_CHANGE = "PartitionChangeRecord"
# The text of every record whose leader is -1, whatever its JSON spacing (others may match too).
MAYBE_NO_LEADER = r'"leader"\s*:\s*-1\b'


def replica_reports(export: Export, params: Params) -> DataFrame:
    """The AlterReplicaState reports of the period: the reporting broker, its log dir, and how
    many partitions it named that the controller accepted (error code 0)."""
    named = resources()
    log_dir = F.get(F.filter(named, lambda r: r["resource_type"] == "LOG_DIR"), 0)
    partitions = F.filter(
        named, lambda r: (r["resource_type"] == "PARTITION") & (r["error_code"] == 0)
    )
    return (
        in_period(export.audit_events, "time_ms", params)
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


def _partition_changes(export: Export, until_ms: int) -> DataFrame:
    """PartitionChangeRecords up to `until_ms`, their data not parsed yet."""
    return export.metadata_log.where(
        (F.col("record_type") == PARTITION_CHANGE) & (F.col("timestamp_ms") <= until_ms)
    ).select("offset", "timestamp_ms", "topic_id", "partition", "data")


def _report_changes(export: Export, reports: DataFrame, until_ms: int) -> DataFrame:
    """The partition changes each report's own records made (`id`, the record, `leader`: -2
    when it left the leader as it was). No filter on `leader` here: Spark would push it below
    the join, and parse every record of the log instead of the report's."""
    offsets = reports.where(F.col("first_offset").isNotNull()).select(
        "id", F.explode(F.sequence("first_offset", "last_offset")).alias("offset")
    )
    return offsets.join(_partition_changes(export, until_ms), "offset").select(
        "id", "offset", "timestamp_ms", "topic_id", "partition", leader().alias("leader")
    )


def _leaderless_periods(export: Export, starts: DataFrame, until_ms: int) -> DataFrame:
    """The seconds each leaderless period lasted (`starts`: id, topic_id, partition,
    start_offset, start_ms; one row each): until the partition's next leader, its topic's
    deletion, or `until_ms`, whichever came first."""
    later = export.metadata_log.where(
        F.col("record_type").isin(PARTITION_CHANGE, "RemoveTopicRecord")
        & (F.col("timestamp_ms") <= until_ms)
    ).select(
        F.col("topic_id").alias("later_topic"),
        F.col("partition").alias("later_partition"),
        F.col("offset").alias("later_offset"),
        F.col("timestamp_ms").alias("later_ms"),
        F.col("record_type").alias("later_type"),
        "data",
    )
    ends = (
        F.broadcast(starts)  # few: a leaderless partition is an incident
        .join(
            later,
            (F.col("topic_id") == F.col("later_topic"))
            & (F.col("later_offset") > F.col("start_offset"))
            & (
                (F.col("later_type") == "RemoveTopicRecord")
                | ((F.col("partition") == F.col("later_partition")) & (leader() >= 0))
            ),
        )
        .select(*starts.columns, F.col("later_ms").alias("end_ms"))
    )
    # Every start once with no end (null), then each end that came after it: the first wins.
    no_end = starts.select("*", F.lit(None).cast("long").alias("end_ms"))
    end = F.least(F.min("end_ms"), F.lit(until_ms))
    return (
        no_end.unionByName(ends)
        .groupBy(*starts.columns)
        .agg((F.greatest(end - F.col("start_ms"), F.lit(0)) / 1000.0).alias("seconds"))
    )


@builds("replica-health")
def replica_health(export: Export, params: Params) -> DataFrame:
    """Per broker and log dir: its reports, the replicas they took offline, the partitions whose
    leader moved to another broker (and how long that took: the report's duration) or that
    were left without one, and the partition-seconds without a leader those periods lasted."""
    until = params.until_ms
    reports = replica_reports(export, params)
    # Few rows, read by three branches of the plan: computed once (the job clears the cache).
    changes = _report_changes(export, reports, until).cache()
    starts = changes.where(F.col("leader") == NO_LEADER).select(
        "id",
        "topic_id",
        "partition",
        F.col("offset").alias("start_offset"),
        F.col("timestamp_ms").alias("start_ms"),
    )
    partition = F.struct("topic_id", "partition")
    # One row per report, per leader change and per leaderless period, gathered by report id.
    facts = ["broker_id", "log_dir", "duration_ms", "named_partitions", "moved", "lost", "seconds"]
    partition_type = changes.select(partition).schema[0].dataType.simpleString()
    types = dict(reports.dtypes) | {"moved": partition_type, "lost": partition_type}
    types["seconds"] = "double"

    def facts_of(frame: DataFrame, **given: Column) -> DataFrame:
        """`frame`'s facts (its own columns, or `given`), null for those it does not have."""
        return frame.select(
            "id",
            *(
                given.get(f, F.col(f) if f in frame.columns else F.lit(None).cast(types[f])).alias(
                    f
                )
                for f in facts
            ),
        )

    per_report = (
        facts_of(reports)
        .unionByName(
            facts_of(
                changes,
                moved=F.when(F.col("leader") >= 0, partition),
                lost=F.when(F.col("leader") == NO_LEADER, partition),
            )
        )
        .unionByName(facts_of(_leaderless_periods(export, starts, until)))
        .groupBy("id")
        .agg(
            *(
                F.max(f).alias(f)
                for f in ["broker_id", "log_dir", "duration_ms", "named_partitions"]
            ),
            F.size(F.collect_set("moved")).alias("moved"),
            F.size(F.collect_set("lost")).alias("leaderless"),
            F.sum("seconds").alias("leaderless_seconds"),
        )
    )
    moved_seconds = F.when(F.col("moved") > 0, F.col("duration_ms") / 1000.0)
    return sorted_rows(
        per_report.groupBy("broker_id", "log_dir").agg(
            F.count(F.lit(1)).alias("reports"),
            F.sum("named_partitions").alias("offline_replicas"),
            F.sum("moved").alias("leaders_moved"),
            F.sum("leaderless").alias("partitions_left_leaderless"),
            F.avg(moved_seconds).alias("seconds_to_new_leader_avg"),
            F.max(moved_seconds).alias("seconds_to_new_leader_max"),
            F.coalesce(F.sum("leaderless_seconds"), F.lit(0.0)).alias(
                "leaderless_partition_seconds"
            ),
        ),
        "broker_id",
        "log_dir",
    )


# --- broker-lifecycle and canary: the brokers' registrations ------------------------------------


def _registrations(export: Export) -> DataFrame:
    """Per broker (`registered_broker`), its registrations in log order: `registrations`,
    [{offset, ms, pod}]. Few rows, read by several branches: computed once (the job clears the
    cache)."""
    registration = F.struct(
        F.col("offset").alias("offset"),
        F.col("timestamp_ms").alias("ms"),
        data("pod string")["pod"].alias("pod"),
    )
    return (
        export.metadata_log.where(F.col("record_type") == REGISTER)
        .groupBy(F.col("broker_id").alias("registered_broker"))
        .agg(F.array_sort(F.collect_list(registration)).alias("registrations"))
        .cache()
    )


def _latest_registered(registered: Callable[[Column], Column]) -> Column:
    """The pod of a broker's latest registration for which `registered` holds."""
    latest = F.try_element_at(F.filter("registrations", registered), F.lit(-1))
    return F.coalesce(latest["pod"], F.lit(UNREGISTERED))


def _latest_pods(registrations: DataFrame, until_ms: int) -> DataFrame:
    """Each broker registered by `until_ms`, with its pod as its latest registration gave it."""

    def by_then(r: Column) -> Column:
        return r["ms"] <= until_ms

    return registrations.where(F.exists("registrations", by_then)).select(
        F.col("registered_broker").alias("broker_id"), _latest_registered(by_then).alias("pod")
    )


def _broker_changes(export: Export, params: Params) -> DataFrame:
    """The period's broker records, with what each one is: registration, fencing, session
    expiry (a fencing by the controller itself), controlled shutdown, unregistration."""
    is_change = F.col("record_type") == CHANGE
    flags = F.when(is_change, data("fenced int, in_controlled_shutdown int"))

    def flag(name: str) -> Column:
        return F.coalesce(flags[name] == 1, F.lit(False))

    return (
        in_period(export.metadata_log, "timestamp_ms", params)
        .where(F.col("record_type").isin(REGISTER, CHANGE, UNREGISTER))
        .select(
            "offset",
            "broker_id",
            "principal",
            (F.col("record_type") == REGISTER).alias("registration"),
            flag("fenced").alias("fencing"),
            flag("in_controlled_shutdown").alias("controlled_shutdown"),
            (F.col("record_type") == UNREGISTER).alias("unregistration"),
        )
        .withColumn("session_expiry", F.col("fencing") & (F.col("principal") == CONTROLLER))
    )


@builds("broker-lifecycle")
def broker_lifecycle(export: Export, params: Params) -> DataFrame:
    """Per broker: registrations, fencings, session expiries, controlled shutdowns and
    unregistrations in the period, and its pod (its latest registration up to `--to`)."""
    counts = (
        _broker_changes(export, params)
        .groupBy("broker_id")
        .agg(
            count_if(F.col("registration")).alias("registrations"),
            count_if(F.col("fencing")).alias("fencings"),
            count_if(F.col("session_expiry")).alias("session_expiries"),
            count_if(F.col("controlled_shutdown")).alias("controlled_shutdowns"),
            count_if(F.col("unregistration")).alias("unregistrations"),
        )
    )
    pods = F.broadcast(_latest_pods(_registrations(export), params.until_ms))
    return sorted_rows(
        counts.join(pods, "broker_id", "left").select(*BROKER_LIFECYCLE.columns),
        "broker_id",
    )


def _with_pod(
    events: DataFrame, registrations: DataFrame, registered: Callable[[Column], Column]
) -> DataFrame:
    """`events` (with a `broker_id`) each with the pod of that broker's latest registration
    before it (`registered`: whether a registration came before the event)."""
    return events.join(
        F.broadcast(registrations), F.col("broker_id") == F.col("registered_broker"), "left"
    ).select(*events.columns, _latest_registered(registered).alias("pod"))


def _became_leaderless(export: Export, params: Params) -> DataFrame:
    """The period's records that left a partition without the leader it had (`offset`, and
    that leader as `broker_id`): the latest earlier record of the partition that set a leader
    (its creation or a change) says who led it."""
    until = params.until_ms
    lost = (
        in_period(export.metadata_log, "timestamp_ms", params)
        .where((F.col("record_type") == PARTITION_CHANGE) & (F.col("timestamp_ms") <= until))
        .where(F.col("data").rlike(MAYBE_NO_LEADER))  # cheap: only these are parsed
        .select("offset", "topic_id", "partition", leader().alias("leader"))
        .where(F.col("leader") == NO_LEADER)
    )
    setters = export.metadata_log.where(
        F.col("record_type").isin("PartitionRecord", PARTITION_CHANGE)
        & (F.col("timestamp_ms") <= until)
    ).select(
        F.col("topic_id").alias("set_topic"),
        F.col("partition").alias("set_partition"),
        F.col("offset").alias("set_offset"),
        "data",
    )
    # The condition sits in the aggregate, not in a filter Spark would push into the scan.
    set_a_leader = F.col("set_leader") != NO_LEADER_CHANGE
    previous = F.max(F.when(set_a_leader, F.struct("set_offset", "set_leader")))["set_leader"]
    return (
        F.broadcast(lost)  # few: a leaderless partition is an incident
        .join(
            setters,
            (F.col("topic_id") == F.col("set_topic"))
            & (F.col("partition") == F.col("set_partition"))
            & (F.col("set_offset") < F.col("offset")),
        )
        .select("offset", "set_offset", leader().alias("set_leader"))
        .groupBy("offset")
        .agg(previous.alias("broker_id"))
        .where(F.col("broker_id") >= 0)
    )


@builds("canary")
def canary(export: Export, params: Params) -> DataFrame:
    """Incidents by pod (`canary-broker` or `broker`): fencings and session expiries of its
    brokers, replicas its brokers reported offline, and partitions that became leaderless while
    one of its brokers led them; per broker, all three kinds of incident together. A broker's
    pod is its latest registration before the event."""
    registrations = _registrations(export)
    kinds = ("brokers", *CANARY_INCIDENTS)  # summed by pod

    def counted(frame: DataFrame, **values: Column) -> DataFrame:
        return frame.select("pod", *(values.get(k, F.lit(0)).alias(k) for k in kinds))

    fencings = _with_pod(
        _broker_changes(export, params)
        .where(F.col("fencing"))
        .select("offset", "broker_id", "session_expiry"),
        registrations,
        lambda r: r["offset"] < F.col("offset"),
    )
    offline = _with_pod(
        replica_reports(export, params).select("id", "time_ms", "broker_id", "named_partitions"),
        registrations,
        lambda r: r["ms"] <= F.col("time_ms"),
    )
    leaderless = _with_pod(
        _became_leaderless(export, params),
        registrations,
        lambda r: r["offset"] < F.col("offset"),
    )
    every = (
        counted(_latest_pods(registrations, params.until_ms), brokers=F.lit(1))
        .unionByName(
            counted(
                fencings, fencings=F.lit(1), session_expiries=F.col("session_expiry").cast("int")
            )
        )
        .unionByName(counted(offline, offline_replicas=F.col("named_partitions")))
        .unionByName(counted(leaderless, leaderless_partitions=F.lit(1)))
        .groupBy("pod")
        .agg(*(F.sum(kind).cast("long").alias(kind) for kind in kinds))
    )
    incident_count = F.col("fencings") + F.col("offline_replicas") + F.col("leaderless_partitions")
    return sorted_rows(
        every.select(
            "pod",
            *kinds,
            F.try_divide(incident_count.cast("double"), F.col("brokers")).alias(
                "incidents_per_broker"
            ),
        ),
        "pod",
    )
