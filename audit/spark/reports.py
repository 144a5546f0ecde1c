"""The audit reports: one function per report, each a DataFrame computed over an export with
Spark's DataFrame API (nothing is collected to the driver to compute it; the caller collects or
writes the small result). Here: the reports on the audit trail (admin-activity, denied-requests,
forwarding), and every report of the catalogue with its builder; the other builders are in
audit.spark.incidents and audit.spark.state, each registered with `@builds`.
"""

from __future__ import annotations

import dataclasses

from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F

from audit.resources import AUTHORIZATION_CODES
from audit.spark import incidents, state  # noqa: F401  (their builders register on import)
from audit.spark.builders import Builder, builder_of, builds
from audit.spark.catalog import CATALOG, ReportInfo
from audit.spark.frames import REPLICA_REPORT, in_period, resources, sorted_rows
from audit.spark.params import Params, ReportError
from audit.spark.reader import Export

# The admin requests a broker may forward in an Envelope (KIP-590; listed in
# docs/reference/kafka-protocol.md).
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
    "AlterUserScramCredentials",
    "AlterPartitionReassignments",
    "ListPartitionReassignments",
    "UpdateFeatures",
)


@builds("admin-activity")
def admin_activity(export: Export, params: Params) -> DataFrame:
    """Requests by day, principal, API and outcome. A broker's AlterReplicaState report is not
    an admin request and is left out."""
    events = in_period(export.audit_events, "time_ms", params)
    return sorted_rows(
        events.where(F.col("api") != REPLICA_REPORT)
        .groupBy(F.col("date").alias("day"), "principal", "api", "outcome")
        .agg(F.count(F.lit(1)).alias("requests")),
        "day",
        "principal",
        "api",
        "outcome",
    )


@builds("denied-requests")
def denied_requests(export: Export, params: Params) -> DataFrame:
    """One row per resource refused for authorization, newest first; a DENIED request naming no
    such resource is one row with resource "" and the request's error code."""
    codes = sorted(AUTHORIZATION_CODES)
    refused = F.filter(resources(), lambda r: r["error_code"].isin(codes))
    unnamed = F.array(
        F.struct(
            F.lit(None).cast("string").alias("resource_type"),
            F.lit(None).cast("string").alias("resource_name"),
            F.col("error_code").alias("error_code"),
        )
    )
    rows = F.when(
        (F.col("outcome") == "DENIED") & (F.coalesce(F.size(refused), F.lit(0)) <= 0), unnamed
    ).otherwise(refused)
    named = F.col("refused.resource_type").isNotNull()
    return (
        # A request naming a refused resource failed, and its error code is its first failed
        # resource's (audit.resources.request_outcome): the others need not be parsed.
        in_period(export.audit_events, "time_ms", params)
        .where(F.col("error_code") != 0)
        .select(
            "time",
            "id",
            "principal",
            "api",
            "client_id",
            "client_host",
            F.posexplode(rows).alias("position", "refused"),
        )
        .transform(
            sorted_rows,
            F.col("time").desc(),
            F.col("id").desc(),
            "position",
            aggregated=False,
        )
        .select(
            "time",
            "principal",
            "api",
            F.when(
                named,
                F.concat_ws(":", F.col("refused.resource_type"), F.col("refused.resource_name")),
            )
            .otherwise(F.lit(""))
            .alias("resource"),
            F.col("refused.error_code").alias("error_code"),
            "client_id",
            F.col("client_host").alias("client_address"),
        )
    )


@builds("forwarding")
def forwarding(export: Export, params: Params) -> DataFrame:
    """Admin writes (the forwardable APIs, any outcome) by the broker that forwarded them in an
    Envelope (direct requests: broker id null, principal ""), with their share of every admin
    write in the period."""
    writes = in_period(export.audit_events, "time_ms", params).where(
        F.col("api").isin(*FORWARDABLE_APIS)
    )
    every_write = Window.partitionBy()  # the grouped rows are few: one partition holds them
    grouped = writes.groupBy("forwarding_broker_id", "forwarding_principal", "api").agg(
        F.count(F.lit(1)).alias("requests")
    )
    return sorted_rows(
        grouped.select(
            "forwarding_broker_id",
            "forwarding_principal",
            "api",
            "requests",
            F.try_divide(F.col("requests"), F.sum("requests").over(every_write)).alias(
                "share_of_writes"
            ),
        ),
        F.col("forwarding_broker_id").asc_nulls_first(),
        "forwarding_principal",
        "api",
    )


# --- the registry ------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True, slots=True)
class Report:
    """A catalogued report with its builder."""

    info: ReportInfo
    build: Builder

    @property
    def name(self) -> str:
        return self.info.name

    @property
    def title(self) -> str:
        return self.info.heading

    @property
    def at_moment(self) -> bool:
        return self.info.at_moment

    @property
    def columns(self) -> tuple[str, ...]:
        return self.info.columns


REPORTS: dict[str, Report] = {
    name: Report(info, builder_of(info)) for name, info in CATALOG.items()
}


def report_build(name: str, export: Export, params: Params) -> DataFrame:
    """The DataFrame of report `name` (refused with the known names when there is none)."""
    report = REPORTS.get(name)
    if report is None:
        raise ReportError(f"unknown report {name!r}: known reports are {', '.join(REPORTS)}")
    return report.build(export, params).select(*report.columns)
