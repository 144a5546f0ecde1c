"""What a controller handler returns: the records to commit and the response to answer."""

from __future__ import annotations

import dataclasses
from typing import Any

from controlplane.controller.records import Record


@dataclasses.dataclass(slots=True)
class ControllerResult:
    records: list[Record]
    response: dict[str, Any]
    # Brokers whose session starts now (a registration is contact, as in Kafka's controller).
    contacts: tuple[int, ...] = ()
    # What the audit trail names the request by and Kafka's response does not carry (a renewed
    # token's id): told to the caller beside the response, never answered.
    notes: dict[str, Any] = dataclasses.field(default_factory=dict)
