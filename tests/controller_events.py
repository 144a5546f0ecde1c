"""Writes the tests make straight on this process's controller, as its timer or an admin would."""

from __future__ import annotations

from typing import Any

from controlplane.runtime.controller import get_runtime
from controlplane.runtime.conversation import ControllerEvent, RequestContext


def create_acls(*creations: dict[str, str]) -> dict[str, Any]:
    """CreateAcls as User:admin on the embedded controller; its response."""
    event = ControllerEvent(
        "CreateAcls", {"creations": list(creations)}, RequestContext(principal="User:admin")
    )
    return get_runtime().handle(event).response
