"""The client quotas' part of the image (Kafka's ClientQuotasImage and ClientQuotasDelta).

Replays ClientQuotaRecord.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterator
from typing import Any

from controlplane.controller.records import ClientQuotaRecord, QuotaEntity, Record


def _entity_order(entity: QuotaEntity) -> tuple[tuple[str, bool, str], ...]:
    """A total order of entities: a default entity (name None) before the named ones."""
    return tuple((entity_type, name is not None, name or "") for entity_type, name in entity)


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

    def records(self) -> Iterator[Record]:
        """The records that rebuild this part in an empty image: one per quota key, by entity
        and key."""
        for entity in sorted(self.client_quotas, key=_entity_order):
            for key, value in sorted(self.client_quotas[entity].items()):
                yield ClientQuotaRecord(entity=entity, key=key, value=value)


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
