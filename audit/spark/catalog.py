"""The audit reports' catalogue: each report is one `ReportInfo`, with its name, its titles,
what it tells, whether it takes a moment (`--at`) or a period (`--from`/`--to`), its columns in
order and the charts of its HTML page. The one list of reports: the Spark jobs register their
builders against it (`@builds`, audit.spark.builders), and the web side (API, UI, the report
runner) reads it without importing PySpark."""

from __future__ import annotations

import dataclasses

from audit.spark.charts import Chart, broker, broker_log_dir, by_column, forwarded_by


@dataclasses.dataclass(frozen=True, slots=True)
class ReportInfo:
    name: str
    title: str  # short, for menus
    heading: str  # the report's own title (its HTML page's)
    about: str
    # In order; docs/operators/audit-reports.md fixes some (see each report).
    columns: tuple[str, ...]
    charts: tuple[Chart, ...] = ()
    at_moment: bool = False  # takes --at (a moment) instead of --from/--to (a period)

    @property
    def times(self) -> tuple[str, ...]:
        return ("at",) if self.at_moment else ("from", "to")


# docs/operators/audit-reports.md fixes the columns of admin-activity, denied-requests,
# forwarding and the first six of state-at.
ADMIN_ACTIVITY = ReportInfo(
    "admin-activity",
    "Admin activity",
    "Admin activity: requests by day, principal, API and outcome",
    "Requests by principal, API, outcome and day.",
    columns=("day", "principal", "api", "outcome", "requests"),
    charts=(
        Chart(
            "Requests per day by outcome",
            by_column("day"),
            ("requests",),
            series=by_column("outcome"),
            stacked=True,
        ),
        Chart("Requests by principal", by_column("principal"), ("requests",)),
    ),
)
DENIED_REQUESTS = ReportInfo(
    "denied-requests",
    "Denied requests",
    "Requests denied by authorization",
    "Each resource refused for authorization: who, what, from where.",
    columns=(
        "time",
        "principal",
        "api",
        "resource",
        "error_code",
        "client_id",
        "client_address",
    ),
    charts=(
        Chart("Denials by principal", by_column("principal")),
        Chart("Denials by API", by_column("api")),
    ),
)
FORWARDING = ReportInfo(
    "forwarding",
    "Forwarding (KIP-590)",
    "Admin writes by forwarding broker (Envelope, KIP-590)",
    "Admin writes by forwarding broker, and the Envelope's share of them.",
    columns=(
        "forwarding_broker_id",
        "forwarding_principal",
        "api",
        "requests",
        "share_of_writes",
    ),
    charts=(
        Chart(
            "Admin writes: direct and forwarded (Envelope)",
            forwarded_by,
            ("requests",),
            kind="doughnut",
        ),
        Chart(
            "Admin writes by API",
            by_column("api"),
            ("requests",),
            series=forwarded_by,
            stacked=True,
        ),
    ),
)
REPLICA_HEALTH = ReportInfo(
    "replica-health",
    "Replica health (KIP-589)",
    "Replica health: offline-replica reports by broker and log dir (KIP-589)",
    "Offline-replica incidents by broker and log dir, time to a new leader, "
    "partition-seconds without a leader.",
    columns=(
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
    charts=(
        Chart(
            "Offline replicas, leaders moved, partitions left leaderless",
            broker_log_dir,
            ("offline_replicas", "leaders_moved", "partitions_left_leaderless"),
        ),
        Chart(
            "Partition-seconds without a leader",
            broker_log_dir,
            ("leaderless_partition_seconds",),
        ),
    ),
)
LIFECYCLE_COUNTS = (
    "registrations",
    "fencings",
    "session_expiries",
    "controlled_shutdowns",
    "unregistrations",
)
BROKER_LIFECYCLE = ReportInfo(
    "broker-lifecycle",
    "Broker lifecycle",
    "Broker lifecycle: registrations, fencings, session expiries, controlled shutdowns",
    "Registrations, fencings, session expiries, controlled shutdowns per broker.",
    columns=("broker_id", "pod", *LIFECYCLE_COUNTS),
    charts=(Chart("Broker lifecycle", broker, LIFECYCLE_COUNTS),),
)
CANARY_INCIDENTS = (  # each kind of incident, summed by pod
    "fencings",
    "session_expiries",
    "offline_replicas",
    "leaderless_partitions",
)
CANARY = ReportInfo(
    "canary",
    "Canary (KIP-1095)",
    "Incidents on canary and other brokers (KIP-1095)",
    "Incidents on canary brokers against the others.",
    columns=("pod", "brokers", *CANARY_INCIDENTS, "incidents_per_broker"),
    charts=(
        Chart("Incidents per broker", by_column("pod"), ("incidents_per_broker",)),
        Chart("Incidents by pod", by_column("pod"), CANARY_INCIDENTS),
    ),
)
STATE_AT = ReportInfo(
    "state-at",
    "State at a time",
    "Configs, ACLs and client quotas as they were",
    "Configs, ACLs and client quotas as they were, rebuilt from the log.",
    columns=(
        "kind",
        "resource_type",
        "resource_name",
        "key_or_principal",
        "value_or_operation",
        "permission_type",
        "pattern_type",
        "host",
    ),
    charts=(
        Chart("Entries by kind", by_column("kind")),
        Chart(
            "Entries by resource type",
            by_column("resource_type"),
            series=by_column("kind"),
            stacked=True,
        ),
    ),
    at_moment=True,
)

CATALOG: dict[str, ReportInfo] = {
    r.name: r
    for r in (
        ADMIN_ACTIVITY,
        DENIED_REQUESTS,
        FORWARDING,
        REPLICA_HEALTH,
        BROKER_LIFECYCLE,
        CANARY,
        STATE_AT,
    )
}
REPORT_NAMES = tuple(CATALOG)
