"""Delegation token request bodies as Kafka's (snake_case), checked strictly.

Only the JSON shape is checked here; Kafka's rules (principal types, secrets, ownership) are the
controller core's (controlplane.controller.tokens) and answer an error code, as Kafka does.
"""

from __future__ import annotations

from typing import Any

from rest_framework import serializers

from controlplane.api.fields import (
    INT64_MAX,
    StrictCharField,
    StrictIntegerField,
    StrictSerializer,
)

NAME_MAX = 200
MAX_ITEMS = 1000
HMAC_MAX = 1000


def _name(**kwargs: Any) -> StrictCharField:
    return StrictCharField(max_length=NAME_MAX, allow_blank=True, trim_whitespace=False, **kwargs)


def _period(default: int) -> StrictIntegerField:
    return StrictIntegerField(
        min_value=-INT64_MAX - 1, max_value=INT64_MAX, required=False, default=default
    )


class PrincipalSerializer(StrictSerializer):
    principal_type = _name()
    principal_name = _name()


class CreateDelegationTokenSerializer(StrictSerializer):
    owner_principal_type = _name(required=False, allow_null=True, default=None)
    owner_principal_name = _name(required=False, allow_null=True, default=None)
    renewers = serializers.ListField(
        child=PrincipalSerializer(), max_length=MAX_ITEMS, required=False, default=list
    )
    max_lifetime_ms = _period(-1)


class RenewDelegationTokenSerializer(StrictSerializer):
    hmac = StrictCharField(max_length=HMAC_MAX, allow_blank=True, trim_whitespace=False)
    renew_period_ms = _period(-1)


class ExpireDelegationTokenSerializer(StrictSerializer):
    hmac = StrictCharField(max_length=HMAC_MAX, allow_blank=True, trim_whitespace=False)
    expiry_time_period_ms = _period(-1)


class DescribeDelegationTokenSerializer(StrictSerializer):
    owners = serializers.ListField(
        child=PrincipalSerializer(),
        max_length=MAX_ITEMS,
        required=False,
        allow_null=True,
        default=None,
    )
