"""The audit trail's filter choices."""

from __future__ import annotations

from audit.models import Outcome
from audit.spark.catalog import CATALOG
from controlplane.controller.api_keys import ADMIN_APIS

AUDIT_APIS = sorted([*ADMIN_APIS, "Envelope"])
AUDIT_OUTCOMES = [value for value, _ in Outcome.choices]

# The audit reports (audit.spark.catalog), with what each tells and which times it takes.
REPORT_DESCRIPTIONS = [
    {"name": r.name, "title": r.title, "about": r.about, "times": r.times} for r in CATALOG.values()
]
