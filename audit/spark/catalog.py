"""The audit reports' catalogue: each report's name, its titles, what it tells, and whether it
takes a moment (`--at`) or a period (`--from`/`--to`). The one list of reports: the Spark jobs
attach their builders to it (audit.spark.reports), and the web side (API, UI, the report runner)
reads it without importing PySpark."""

from __future__ import annotations

import dataclasses


@dataclasses.dataclass(frozen=True, slots=True)
class ReportInfo:
    name: str
    title: str  # short, for menus
    heading: str  # the report's own title (its HTML page's)
    about: str
    at_moment: bool = False  # takes --at (a moment) instead of --from/--to (a period)

    @property
    def times(self) -> tuple[str, ...]:
        return ("at",) if self.at_moment else ("from", "to")


CATALOG: dict[str, ReportInfo] = {
    r.name: r
    for r in (
        ReportInfo(
            "admin-activity",
            "Admin activity",
            "Admin activity: requests by day, principal, API and outcome",
            "Requests by principal, API, outcome and day.",
        ),
        ReportInfo(
            "denied-requests",
            "Denied requests",
            "Requests denied by authorization",
            "Each resource refused for authorization: who, what, from where.",
        ),
        ReportInfo(
            "forwarding",
            "Forwarding (KIP-590)",
            "Admin writes by forwarding broker (Envelope, KIP-590)",
            "Admin writes by forwarding broker, and the Envelope's share of them.",
        ),
        ReportInfo(
            "replica-health",
            "Replica health (KIP-589)",
            "Replica health: offline-replica reports by broker and log dir (KIP-589)",
            "Offline-replica incidents by broker and log dir, time to a new leader, "
            "partition-seconds without a leader.",
        ),
        ReportInfo(
            "broker-lifecycle",
            "Broker lifecycle",
            "Broker lifecycle: registrations, fencings, session expiries, controlled shutdowns",
            "Registrations, fencings, session expiries, controlled shutdowns per broker.",
        ),
        ReportInfo(
            "canary",
            "Canary (KIP-1095)",
            "Incidents on canary and other brokers (KIP-1095)",
            "Incidents on canary brokers against the others.",
        ),
        ReportInfo(
            "state-at",
            "State at a time",
            "Configs, ACLs and client quotas as they were",
            "Configs, ACLs and client quotas as they were, rebuilt from the log.",
            at_moment=True,
        ),
    )
}
REPORT_NAMES = tuple(CATALOG)
