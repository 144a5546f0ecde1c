"""ACL changes as records (Kafka's AclControlManager): validated per creation, atomic per item."""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from typing import Any

from controlplane.controller.acl import (
    AclBinding,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourceType,
)
from controlplane.controller.errors import Errors
from controlplane.controller.image import MetadataDelta
from controlplane.controller.records import AccessControlEntryRecord, Record
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


def create_acls(view: MetadataDelta, creations: Sequence[Mapping[str, Any]]) -> ControllerResult:
    existing = {_key(view.acl(i)) for i in _acl_ids(view)}
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
        record = acl_record(binding, str(uuid.uuid4()))
        if _key(record) not in existing:  # an identical ACL already exists: a no-op
            existing.add(_key(record))
            records.append(record)
        results.append({"error_code": 0, "error_message": None})
    return ControllerResult(records, {"results": results})


def _acl_ids(view: MetadataDelta) -> set[str]:
    return (set(view.base.acls) | set(view.changed_acls)) - {
        i for i, r in view.changed_acls.items() if r is None
    }


def _key(record: AccessControlEntryRecord | None) -> tuple[Any, ...]:
    assert record is not None
    data = record.to_data()
    data.pop("id")
    return tuple(sorted(data.items()))


def _error(error: Errors, message: str) -> dict[str, Any]:
    return {"error_code": int(error), "error_message": message}
