"""CreateAcls, DescribeAcls and DeleteAcls request bodies (Kafka's fields, snake_case).

Enums are Kafka's names; any member of the enum is accepted here (UNKNOWN, ANY and MATCH
included), so that the per-item checks answer Kafka's per-item errors; a name that is not a
member is a malformed body (400 INVALID_REQUEST). Names are null where Kafka's are nullable
strings; a filter's pattern type defaults to LITERAL, as Kafka's ``PatternTypeFilter``.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from typing import Any

from rest_framework import serializers

from controlplane.api.fields import KafkaEnumField, StrictCharField, StrictSerializer, known
from controlplane.controller.acls.bindings import (
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourceType,
)

MAX_ITEMS = 10_000  # Kafka's MAX_RECORDS_PER_USER_OP
NAME_MAX = 255  # the cp_acl columns


def _text(**kwargs: Any) -> StrictCharField:
    return StrictCharField(max_length=NAME_MAX, allow_blank=True, trim_whitespace=False, **kwargs)


def _nullable_text() -> StrictCharField:
    return _text(required=False, allow_null=True, default=None)


class AclCreationSerializer(StrictSerializer):
    resource_type = KafkaEnumField(ResourceType)
    resource_name = _text()
    pattern_type = KafkaEnumField(PatternType, required=False, default=PatternType.LITERAL)
    principal = _text()
    host = _text()
    operation = KafkaEnumField(AclOperation)
    permission_type = KafkaEnumField(AclPermissionType)


class CreateAclsSerializer(StrictSerializer):
    creations = serializers.ListField(child=AclCreationSerializer(), max_length=MAX_ITEMS)


def _filter_enum(enum_type: type[enum.Enum], **kwargs: Any) -> KafkaEnumField:
    """A filter's enum: UNKNOWN is Kafka's "Unknown entryFilter." (not documented as valid)."""
    return KafkaEnumField(enum_type, documented=known(enum_type), **kwargs)


class DescribeAclsSerializer(StrictSerializer):
    resource_type = _filter_enum(ResourceType)
    resource_name = _nullable_text()
    pattern_type = _filter_enum(PatternType, required=False, default=PatternType.LITERAL)
    principal = _nullable_text()
    host = _nullable_text()
    operation = _filter_enum(AclOperation)
    permission_type = _filter_enum(AclPermissionType)


class DeleteAclsFilterSerializer(StrictSerializer):
    resource_type_filter = _filter_enum(ResourceType)
    resource_name_filter = _nullable_text()
    pattern_type_filter = _filter_enum(PatternType, required=False, default=PatternType.LITERAL)
    principal_filter = _nullable_text()
    host_filter = _nullable_text()
    operation = _filter_enum(AclOperation)
    permission_type = _filter_enum(AclPermissionType)


class DeleteAclsSerializer(StrictSerializer):
    filters = serializers.ListField(child=DeleteAclsFilterSerializer(), max_length=MAX_ITEMS)


def as_names(item: Mapping[str, Any]) -> dict[str, Any]:
    """A validated item as plain JSON: enum members become Kafka's names."""
    return {k: v.name if isinstance(v, enum.Enum) else v for k, v in item.items()}
