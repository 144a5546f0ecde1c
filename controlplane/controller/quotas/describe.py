"""DescribeClientQuotas and the effective quota of a user and client id (Kafka's
ClientQuotasImage.describe and ClientQuotaManager precedence).

Pure functions over a quota map, so the API answers them from the projection without the
controller.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Mapping
from typing import Any

from controlplane.controller.errors import ApiError, Errors
from controlplane.controller.quotas.control import (
    CLIENT_ID,
    CLIENT_KEYS,
    ENTITY_TYPES,
    IP,
    USER,
    entity_data,
    entity_of,
)
from controlplane.controller.records import QuotaEntity


class MatchType(enum.Enum):
    """DescribeClientQuotas match types; ANY is Kafka's MATCH_TYPE_SPECIFIED."""

    EXACT = 0
    DEFAULT = 1
    ANY = 2


def _invalid(message: str) -> ApiError:
    return ApiError(Errors.INVALID_REQUEST, message)


def _filter(
    components: Iterable[Mapping[str, Any]],
) -> tuple[dict[str, str | None], set[str]]:
    """Kafka's ClientQuotasImage.describe checks: (exact matches, types that must be present)."""
    exact: dict[str, str | None] = {}
    present: set[str] = set()
    for component in components:
        entity_type = component.get("entity_type") or ""
        match_type = component.get("match_type")
        match = component.get("match")
        if not entity_type:
            raise _invalid("Invalid empty entity type.")
        if entity_type in exact or entity_type in present:
            raise _invalid(f"Entity type {entity_type} cannot appear more than once in the filter.")
        if entity_type not in ENTITY_TYPES:
            raise ApiError(Errors.UNSUPPORTED_VERSION, f"Unsupported entity type {entity_type}")
        match_type = MatchType[match_type] if isinstance(match_type, str) else match_type
        if match_type is MatchType.EXACT:
            if match is None:
                raise _invalid("Request specified EXACT, but set match string to null.")
            exact[entity_type] = match
        elif match_type is MatchType.DEFAULT:
            if match is not None:
                raise _invalid("Request specified DEFAULT, but also specified a match string.")
            exact[entity_type] = None
        elif match_type is MatchType.ANY:
            if match is not None:
                raise _invalid("Request specified ANY, but also specified a match string.")
            present.add(entity_type)
        else:
            raise ApiError(Errors.UNSUPPORTED_VERSION, f"Unknown match type {match_type}")
    if IP in exact or IP in present:
        others = {USER, CLIENT_ID}
        if others & exact.keys() or others & present:
            raise _invalid(
                "Invalid entity filter component combination. IP filter component should not "
                "be used with user or clientId filter component."
            )
    return exact, present


def _matches(
    entity: QuotaEntity, exact: Mapping[str, str | None], present: set[str], strict: bool
) -> bool:
    names = dict(entity)
    if strict and len(names) != len(exact) + len(present):
        return False
    for entity_type, name in exact.items():
        if entity_type not in names or names[entity_type] != name:
            return False
    return all(entity_type in names for entity_type in present)


def _sort_key(entity: QuotaEntity) -> tuple[tuple[str, int, str], ...]:
    return tuple((t, 0 if n is None else 1, n or "") for t, n in entity)


def describe_client_quotas(
    quotas: Mapping[QuotaEntity, Mapping[str, float]],
    components: Iterable[Mapping[str, Any]],
    strict: bool,
) -> dict[str, Any]:
    """DescribeClientQuotas over a quota map; raises ApiError for an invalid filter."""
    exact, present = _filter(components)
    entries = [
        {
            "entity": entity_data(entity),
            "values": [{"key": k, "value": v} for k, v in sorted(values.items())],
        }
        for entity, values in sorted(quotas.items(), key=lambda item: _sort_key(item[0]))
        if values and _matches(entity, exact, present, strict)
    ]
    return {
        "throttle_time_ms": 0,
        "error_code": 0,
        "error": Errors.NONE.name,
        "error_message": None,
        "entries": entries,
    }


def precedence(user: str, client_id: str) -> list[QuotaEntity]:
    """ClientQuotaManager's order, most specific first (/config/users/<user>/clients/<client-id>
    ... /config/clients/<default>)."""
    return [
        entity_of([(USER, user), (CLIENT_ID, client_id)]),
        entity_of([(USER, user), (CLIENT_ID, None)]),
        entity_of([(USER, user)]),
        entity_of([(USER, None), (CLIENT_ID, client_id)]),
        entity_of([(USER, None), (CLIENT_ID, None)]),
        entity_of([(USER, None)]),
        entity_of([(CLIENT_ID, client_id)]),
        entity_of([(CLIENT_ID, None)]),
    ]


def effective_quotas(
    quotas: Mapping[QuotaEntity, Mapping[str, float]], user: str, client_id: str
) -> dict[str, Any]:
    """Per key, the value of the most specific entity that sets it, and that entity."""
    values: list[dict[str, Any]] = []
    order = precedence(user, client_id)
    for key in CLIENT_KEYS:
        for entity in order:
            value = quotas.get(entity, {}).get(key)
            if value is not None:
                values.append({"key": key, "value": value, "entity": entity_data(entity)})
                break
    return {"user": user, "client_id": client_id, "values": values}
