"""Client quotas with Kafka's ClientQuotaControlManager semantics (KIP-546, KIP-612).

An entity is a set of (entity type, name) pairs, the name None for the default entity. Allowed
combinations are user, client-id, user + client-id and ip (never combined). Keys by entity:
producer_byte_rate, consumer_byte_rate (integral), request_percentage and
controller_mutation_rate (fractional) for user and client-id entities; connection_creation_rate
(integral) for ip entities. Values must be positive. A set op that changes nothing and a remove of
a key that is not set write no record; as in Kafka, a remove op is not validated against the keys
(removing an unknown key is a no-op). One entity's invalid op refuses that whole entity; other
entities of the request still apply. Describe and the effective quota are in `describe`.
"""

from __future__ import annotations

import enum
import ipaddress
import math
from collections.abc import Iterable, Mapping
from typing import Any, Protocol

from controlplane.controller.errors import ApiError, Errors
from controlplane.controller.records import ClientQuotaRecord, QuotaEntity

USER = "user"
CLIENT_ID = "client-id"
IP = "ip"
ENTITY_TYPES = (USER, CLIENT_ID, IP)

PRODUCER_BYTE_RATE = "producer_byte_rate"
CONSUMER_BYTE_RATE = "consumer_byte_rate"
REQUEST_PERCENTAGE = "request_percentage"
CONTROLLER_MUTATION_RATE = "controller_mutation_rate"
CONNECTION_CREATION_RATE = "connection_creation_rate"

LONG_MAX = 2**63 - 1
INT_MAX = 2**31 - 1


class QuotaType(enum.Enum):
    """The ConfigDef type of a quota key (QuotaConfigs)."""

    LONG = LONG_MAX
    INT = INT_MAX
    DOUBLE = None


# QuotaConfigs.userConfigs() / clientConfigs() and ipConfigs().
CLIENT_KEYS: dict[str, QuotaType] = {
    PRODUCER_BYTE_RATE: QuotaType.LONG,
    CONSUMER_BYTE_RATE: QuotaType.LONG,
    REQUEST_PERCENTAGE: QuotaType.DOUBLE,
    CONTROLLER_MUTATION_RATE: QuotaType.DOUBLE,
}
IP_KEYS: dict[str, QuotaType] = {CONNECTION_CREATION_RATE: QuotaType.INT}


def entity_of(pairs: Iterable[tuple[str, str | None]]) -> QuotaEntity:
    """The canonical entity: pairs sorted by entity type."""
    return tuple(sorted(pairs, key=lambda pair: pair[0]))


def entity_data(entity: QuotaEntity) -> list[dict[str, Any]]:
    return [{"entity_type": t, "entity_name": n} for t, n in entity]


def _invalid(message: str) -> ApiError:
    return ApiError(Errors.INVALID_REQUEST, message)


def is_valid_ip(name: str | None) -> bool:
    if name is None:
        return True  # the default ip entity
    try:
        ipaddress.ip_address(name)
    except ValueError:
        return False
    return True


def validate_entity(pairs: Iterable[Mapping[str, Any]]) -> QuotaEntity:
    """Kafka's validateEntity: known types, no duplicates, no empty names."""
    seen: dict[str, str | None] = {}
    for pair in pairs:
        entity_type = pair.get("entity_type")
        entity_name = pair.get("entity_name")
        if entity_type in seen:
            raise _invalid(
                f"Invalid empty client quota entity, duplicate entity entry {entity_type}"
            )
        if entity_type not in ENTITY_TYPES:
            raise _invalid(f"Unhandled client quota entity type: {entity_type}")
        seen[entity_type] = entity_name
        if entity_name is not None and entity_name == "":
            raise _invalid(f"Empty {entity_type} not supported")
    if not seen:
        raise _invalid("Invalid empty client quota entity")
    return entity_of(seen.items())


def keys_for_entity(entity: QuotaEntity) -> dict[str, QuotaType]:
    """Kafka's configKeysForEntityType: the allowed combinations and their keys."""
    names = dict(entity)
    if IP in names:
        if USER in names or CLIENT_ID in names:
            raise _invalid(
                "Invalid quota entity combination, IP entity should not be combined with "
                "User or ClientId"
            )
        if not is_valid_ip(names[IP]):
            raise _invalid(f"{names[IP]} is not a valid IP or resolvable host.")
        return IP_KEYS
    if USER in names or CLIENT_ID in names:
        return CLIENT_KEYS
    raise _invalid("Invalid empty client quota entity")


def validate_quota_value(keys: Mapping[str, QuotaType], key: str, value: float) -> None:
    """Kafka's validateQuotaKeyValue."""
    quota_type = keys.get(key)
    if quota_type is None:
        raise _invalid(f"Unknown quota key {key} (invalid configuration key for this entity)")
    if not math.isfinite(value):
        raise _invalid(f"Quota {key} must be a finite number")
    if value <= 0.0:
        raise _invalid(f"Quota {key} must be greater than 0")
    if quota_type is QuotaType.DOUBLE:
        return
    if value > quota_type.value:
        article = "an" if quota_type is QuotaType.INT else "a"
        raise _invalid(f"Proposed value for {key} is too large for {article} {quota_type.name}.")
    if value - math.floor(value) > 1e-16:
        raise _invalid(f"Quota {key} must be an integer.")


def _ops(raw_ops: Iterable[Mapping[str, Any]]) -> dict[str, float | None]:
    ops: dict[str, float | None] = {}
    for raw in raw_ops:
        key = raw["key"]
        if key in ops:
            raise _invalid(f"Duplicate quota key {key} not updating quota for this entity")
        ops[key] = None if raw.get("remove", False) else float(raw.get("value", 0.0))
    return ops


def alter_entity(
    current: Mapping[str, float], entity: QuotaEntity, ops: Mapping[str, float | None]
) -> list[ClientQuotaRecord]:
    """Kafka's alterClientQuotaEntity for a validated entity: the records, or ApiError."""
    keys = keys_for_entity(entity)
    records: list[ClientQuotaRecord] = []
    for key, value in ops.items():
        if value is None:
            if key in current:
                records.append(ClientQuotaRecord(entity=entity, key=key, remove=True))
            continue
        validate_quota_value(keys, key, value)
        if current.get(key) != value:
            records.append(ClientQuotaRecord(entity=entity, key=key, value=value))
    return records


class QuotaView(Protocol):
    """What alter needs of the metadata: an entity's current values (a MetadataDelta)."""

    def client_quotas_of(self, entity: QuotaEntity) -> dict[str, float]: ...


def alter_client_quotas(
    view: QuotaView, payload: Mapping[str, Any]
) -> tuple[list[ClientQuotaRecord], dict[str, Any]]:
    """AlterClientQuotas: per entry an answer; records only for valid, changing entries, none
    at all with `validate_only`. Later entries of a request see the earlier ones."""
    pending: dict[QuotaEntity, dict[str, float]] = {}
    records: list[ClientQuotaRecord] = []
    answers: list[dict[str, Any]] = []
    for entry in payload.get("entries", ()):
        raw_entity = list(entry.get("entity", ()))
        try:
            ops = _ops(entry.get("ops", ()))
            entity = validate_entity(raw_entity)
            current = pending.get(entity)
            if current is None:
                current = view.client_quotas_of(entity)
            changes = alter_entity(current, entity, ops)
        except ApiError as error:
            answers.append({**error.as_fields(), "entity": raw_entity})
            continue
        updated = dict(current)
        for record in changes:
            if record.remove:
                updated.pop(record.key, None)
            else:
                updated[record.key] = record.value
        pending[entity] = updated
        records.extend(changes)
        answers.append(
            {
                "error_code": 0,
                "error": Errors.NONE.name,
                "error_message": None,
                "entity": raw_entity,
            }
        )
    if payload.get("validate_only", False):
        records = []
    return records, {"throttle_time_ms": 0, "entries": answers}
