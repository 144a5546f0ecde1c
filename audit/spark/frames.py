"""What the report jobs share: the period filter, and reading a record's
JSON data and an audit event's resources as Spark columns.

Records are read as the controller's image replays them (controlplane/controller/image/): a
PartitionChangeRecord's `leader` -2 leaves the leader as it is and -1 leaves the partition
without one; a RemoveTopicRecord takes the topic's configs with it; a
BrokerRegistrationChangeRecord with `fenced` 1 fences a broker (a session expiry when the
controller did it itself: principal `User:controller`), with `in_controlled_shutdown` 1 starts
a controlled shutdown.
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from audit.spark.params import Params, day

REPLICA_REPORT = "AlterReplicaState"  # a broker's report, audited when the controller applies it
CONTROLLER = "User:controller"  # the principal of the controller's own changes
NO_LEADER, NO_LEADER_CHANGE = -1, -2
RESOURCES = "array<struct<resource_type:string,resource_name:string,error_code:int>>"


def in_period(frame: DataFrame, ms_column: str, params: Params) -> DataFrame:
    """Rows whose time lies in [from, to] (both inclusive); the `date` partition is filtered
    too, so Spark reads only the days that can hold them."""
    if params.from_ms is not None:
        frame = frame.where(F.col("date") >= day(params.from_ms))
        frame = frame.where(F.col(ms_column) >= params.from_ms)
    if params.to_ms is not None:
        frame = frame.where(F.col("date") <= day(params.to_ms))
        frame = frame.where(F.col(ms_column) <= params.to_ms)
    return frame


def data(ddl: str) -> Column:
    """The record's JSON data parsed once into the fields `ddl` names (a field that is absent
    or of another JSON type reads null; a number read as a string keeps its value)."""
    return F.from_json(F.col("data"), ddl)


def leader() -> Column:
    """The leader a partition record sets (-2: unchanged, -1: none)."""
    return data("leader int")["leader"]


def latest(*columns: str | Column) -> Column:
    """The values of the row with the highest offset, as a struct with nulls kept: the record
    that wins when the log is replayed."""
    return F.max(F.struct(F.col("offset").alias("offset"), *columns))


def resources() -> Column:
    """An audit event's resources: [{resource_type, resource_name, error_code}]."""
    return F.from_json(F.col("resources"), RESOURCES)


def count_if(condition: Column) -> Column:
    return F.sum(F.when(condition, 1).otherwise(0))


def sorted_rows(frame: DataFrame, *order: str | Column, aggregated: bool = True) -> DataFrame:
    """A report's result in order, in one partition: sorted there without the sampling job and
    range shuffle a global sort costs, and read back in that order. An aggregate's few rows
    are gathered without a shuffle; rows that are not (each a request) are shuffled there, so
    that the scan before keeps its parallelism."""
    one = frame.coalesce(1) if aggregated else frame.repartition(1)
    return one.sortWithinPartitions(*order)
