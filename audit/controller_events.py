"""Audit events of the controller's own decisions (not admin requests): holding off fencing.

When most brokers lapse at once the controller suspects its own ingress and does not fence
them (controlplane.runtime.controller.FencingHoldOffWatch); the trail keeps one event when it
begins (`FencingHeldOff`) and one when heartbeats flow again (`FencingResumed`), naming the
brokers, as `User:controller`.
"""

from __future__ import annotations

import logging

from django.db import DatabaseError

from audit.models import AuditEvent, Outcome
from controlplane.runtime.lease import now_ms

logger = logging.getLogger("controlplane.audit")
CONTROLLER = "User:controller"


def audit_fencing_hold_off(what: str, brokers: list[int], unfenced: int) -> None:
    resources = [
        {"resource_type": "BROKER", "resource_name": str(b), "error_code": 0} for b in brokers
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
    logger.warning("%s: brokers %s (%d unfenced)", what, brokers, unfenced)
