"""CreateAcls, DescribeAcls and DeleteAcls on the wire: Kafka's int8 codes for resource type,
pattern type, operation and permission type to and from the names the REST bodies take (the
enums of `controlplane.controller.acls.bindings` carry Kafka's codes), then the same RPCs."""

from __future__ import annotations

import enum
from typing import Any

from controlplane.controller.acls.bindings import (
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourceType,
)
from wire.apis.base import BOTH_ROLES, MAX_ITEMS_PER_REQUEST, WireRequest, wire_api
from wire.apis.common import respond, run_rpc
from wire.convert import Data, to_data

# The REST field each wire field becomes, and its enum (None: a string, kept as is).
_ENUMS: dict[str, type[enum.IntEnum]] = {
    "resource_type": ResourceType,
    "pattern_type": PatternType,
    "operation": AclOperation,
    "permission_type": AclPermissionType,
}


def _name(enum_type: type[enum.IntEnum], code: int) -> str:
    """Kafka reads a code it does not know as UNKNOWN (`fromCode`): the RPC answers it."""
    try:
        return enum_type(code).name
    except ValueError:
        return "UNKNOWN"


def _code(enum_type: type[enum.IntEnum], name: Any) -> int:
    member = enum_type.__members__.get(name) if isinstance(name, str) else None
    return int(member) if member is not None else 0


def _names(item: Data, renames: dict[str, str] | None = None) -> Data:
    """A wire item with its codes as names, its fields renamed to the REST body's."""
    out: Data = {}
    for field, value in item.items():
        field = (renames or {}).get(field, field)
        enum_type = _ENUMS.get(field.removesuffix("_filter"))
        out[field] = _name(enum_type, value) if enum_type is not None else value
    return out


def _codes(item: Data) -> Data:
    return {
        field: _code(_ENUMS[field], value) if field in _ENUMS else value
        for field, value in item.items()
    }


@wire_api("CreateAcls", 30, (1, 3), max_items=MAX_ITEMS_PER_REQUEST, roles=BOTH_ROLES)
def create_acls(request: WireRequest) -> Any:
    creations = to_data(request.body)["creations"]
    body = {"creations": [_names(c, {"resource_pattern_type": "pattern_type"}) for c in creations]}
    answered = run_rpc("CreateAcls", body, request)
    if answered.ok:
        results = answered.data["results"]
    else:
        results = [answered.error_fields() for _ in creations]
    return respond(request, {"results": results})


# DescribeAcls' filter fields on the wire -> the REST body's.
_DESCRIBE_FILTER = {
    "resource_type_filter": "resource_type",
    "resource_name_filter": "resource_name",
    "pattern_type_filter": "pattern_type",
    "principal_filter": "principal",
    "host_filter": "host",
}


@wire_api("DescribeAcls", 29, (1, 3), roles=BOTH_ROLES)
def describe_acls(request: WireRequest) -> Any:
    body = _names(to_data(request.body), _DESCRIBE_FILTER)
    answered = run_rpc("DescribeAcls", body, request)
    data = answered.data
    if "resources" not in data:  # a whole-request refusal: no resources answered
        return respond(request, {**answered.error_fields(), "resources": []})
    resources = [{**_codes(r), "acls": [_codes(a) for a in r["acls"]]} for r in data["resources"]]
    return respond(
        request,
        {
            "error_code": data.get("error_code", answered.error_code),
            "error_message": data.get("error_message", answered.error_message),
            "resources": resources,
        },
    )


@wire_api("DeleteAcls", 31, (1, 3), max_items=MAX_ITEMS_PER_REQUEST, roles=BOTH_ROLES)
def delete_acls(request: WireRequest) -> Any:
    filters = to_data(request.body)["filters"]
    answered = run_rpc("DeleteAcls", {"filters": [_names(f) for f in filters]}, request)
    if answered.ok:
        results = [
            {**r, "matching_acls": [_codes(m) for m in r["matching_acls"]]}
            for r in answered.data["filter_results"]
        ]
    else:
        results = [{**answered.error_fields(), "matching_acls": []} for _ in filters]
    return respond(request, {"filter_results": results})
