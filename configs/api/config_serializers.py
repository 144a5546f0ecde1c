"""Request bodies of the config RPCs as Kafka's (snake_case), checked strictly.

Resource types travel as Kafka's ConfigResource.Type names; a name Kafka does not know is a
malformed body (400 INVALID_REQUEST), a Kafka type the control plane does not serve (GROUP,
CLIENT_METRICS, UNKNOWN) is answered per resource with INVALID_REQUEST by the RPC.
"""

from __future__ import annotations

import enum
from typing import Any

from rest_framework import serializers

from controlplane.api.fields import (
    KafkaEnumField,
    StrictBooleanField,
    StrictCharField,
    StrictSerializer,
)
from controlplane.controller.configs.resources import KAFKA_RESOURCE_TYPES

MAX_RESOURCES = 10_000
MAX_CONFIGS = 1000
NAME_MAX = 1000
VALUE_MAX = 100_000

ConfigResourceType = enum.Enum(  # type: ignore[misc]
    "ConfigResourceType", {name: name for name in KAFKA_RESOURCE_TYPES}
)


class AlterConfigOp(enum.Enum):
    SET = "SET"
    DELETE = "DELETE"
    APPEND = "APPEND"
    SUBTRACT = "SUBTRACT"


class NameOfEnumField(KafkaEnumField):
    """A Kafka enum name, kept as its name (the payload crosses the controller queue as JSON)."""

    def to_internal_value(self, data: Any) -> str:
        return str(super().to_internal_value(data).name)


def _resource_type() -> NameOfEnumField:
    return NameOfEnumField(ConfigResourceType)


def _resource_name() -> StrictCharField:
    return StrictCharField(max_length=NAME_MAX, allow_blank=True, trim_whitespace=False)


def _config_name() -> StrictCharField:
    return StrictCharField(max_length=NAME_MAX, trim_whitespace=False)


def _config_value(**kwargs: Any) -> StrictCharField:
    return StrictCharField(
        max_length=VALUE_MAX, allow_null=True, allow_blank=True, trim_whitespace=False, **kwargs
    )


class AlterableConfigSerializer(StrictSerializer):
    name = _config_name()
    value = _config_value()


class AlterConfigsResourceSerializer(StrictSerializer):
    resource_type = _resource_type()
    resource_name = _resource_name()
    configs = serializers.ListField(
        child=AlterableConfigSerializer(), max_length=MAX_CONFIGS, required=False, default=list
    )


class AlterConfigsSerializer(StrictSerializer):
    resources = serializers.ListField(
        child=AlterConfigsResourceSerializer(), max_length=MAX_RESOURCES
    )
    validate_only = StrictBooleanField(required=False, default=False)


class IncrementalAlterableConfigSerializer(StrictSerializer):
    name = _config_name()
    config_operation = NameOfEnumField(AlterConfigOp)
    value = _config_value(required=False, default=None)


class IncrementalAlterConfigsResourceSerializer(StrictSerializer):
    resource_type = _resource_type()
    resource_name = _resource_name()
    configs = serializers.ListField(
        child=IncrementalAlterableConfigSerializer(),
        max_length=MAX_CONFIGS,
        required=False,
        default=list,
    )


class IncrementalAlterConfigsSerializer(StrictSerializer):
    resources = serializers.ListField(
        child=IncrementalAlterConfigsResourceSerializer(), max_length=MAX_RESOURCES
    )
    validate_only = StrictBooleanField(required=False, default=False)


class DescribeConfigsResourceSerializer(StrictSerializer):
    resource_type = _resource_type()
    resource_name = _resource_name()
    configuration_keys = serializers.ListField(
        child=_config_name(),
        max_length=MAX_CONFIGS,
        allow_null=True,
        required=False,
        default=None,
    )


class DescribeConfigsSerializer(StrictSerializer):
    resources = serializers.ListField(
        child=DescribeConfigsResourceSerializer(), max_length=MAX_RESOURCES
    )
    include_synonyms = StrictBooleanField(required=False, default=False)
    include_documentation = StrictBooleanField(required=False, default=False)
