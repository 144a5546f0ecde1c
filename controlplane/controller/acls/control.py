"""ACL changes as records (Kafka's AclControlManager): validated per creation, atomic per item."""

from __future__ import annotations

import ipaddress
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

from controlplane.controller.acls.bindings import (
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourceType,
)
from controlplane.controller.errors import Errors
from controlplane.controller.image import MetadataDelta
from controlplane.controller.metadata_versions import CIDR_ACLS_METADATA_VERSION
from controlplane.controller.records import (
    AccessControlEntryRecord,
    Record,
    RemoveAccessControlEntryRecord,
)
from controlplane.controller.result import ControllerResult


def binding_from_creation(creation: Mapping[str, Any]) -> AclBinding:
    return AclBinding(
        resource_type=ResourceType.from_name(creation["resource_type"]),
        resource_name=creation["resource_name"],
        pattern_type=PatternType.from_name(creation["pattern_type"]),
        principal=creation["principal"],
        host=creation["host"],
        operation=AclOperation.from_name(creation["operation"]),
        permission_type=AclPermissionType.from_name(creation["permission_type"]),
    )


def acl_record(binding: AclBinding, acl_id: str) -> AccessControlEntryRecord:
    return AccessControlEntryRecord(
        id=acl_id,
        resource_type=binding.resource_type.name,
        resource_name=binding.resource_name,
        pattern_type=binding.pattern_type.name,
        principal=binding.principal,
        host=binding.host,
        operation=binding.operation.name,
        permission_type=binding.permission_type.name,
    )


def create_acls(
    view: MetadataDelta,
    creations: Sequence[Mapping[str, Any]],
    *,
    new_acl_id: Callable[[], str],
) -> ControllerResult:
    existing = {_key(record) for _, record in iter_acls(view)}
    records: list[Record] = []
    results: list[dict[str, Any]] = []
    for creation in creations:
        try:
            binding = binding_from_creation(creation)
        except (KeyError, ValueError) as error:
            results.append(_error(Errors.INVALID_REQUEST, str(error)))
            continue
        problem = binding.validation_error()
        if problem is not None:
            results.append(_error(Errors.INVALID_REQUEST, problem))
            continue
        refused = _cidr_refusal(binding.host, view.metadata_version)
        if refused is not None:
            results.append(_error(*refused))
            continue
        record = acl_record(binding, new_acl_id())
        if _key(record) not in existing:  # an identical ACL already exists: a no-op
            existing.add(_key(record))
            records.append(record)
        results.append({"error_code": 0, "error_message": None})
    return ControllerResult(records, {"results": results})


def _cidr_refusal(host: str, level: int | None) -> tuple[Errors, str] | None:
    """Kafka's AclControlManager.validateHostPattern: a host with a "/" is a CIDR block, which
    metadata.version 4.4-IV1 (32) brings and which must parse as one."""
    if "/" not in host:
        return None
    if (level or 0) < CIDR_ACLS_METADATA_VERSION:
        return (
            Errors.UNSUPPORTED_VERSION,
            "CIDR-based ACL host patterns require metadata version 4.4-IV1 or higher.",
        )
    try:
        ipaddress.ip_network(host, strict=False)
    except ValueError as error:
        return Errors.INVALID_REQUEST, f"Invalid CIDR notation '{host}': {error}"
    return None


# An ACL's fields in AccessControlEntryRecord's order: the columns a cp_acl row is read and
# written with, so that `AccessControlEntryRecord(*row)` rebuilds the record of a row.
ACL_FIELDS = (
    "id",
    "resource_type",
    "resource_name",
    "pattern_type",
    "principal",
    "host",
    "operation",
    "permission_type",
)


def binding_of(record: AccessControlEntryRecord) -> AclBinding:
    """The binding an AccessControlEntryRecord (or a cp_acl row with the same fields) stores."""
    return AclBinding(
        resource_type=ResourceType.from_name(record.resource_type),
        resource_name=record.resource_name,
        pattern_type=PatternType.from_name(record.pattern_type),
        principal=record.principal,
        host=record.host,
        operation=AclOperation.from_name(record.operation),
        permission_type=AclPermissionType.from_name(record.permission_type),
    )


def iter_acls(view: MetadataDelta) -> Iterator[tuple[str, AccessControlEntryRecord]]:
    """Every ACL the view holds now (the base image with the delta's changes), by id: the
    base's in its order, then those the delta added."""
    return view.all_acls()


def _name_or_none(value: Any, field: str) -> str | None:
    if value is None or isinstance(value, str):
        return value
    raise ValueError(f"{field} must be a string or null")


def acl_filter(item: Mapping[str, Any], *, suffix: str = "") -> AclBindingFilter:
    """An AclBindingFilter from a request item with Kafka's field names.

    DescribeAcls names its fields ``resource_type``, ``resource_name``, ``pattern_type``,
    ``principal``, ``host``; DeleteAcls adds ``_filter`` to each (``suffix="_filter"``). Both
    name ``operation`` and ``permission_type`` plainly. Enums are Kafka's names; the pattern
    type defaults to LITERAL (Kafka's default for PatternTypeFilter), the names to null.
    Raises ValueError (or KeyError for a missing enum) on a malformed item.
    """
    return AclBindingFilter(
        resource_type=ResourceType.from_name(item["resource_type" + suffix]),
        resource_name=_name_or_none(item.get("resource_name" + suffix), "resource_name" + suffix),
        pattern_type=PatternType.from_name(item.get("pattern_type" + suffix) or "LITERAL"),
        principal=_name_or_none(item.get("principal" + suffix), "principal" + suffix),
        host=_name_or_none(item.get("host" + suffix), "host" + suffix),
        operation=AclOperation.from_name(item["operation"]),
        permission_type=AclPermissionType.from_name(item["permission_type"]),
    )


def filter_validation_error(acl_filter: AclBindingFilter) -> str | None:
    """Why a DescribeAcls / DeleteAcls filter is refused, or None (Kafka's
    ``AclControlManager.validateFilter``: only UNKNOWN values are refused, same messages).

    As in Kafka, an indefinite filter (``find_indefinite_field``) is valid: a filter of ANY
    values deletes every ACL.
    """
    if acl_filter.resource_type is ResourceType.UNKNOWN or (
        acl_filter.pattern_type is PatternType.UNKNOWN
    ):
        return "Unknown patternFilter."
    if acl_filter.operation is AclOperation.UNKNOWN or (
        acl_filter.permission_type is AclPermissionType.UNKNOWN
    ):
        return "Unknown entryFilter."
    return None


def binding_fields(binding: AclBinding) -> dict[str, Any]:
    """A binding as the API spells it (enums by Kafka's name)."""
    return {
        "resource_type": binding.resource_type.name,
        "resource_name": binding.resource_name,
        "pattern_type": binding.pattern_type.name,
        "principal": binding.principal,
        "host": binding.host,
        "operation": binding.operation.name,
        "permission_type": binding.permission_type.name,
    }


def delete_acls(view: MetadataDelta, filters: Sequence[Mapping[str, Any]]) -> ControllerResult:
    """Kafka's ``AclControlManager.deleteAcls``: per filter, every current ACL it matches is
    reported and removed. A filter that does not validate answers INVALID_REQUEST and removes
    nothing; the others still apply. An ACL matched by several filters is reported under each
    and removed once. All records are committed together (Kafka: ``atomicOf``).
    """
    current = [(acl_id, binding_of(record)) for acl_id, record in iter_acls(view)]
    removed: set[str] = set()
    records: list[Record] = []
    results: list[dict[str, Any]] = []
    for item in filters:
        try:
            parsed = acl_filter(item, suffix="_filter")
        except (KeyError, ValueError) as error:
            results.append(_filter_error(str(error)))
            continue
        problem = filter_validation_error(parsed)
        if problem is not None:
            results.append(_filter_error(problem))
            continue
        matching: list[dict[str, Any]] = []
        for acl_id, binding in current:
            if not parsed.matches(binding):
                continue
            matching.append({"error_code": 0, "error_message": None, **binding_fields(binding)})
            if acl_id not in removed:
                removed.add(acl_id)
                records.append(RemoveAccessControlEntryRecord(id=acl_id))
        results.append({"error_code": 0, "error_message": None, "matching_acls": matching})
    return ControllerResult(records, {"filter_results": results})


def _filter_error(message: str) -> dict[str, Any]:
    return {**_error(Errors.INVALID_REQUEST, message), "matching_acls": []}


def _key(record: AccessControlEntryRecord | None) -> tuple[Any, ...]:
    assert record is not None
    data = record.to_data()
    data.pop("id")
    return tuple(sorted(data.items()))


def _error(error: Errors, message: str) -> dict[str, Any]:
    return {"error_code": int(error), "error_message": message}
