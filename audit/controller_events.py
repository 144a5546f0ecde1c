"""Audit events of the controller's own decisions (not admin requests): fencing lapsed brokers.

The fencing rule (controlplane.runtime.controller.FencingHoldOffWatch) leaves one event per
decision, as `User:controller`, naming the brokers, each with the reason as its
`error_message`: `FencingHeldOff` when the controller holds off fencing (a full disruption or
its own ingress measured overloaded), `FencingResumed` when it hears again, `FencingHoldOffExpired`
when a hold-off lasted its longest and the silent brokers were fenced anyway, and
`StaleBrokersFenced` for a fencing of lapsed brokers while others are heard.
"""

from __future__ import annotations

import logging

from django.db import DatabaseError

from audit.models import AuditEvent, Outcome
from controlplane.runtime.lease import now_ms

logger = logging.getLogger("controlplane.audit")
CONTROLLER = "User:controller"


def audit_fencing_hold_off(what: str, brokers: list[int], unfenced: int, reason: str) -> None:
    resources = [
        {
            "resource_type": "BROKER",
            "resource_name": str(b),
            "error_code": 0,
            "error_message": reason or None,
        }
        for b in brokers
    ]
    try:
        AuditEvent.objects.create(
            time_ms=now_ms(),
            principal=CONTROLLER,
            api=what,
            resources=resources,
            outcome=Outcome.SUCCESS,
            error_code=0,
            http_status=200,
        )
    except DatabaseError:
        logger.exception("could not audit %s", what)
        return
    logger.warning("%s: brokers %s (%d unfenced): %s", what, brokers, unfenced, reason)
