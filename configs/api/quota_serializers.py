"""AlterClientQuotas / DescribeClientQuotas bodies as Kafka's (snake_case), checked strictly.

Only the JSON shape is checked here; Kafka's rules (entity combinations, keys, values) are the
controller core's (controlplane.controller.quotas) and answer per entry, as Kafka does.
"""

from __future__ import annotations

import math
from typing import Any

from rest_framework import serializers

from controlplane.api.fields import (
    KafkaEnumField,
    StrictBooleanField,
    StrictCharField,
    StrictSerializer,
    documented,
)
from controlplane.controller.quotas.control import ENTITY_TYPES
from controlplane.controller.quotas.describe import MatchType

NAME_MAX = 1000
MAX_ITEMS = 10_000


class StrictFloatField(serializers.FloatField):
    """A JSON number (integer or not, never a string or a boolean), finite."""

    def to_internal_value(self, data: Any) -> float:
        if isinstance(data, bool) or not isinstance(data, int | float):
            self.fail("invalid")
        if isinstance(data, float) and not math.isfinite(data):
            self.fail("invalid")
        try:
            return float(data)
        except OverflowError:
            self.fail("invalid")
            raise  # unreachable: fail raises


def _name(**kwargs: Any) -> StrictCharField:
    return StrictCharField(max_length=NAME_MAX, allow_blank=True, trim_whitespace=False, **kwargs)


class EntityDataSerializer(StrictSerializer):
    entity_type = _name()
    entity_name = _name(allow_null=True)


class OpDataSerializer(StrictSerializer):
    key = _name()
    value = StrictFloatField(required=False, default=0.0)
    remove = StrictBooleanField(required=False, default=False)


class EntryDataSerializer(StrictSerializer):
    entity = serializers.ListField(child=EntityDataSerializer(), max_length=10)
    ops = serializers.ListField(child=OpDataSerializer(), max_length=100)


class AlterClientQuotasSerializer(StrictSerializer):
    entries = serializers.ListField(child=EntryDataSerializer(), max_length=MAX_ITEMS)
    validate_only = StrictBooleanField(required=False, default=False)


class ComponentDataSerializer(StrictSerializer):
    # Kafka: EXACT names a match string, DEFAULT and ANY do not (INVALID_REQUEST otherwise).
    # (`not` keeps drf-spectacular's enum hook from merging these into the field's enum.)
    openapi_schema = {
        "anyOf": [
            {
                "required": ["match"],
                "properties": {
                    "match_type": {"not": {"enum": ["DEFAULT", "ANY"]}},
                    "match": {"type": "string"},
                },
            },
            {
                "properties": {
                    "match_type": {"not": {"enum": ["EXACT"]}},
                    "match": {"not": {"type": "string"}},
                }
            },
        ]
    }
    # Kafka answers "Invalid empty entity type." and UNSUPPORTED_VERSION for any other type.
    entity_type = documented(_name(), enum=list(ENTITY_TYPES))
    match_type = KafkaEnumField(MatchType)
    match = _name(required=False, allow_null=True, default=None)


class DescribeClientQuotasSerializer(StrictSerializer):
    components = serializers.ListField(child=ComponentDataSerializer(), max_length=10)
    strict = StrictBooleanField(required=False, default=False)


class EffectiveQuotasQuerySerializer(StrictSerializer):
    user = StrictCharField(max_length=NAME_MAX, trim_whitespace=False)
    client_id = StrictCharField(max_length=NAME_MAX, trim_whitespace=False)
