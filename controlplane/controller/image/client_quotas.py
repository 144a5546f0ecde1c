"""The client quotas' part of the image (Kafka's ClientQuotasImage and ClientQuotasDelta).

Replays ClientQuotaRecord.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

from controlplane.controller.records import ClientQuotaRecord, QuotaEntity, Record


@dataclasses.dataclass(slots=True)
class ClientQuotasImage:
    # Quota values by entity (sorted (type, name or None) pairs).
    client_quotas: dict[QuotaEntity, dict[str, float]] = dataclasses.field(default_factory=dict)

    def put_client_quota(self, entity: QuotaEntity, key: str, value: float | None) -> None:
        values = self.client_quotas.setdefault(entity, {})
        if value is None:
            values.pop(key, None)
            if not values:
                del self.client_quotas[entity]
        else:
            values[key] = value

    def apply(self, delta: ClientQuotasDelta) -> None:
        for (entity, quota_key), quota in delta.changed_client_quotas.items():
            self.put_client_quota(entity, quota_key, quota)

    def as_comparable(self) -> dict[str, Any]:
        return {
            "client_quotas": {
                ",".join(f"{t}={'<default>' if n is None else repr(n)}" for t, n in e): dict(
                    sorted(v.items())
                )
                for e, v in sorted(self.client_quotas.items(), key=lambda item: repr(item[0]))
            }
        }


class ClientQuotasDelta:
    """Quota values changed over a ClientQuotasImage, by (entity, key); None marks a removal."""

    def __init__(self, image: ClientQuotasImage) -> None:
        self.image = image
        self.changed_client_quotas: dict[tuple[QuotaEntity, str], float | None] = {}

    def replayers(self) -> dict[type[Record], Callable[[Any, int], None]]:
        return {ClientQuotaRecord: self.replay_client_quota}

    def client_quotas_of(self, entity: QuotaEntity) -> dict[str, float]:
        values = dict(self.image.client_quotas.get(entity, {}))
        for (changed_entity, key), value in self.changed_client_quotas.items():
            if changed_entity == entity:
                if value is None:
                    values.pop(key, None)
                else:
                    values[key] = value
        return values

    def replay_client_quota(self, record: ClientQuotaRecord, offset: int) -> None:
        entity = record.entity
        types = [entity_type for entity_type, _ in entity]
        if not types or types != sorted(set(types)):
            raise ValueError(f"ClientQuotaRecord with an invalid entity {entity!r}")
        self.changed_client_quotas[(entity, record.key)] = None if record.remove else record.value
