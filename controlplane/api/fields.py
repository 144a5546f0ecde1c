"""Strict request fields: JSON types are checked, not coerced ("5" is not an integer)."""

from __future__ import annotations

import enum
from typing import Any

from rest_framework import serializers

INT32_MAX = 2**31 - 1
INT64_MAX = 2**63 - 1


class StrictIntegerField(serializers.IntegerField):
    def to_internal_value(self, data: Any) -> int:
        if isinstance(data, bool) or not isinstance(data, int):
            self.fail("invalid")
        return super().to_internal_value(data)


class StrictBooleanField(serializers.BooleanField):
    def to_internal_value(self, data: Any) -> bool:
        if not isinstance(data, bool):
            self.fail("invalid", input=data)
        return data


class StrictCharField(serializers.CharField):
    def to_internal_value(self, data: Any) -> str:
        if not isinstance(data, str):
            self.fail("invalid")
        return super().to_internal_value(data)


class KafkaEnumField(serializers.ChoiceField):
    """An enum that travels as Kafka's name ("TOPIC", "LITERAL", ...)."""

    def __init__(self, enum_type: type[enum.Enum], **kwargs: Any) -> None:
        self.enum_type = enum_type
        super().__init__(choices=[member.name for member in enum_type], **kwargs)

    def to_internal_value(self, data: Any) -> Any:
        if not isinstance(data, str) or data not in self.enum_type.__members__:
            self.fail("invalid_choice", input=data)
        return self.enum_type[data]

    def to_representation(self, value: Any) -> Any:
        return value.name if isinstance(value, enum.Enum) else value


class StrictSerializer(serializers.Serializer):  # type: ignore[type-arg]
    """Refuses unknown fields and bodies that are not JSON objects, naming the culprit."""

    def to_internal_value(self, data: Any) -> Any:
        if not isinstance(data, dict):
            raise serializers.ValidationError(
                {"non_field_errors": [f"Expected a JSON object but got {type(data).__name__}."]}
            )
        unknown = sorted(set(data) - set(self.fields))
        if unknown:
            raise serializers.ValidationError({name: ["Unknown field."] for name in unknown})
        return super().to_internal_value(data)
