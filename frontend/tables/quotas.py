"""Rows of the client quota page: one per entity, its keys in Kafka's order."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable

from controlplane.controller.records import QuotaEntity

QUOTA_KEYS = (
    "producer_byte_rate",
    "consumer_byte_rate",
    "request_percentage",
    "controller_mutation_rate",
    "connection_creation_rate",
)
DEFAULT_ENTITY = "<default>"
# The quota form's fields naming each entity type, and whether it names the default.
ENTITY_FIELDS = {"user": "user", "client-id": "client_id", "ip": "ip"}


def format_quota(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else str(value)


@dataclasses.dataclass(frozen=True, slots=True)
class QuotaValue:
    key: str
    value: str
    remove_params: dict[str, str]  # the quota form's fields that remove this key


@dataclasses.dataclass(frozen=True, slots=True)
class QuotaRow:
    entity: list[tuple[str, str]]  # (entity type, name or "<default>")
    values: list[QuotaValue]
    edit_params: dict[str, str]  # the quota form's fields naming this entity

    @property
    def label(self) -> str:
        return ", ".join(f"{kind}={name}" for kind, name in self.entity)


def entity_params(entity: QuotaEntity) -> dict[str, str]:
    params: dict[str, str] = {}
    for entity_type, name in entity:
        field = ENTITY_FIELDS.get(entity_type)
        if field is None:
            continue
        if name is None:
            params[f"{field}_default"] = "on"
        else:
            params[field] = name
    return params


def quota_rows(quotas: Iterable[tuple[QuotaEntity, str, float]]) -> list[QuotaRow]:
    """One row per entity, its keys in Kafka's order; quotas come ordered by entity."""
    by_entity: dict[QuotaEntity, dict[str, float]] = {}
    for entity, key, value in quotas:
        by_entity.setdefault(entity, {})[key] = value
    rows = []
    for entity, values in by_entity.items():
        params = entity_params(entity)
        ordered = sorted(values, key=lambda k: (QUOTA_KEYS.index(k) if k in QUOTA_KEYS else 99, k))
        rows.append(
            QuotaRow(
                entity=[(t, DEFAULT_ENTITY if n is None else n) for t, n in entity],
                values=[
                    QuotaValue(
                        key=key,
                        value=format_quota(values[key]),
                        remove_params={**params, "key": key, "action": "remove"},
                    )
                    for key in ordered
                ],
                edit_params=params,
            )
        )
    return rows
