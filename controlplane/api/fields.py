"""Strict request fields: JSON types are checked, not coerced ("5" is not an integer)."""

from __future__ import annotations

import copy
import enum
import json
import uuid
from typing import Any

from django.core import validators
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema_field
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


@extend_schema_field(OpenApiTypes.UUID)
class UuidStringField(StrictCharField):
    """A UUID carried as a JSON string (log directories, incarnation ids)."""

    def to_internal_value(self, data: Any) -> str:
        value = super().to_internal_value(data)
        try:
            uuid.UUID(value)
        except ValueError:
            raise serializers.ValidationError(f"{value!r} is not a UUID.") from None
        return value


class StrictIntegerListField(serializers.ListField):
    """A list of JSON integers in a range, checked in one pass (AlterReplicaState and
    ElectLeaders name thousands of partitions; a child field per element is far slower)."""

    def __init__(self, *, min_value: int, max_value: int, **kwargs: Any) -> None:
        self.min_value = min_value
        self.max_value = max_value
        super().__init__(
            child=StrictIntegerField(min_value=min_value, max_value=max_value), **kwargs
        )

    def to_internal_value(self, data: Any) -> list[int]:
        if type(data) is list:
            low, high = self.min_value, self.max_value
            if all(type(v) is int and low <= v <= high for v in data):
                if self.max_length is not None and len(data) > self.max_length:
                    self.fail("max_length", max_length=self.max_length)
                if not self.allow_empty and not data:
                    self.fail("empty")
                return list(data)
        result: list[int] = super().to_internal_value(data)  # the precise error
        return result


class KafkaEnumField(serializers.ChoiceField):
    """An enum that travels as Kafka's name ("TOPIC", "LITERAL", ...). `documented` lists the
    names the schema offers when Kafka refuses some members with its own error (a filter naming
    UNKNOWN is "Unknown entryFilter."): they still reach Kafka's check."""

    def __init__(
        self,
        enum_type: type[enum.Enum],
        *,
        documented: list[str] | None = None,
        **kwargs: Any,
    ) -> None:
        self.enum_type = enum_type
        super().__init__(choices=documented or [member.name for member in enum_type], **kwargs)

    def to_internal_value(self, data: Any) -> Any:
        if not isinstance(data, str) or data not in self.enum_type.__members__:
            self.fail("invalid_choice", input=data)
        return self.enum_type[data]

    def to_representation(self, value: Any) -> Any:
        return value.name if isinstance(value, enum.Enum) else value


class _FastPlan:
    """A happy-path check compiled from a serializer's declared fields.

    Accepts only bodies the full validation would accept unchanged, and returns exactly what it
    would return; for anything else (wrong type, out of range, unknown key, a field kind it does
    not know) it answers None and the caller runs the full validation for the precise error.
    """

    def __init__(self, fields: dict[str, serializers.Field]) -> None:  # type: ignore[type-arg]
        self.checks: dict[str, tuple[Any, ...]] = {}
        self.fields: dict[str, serializers.Field] = {}  # type: ignore[type-arg]
        self.usable = True
        for name, field in fields.items():
            if field.read_only or (field.source != name and field.source is not None):
                self.usable = False
            elif isinstance(field, StrictIntegerField):
                self.checks[name] = (
                    "int",
                    field.min_value,
                    field.max_value,
                    *self._optional(field),
                )
            elif isinstance(field, StrictBooleanField):
                self.checks[name] = ("bool", None, None, *self._optional(field))
            elif type(field) is StrictIntegerListField and self._only_lengths(field):
                self.checks[name] = ("ints", field, None, *self._optional(field))
            elif isinstance(field, serializers.ListField) and self._is_uuid_list(field):
                self.checks[name] = (
                    "uuids",
                    field.min_length,
                    field.max_length,
                    *self._optional(field),
                )
            elif type(field) is StrictCharField:
                self.checks[name] = (
                    "str",
                    field.min_length,
                    field.max_length,
                    *self._optional(field),
                )
            elif type(field) is serializers.JSONField and not field.binary:
                self.checks[name] = ("json", None, None, *self._optional(field))
            elif isinstance(field, StrictSerializer):  # (many=True is a ListSerializer)
                nested = _FastPlan.of(type(field))
                self.usable = self.usable and nested.usable
                self.checks[name] = ("nested", nested, None, *self._optional(field))
            elif isinstance(field, serializers.ListField) and self._is_object_list(field):
                nested = _FastPlan.of(type(field.child))  # type: ignore[arg-type]
                self.usable = self.usable and nested.usable
                self.checks[name] = ("objects", nested, field, *self._optional(field))
            elif isinstance(field, KafkaEnumField) and not field.validators:
                self.checks[name] = ("enum", field, None, *self._optional(field))
            else:
                self.usable = False
            self.fields[name] = field

    @classmethod
    def of(cls, kind: type[StrictSerializer]) -> _FastPlan:
        """The plan of a strict serializer class: unusable when the class checks more than its
        fields (a `validate`, `validate_<field>` or parsing of its own), which it would skip."""
        plan = cls(kind._declared_fields)
        if (
            kind.validate is not serializers.Serializer.validate
            or kind.to_internal_value is not StrictSerializer.to_internal_value
            or kind.run_validation is not serializers.Serializer.run_validation
        ) or any(hasattr(kind, f"validate_{name}") for name in kind._declared_fields):
            plan.usable = False
        return plan

    @staticmethod
    def _only_lengths(field: serializers.Field) -> bool:  # type: ignore[type-arg]
        """A list field with no check but its lengths."""
        return all(
            type(v) in (validators.MaxLengthValidator, validators.MinLengthValidator)
            for v in field.validators
        )

    @classmethod
    def _is_object_list(cls, field: serializers.Field) -> bool:  # type: ignore[type-arg]
        """A list of JSON objects, each checked by a strict serializer (a list of resources),
        with no check but its lengths."""
        return (
            type(field) is serializers.ListField
            and isinstance(field.child, StrictSerializer)
            and cls._only_lengths(field)
        )

    @staticmethod
    def _ints_ok(field: StrictIntegerListField, value: Any) -> bool:
        """What StrictIntegerListField accepts unchanged: a list of JSON integers in its range,
        within its lengths, empty only if allowed."""
        if type(value) is not list or (not value and not field.allow_empty):
            return False
        if (field.min_length is not None and len(value) < field.min_length) or (
            field.max_length is not None and len(value) > field.max_length
        ):
            return False
        low, high = field.min_value, field.max_value
        return all(type(v) is int and low <= v <= high for v in value)

    @staticmethod
    def _objects(plan: _FastPlan, field: Any, value: Any) -> list[Any] | None:
        """What ListField(child=<strict serializer>) returns for `value`, or None."""
        if type(value) is not list or (not value and not field.allow_empty):
            return None
        if (field.min_length is not None and len(value) < field.min_length) or (
            field.max_length is not None and len(value) > field.max_length
        ):
            return None
        out = []
        for item in value:
            checked = plan.validate(item)
            if checked is None:
                return None
            out.append(checked)
        return out

    @staticmethod
    def _optional(field: serializers.Field) -> tuple[bool, Any]:  # type: ignore[type-arg]
        default = field.default
        if default is serializers.empty:
            return field.required, serializers.empty
        return False, default() if callable(default) else default

    @staticmethod
    def _is_uuid_list(field: serializers.Field) -> bool:  # type: ignore[type-arg]
        return (
            isinstance(field, serializers.ListField)
            and isinstance(field.child, UuidStringField)
            and field.allow_empty is not False
        )

    @staticmethod
    def _uuids_ok(value: Any, low: int | None, high: int | None) -> bool:
        if (
            type(value) is not list
            or (low is not None and len(value) < low)
            or (high is not None and len(value) > high)
        ):
            return False
        for item in value:
            if type(item) is not str:
                return False
            try:
                uuid.UUID(item)
            except ValueError:
                return False
        return True

    @staticmethod
    def _str_ok(field: Any, value: Any, low: int | None, high: int | None) -> bool:
        """What CharField accepts unchanged: ASCII without NUL (no surrogates to check), within
        the lengths, not blank unless allowed, and nothing trimming would remove."""
        if type(value) is not str or not value.isascii() or "\x00" in value:
            return False
        if field.trim_whitespace and value != value.strip():
            return False
        if value == "" and not field.allow_blank:
            return False
        return (low is None or len(value) >= low) and (high is None or len(value) <= high)

    def validate(self, data: Any) -> dict[str, Any] | None:
        if not self.usable or not isinstance(data, dict) or not data.keys() <= self.checks.keys():
            return None
        out: dict[str, Any] = {}
        for name, (kind, low, high, required, default) in self.checks.items():
            if name not in data:
                if required:
                    return None
                if default is not serializers.empty:
                    out[name] = default
                continue
            value = data[name]
            if value is None:
                if not self.fields[name].allow_null:
                    return None
                out[name] = None
                continue
            if kind == "str":
                if not self._str_ok(self.fields[name], value, low, high):
                    return None
            elif kind == "json":
                if not _strict_json(value):
                    return None  # NaN or Infinity: the full path refuses it
            elif kind == "nested":
                value = low.validate(value)
                if value is None:
                    return None
            elif kind == "objects":
                value = self._objects(low, high, value)
                if value is None:
                    return None
            elif kind == "enum":
                if type(value) is not str or value not in low.enum_type.__members__:
                    return None
                value = low.to_internal_value(value)
            elif kind == "bool":
                if type(value) is not bool:
                    return None
            elif kind == "ints":
                if not self._ints_ok(low, value):
                    return None
                value = list(value)
            elif kind == "uuids":
                if not self._uuids_ok(value, low, high):
                    return None
                value = list(value)
            elif (
                type(value) is not int
                or (low is not None and value < low)
                or (high is not None and value > high)
            ):
                return None
            out[name] = value
        return out


def documented(field: Any, **schema: Any) -> Any:
    """`field`, with what its OpenAPI schema says beyond DRF's mapping (Kafka's own refusals,
    e.g. `minLength=1` where Kafka answers "Invalid empty entity type.")."""
    field.openapi = schema
    return field


def known(enum_type: type[enum.Enum]) -> list[str]:
    """An enum's names but UNKNOWN (which Kafka refuses in filters)."""
    return [member.name for member in enum_type if member.name != "UNKNOWN"]


class StrictSerializer(serializers.Serializer):  # type: ignore[type-arg]
    """Refuses unknown fields and bodies that are not JSON objects, naming the culprit.
    `openapi_schema`: what the component's schema says beyond its fields (alternatives)."""

    openapi_schema: dict[str, Any] = {}

    _fast_plan: _FastPlan | None = None

    @classmethod
    def validated(cls, data: Any) -> dict[str, Any]:
        """The validated body; raises ValidationError as `is_valid(raise_exception=True)`."""
        plan = cls.__dict__.get("_fast_plan")
        if plan is None:
            plan = _FastPlan.of(cls)
            cls._fast_plan = plan
        fast = plan.validate(data)
        if fast is not None:
            return fast
        serializer = cls(data=data)
        serializer.is_valid(raise_exception=True)
        return dict(serializer.validated_data)

    def get_fields(self) -> dict[str, serializers.Field]:  # type: ignore[type-arg]
        # DRF deep-copies every declared field for every instance, the largest cost of
        # validating a small body. Declared fields here are never bound or validated
        # themselves (only their copies are), so a shallow copy per instance is enough.
        return {name: copy.copy(field) for name, field in self._declared_fields.items()}

    def to_internal_value(self, data: Any) -> Any:
        if not isinstance(data, dict):
            raise serializers.ValidationError(
                {"non_field_errors": [f"Expected a JSON object but got {type(data).__name__}."]}
            )
        unknown = sorted(set(data) - set(self.fields))
        if unknown:
            raise serializers.ValidationError({name: ["Unknown field."] for name in unknown})
        return super().to_internal_value(data)


def _strict_json(value: Any) -> bool:
    """JSON as the standard has it: Python's parser also reads NaN and Infinity."""
    try:
        json.dumps(value, allow_nan=False)
    except (ValueError, TypeError):
        return False
    return True
