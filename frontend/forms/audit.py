"""The audit trail's filter choices."""

from __future__ import annotations

from audit.models import Outcome
from controlplane.controller.api_keys import ADMIN_APIS

AUDIT_APIS = sorted([*ADMIN_APIS, "Envelope"])
AUDIT_OUTCOMES = [value for value, _ in Outcome.choices]
