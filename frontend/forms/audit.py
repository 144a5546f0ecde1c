"""The audit trail's filter choices."""

from __future__ import annotations

from audit.models import Outcome
from controlplane.controller.api_keys import ADMIN_APIS

AUDIT_APIS = sorted([*ADMIN_APIS, "Envelope"])
AUDIT_OUTCOMES = [value for value, _ in Outcome.choices]

# The audit reports (audit.spark.job), with what each tells and which times it takes.
REPORT_DESCRIPTIONS = [
    {
        "name": "admin-activity",
        "title": "Admin activity",
        "about": "Requests by principal, API, outcome and day.",
        "times": ("from", "to"),
    },
    {
        "name": "denied-requests",
        "title": "Denied requests",
        "about": "Each resource refused for authorization: who, what, from where.",
        "times": ("from", "to"),
    },
    {
        "name": "forwarding",
        "title": "Forwarding (KIP-590)",
        "about": "Admin writes by forwarding broker, and the Envelope's share of them.",
        "times": ("from", "to"),
    },
    {
        "name": "replica-health",
        "title": "Replica health (KIP-589)",
        "about": "Offline-replica incidents by broker and log dir, time to a new leader, "
        "partition-seconds without a leader.",
        "times": ("from", "to"),
    },
    {
        "name": "broker-lifecycle",
        "title": "Broker lifecycle",
        "about": "Registrations, fencings, session expiries, controlled shutdowns per broker.",
        "times": ("from", "to"),
    },
    {
        "name": "canary",
        "title": "Canary (KIP-1095)",
        "about": "Incidents on canary brokers against the others.",
        "times": ("from", "to"),
    },
    {
        "name": "state-at",
        "title": "State at a time",
        "about": "Configs, ACLs and client quotas as they were, rebuilt from the log.",
        "times": ("at",),
    },
]
