"""The export's schema: what `export_audit` writes and the Spark jobs read. Versioned.

Two Parquet datasets under the export path, partitioned by day (`date=YYYY-MM-DD`, UTC):
`metadata_log/` (one row per metadata record) and `audit_events/` (one row per audited
request). Every stable field has a column of its own; a record's data travels whole as JSON
(`data`, `resources`) beside typed columns for what reports ask for most (topic, partition,
broker, principal, resource). Sensitive values are never in it (see `audit.export`).

Rules for changing it: adding a nullable column is a minor change (SCHEMA_VERSION's minor part
goes up; readers of the same major version read it, the new column null in older files);
renaming, retyping or removing a column is a major change, and readers refuse an export of a
major version they do not know. This module is pure Python (no Django, no Spark, no Arrow), so
the exporter, the Spark jobs and the documentation test share it.
"""

from __future__ import annotations

import dataclasses

SCHEMA_VERSION = "1.0"
PARTITION_COLUMN = "date"  # the day of the row's time, UTC, as YYYY-MM-DD (directory name)


@dataclasses.dataclass(frozen=True, slots=True)
class Column:
    name: str
    type: str  # long | int | double | string | timestamp (UTC, milliseconds)
    doc: str
    nullable: bool = True


@dataclasses.dataclass(frozen=True, slots=True)
class Dataset:
    name: str
    doc: str
    columns: tuple[Column, ...]
    key: str  # the column that identifies a row once (exactly-once is checked on it)

    @property
    def names(self) -> list[str]:
        return [c.name for c in self.columns]

    def spark_ddl(self) -> str:
        """The dataset's schema as Spark's DDL string (the date partition column last)."""
        types = {"long": "BIGINT", "int": "INT", "double": "DOUBLE", "string": "STRING"}
        columns = [
            f"`{c.name}` {types.get(c.type, 'TIMESTAMP')}" + ("" if c.nullable else " NOT NULL")
            for c in self.columns
        ]
        return ", ".join([*columns, f"`{PARTITION_COLUMN}` STRING"])


METADATA_LOG = Dataset(
    name="metadata_log",
    doc="The metadata log: every record the controller committed, in offset order.",
    key="offset",
    columns=(
        Column("offset", "long", "The record's offset: gap-free from 0.", nullable=False),
        Column("record_type", "string", "Kafka's record name (TopicRecord, ...).", False),
        Column("controller_epoch", "int", "The epoch of the controller that wrote it.", False),
        Column("timestamp_ms", "long", "When it was committed (epoch milliseconds).", False),
        Column("time", "timestamp", "`timestamp_ms` as a UTC timestamp.", False),
        Column(
            "principal",
            "string",
            "The initial principal of the request that produced it (`User:controller` for "
            "the controller's own changes, such as fencing a broker whose session lapsed).",
            False,
        ),
        Column("client_id", "string", "The requesting client's id.", False),
        Column("client_host", "string", "The requesting client's address.", False),
        Column("request_id", "string", "The request id (X-Request-ID) that produced it.", False),
        Column(
            "broker_id",
            "int",
            "The broker a broker record is about (RegisterBrokerRecord, "
            "BrokerRegistrationChangeRecord, UnregisterBrokerRecord).",
        ),
        Column("topic_id", "string", "The topic id of a topic or partition record."),
        Column(
            "topic",
            "string",
            "The topic's name (resolved from the log's TopicRecord: deleted topics keep theirs).",
        ),
        Column("partition", "int", "The partition index of a partition record."),
        Column(
            "resource_type",
            "string",
            "The resource of a ConfigRecord or an ACL record (TOPIC, BROKER, CLUSTER, ...).",
        ),
        Column("resource_name", "string", "That resource's name."),
        Column(
            "data",
            "string",
            "The record's data as JSON, as the metadata log holds it, except that a sensitive "
            "config value reads `(redacted)`.",
            False,
        ),
    ),
)

AUDIT_EVENTS = Dataset(
    name="audit_events",
    doc="The audit trail: every admin request, allowed or denied, and every applied "
    "AlterReplicaState report.",
    key="id",
    columns=(
        Column("id", "long", "The event's id.", False),
        Column("time_ms", "long", "When it was audited (epoch milliseconds).", False),
        Column("time", "timestamp", "`time_ms` as a UTC timestamp.", False),
        Column("principal", "string", "The initial principal.", False),
        Column("client_id", "string", "The client's id.", False),
        Column("client_host", "string", "The client's address.", False),
        Column(
            "forwarding_principal",
            "string",
            "The broker principal that forwarded it in an Envelope (empty when sent directly).",
            False,
        ),
        Column("forwarding_host", "string", "That broker's address.", False),
        Column("forwarding_broker_id", "int", "That broker's id, when it said so."),
        Column("api", "string", "Kafka's RPC name (CreateTopics, ...).", False),
        Column("outcome", "string", "SUCCESS, PARTIAL, FAILED or DENIED.", False),
        Column("error_code", "int", "Kafka's error code (the first failed resource's).", False),
        Column("http_status", "int", "The HTTP status answered.", False),
        Column("request_id", "string", "The request id.", False),
        Column("first_offset", "long", "The first metadata offset it wrote (null: none)."),
        Column("last_offset", "long", "The last metadata offset it wrote."),
        Column(
            "duration_ms",
            "double",
            "How long it took (for AlterReplicaState: from the "
            "report's arrival to the commit that applied it).",
            False,
        ),
        Column("resource_type", "string", "The first resource's type."),
        Column("resource_name", "string", "The first resource's name."),
        Column("topic", "string", "The first TOPIC resource's name."),
        Column(
            "broker_id",
            "int",
            "The first BROKER resource's id (UnregisterBroker, AlterReplicaState).",
        ),
        Column(
            "resources",
            "string",
            "Every resource it named with its error code, as JSON "
            "(`[{resource_type, resource_name, error_code}]`).",
            False,
        ),
    ),
)

DATASETS = {d.name: d for d in (METADATA_LOG, AUDIT_EVENTS)}


def major(version: str) -> int:
    return int(version.split(".", 1)[0])


def readable(version: str) -> bool:
    """Whether these jobs can read an export written with schema `version`."""
    try:
        return major(version) == major(SCHEMA_VERSION)
    except (ValueError, AttributeError):
        return False


def markdown() -> str:
    """The schema as docs/audit-export-schema.md documents it (a test keeps the two the same)."""
    lines = [f"Schema version {SCHEMA_VERSION}.", ""]
    for dataset in DATASETS.values():
        lines += [
            f"`{dataset.name}/` ({PARTITION_COLUMN}=YYYY-MM-DD): {dataset.doc}",
            "",
            "| column | type | meaning |",
            "| --- | --- | --- |",
        ]
        lines += [
            f"| `{c.name}` | {c.type}{'' if c.nullable else ', not null'} | {c.doc} |"
            for c in dataset.columns
        ]
        lines.append("")
    return "\n".join(lines).rstrip() + "\n"


if __name__ == "__main__":  # python -m audit.spark.schema > docs/audit-export-schema.md
    print("# The audit export's schema\n")
    print(
        "Generated from `audit/spark/schema.py` (`python -m audit.spark.schema`); "
        "tests/unit/test_audit_schema.py keeps this file equal to it.\n"
    )
    print(markdown(), end="")
