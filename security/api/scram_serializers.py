"""SCRAM credential request bodies as Kafka's (snake_case), checked strictly.

Only the JSON shape is checked here: a mechanism is its name (`SCRAM-SHA-256`, `SCRAM-SHA-512`),
bytes are base64. Kafka's rules (names, mechanisms, iterations, duplicates, what exists) are the
controller core's (controlplane.controller.scram) and answer each user with an error code, as
Kafka does. No error message here repeats a value: a salted password never comes back.
"""

from __future__ import annotations

import base64
import binascii
from typing import Any

from rest_framework import serializers

from controlplane.api.fields import (
    StrictCharField,
    StrictIntegerField,
    StrictSerializer,
    documented,
)

# Standard base64 (RFC 4648, padded), as the schema says it: what Base64Field accepts.
BASE64_PATTERN = r"^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$"
NAME_MAX = 255
MECHANISM_MAX = 32
BYTES_B64_MAX = 1368  # 1,024 bytes, base64: far beyond any salt or SHA-512 salted password
MAX_ITEMS = 1000
INT32_MIN, INT32_MAX = -(2**31), 2**31 - 1


class Base64Field(StrictCharField):
    """Bytes as standard base64 text (kept as the text; the value is never echoed back)."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(
            max_length=BYTES_B64_MAX, allow_blank=True, trim_whitespace=False, **kwargs
        )

    def to_internal_value(self, data: Any) -> str:
        text = str(super().to_internal_value(data))
        try:
            base64.b64decode(text.encode("ascii"), validate=True)
        except (binascii.Error, UnicodeEncodeError):
            raise serializers.ValidationError("Not standard base64.") from None
        return text


def _name() -> StrictCharField:
    return StrictCharField(max_length=NAME_MAX, allow_blank=True, trim_whitespace=False)


def _mechanism() -> StrictCharField:
    return StrictCharField(max_length=MECHANISM_MAX, allow_blank=True, trim_whitespace=False)


class ScramCredentialDeletionSerializer(StrictSerializer):
    name = _name()
    mechanism = _mechanism()


class ScramCredentialUpsertionSerializer(StrictSerializer):
    name = _name()
    mechanism = _mechanism()
    iterations = StrictIntegerField(min_value=INT32_MIN, max_value=INT32_MAX)
    salt = documented(Base64Field(), format="byte", pattern=BASE64_PATTERN)
    salted_password = documented(Base64Field(), format="byte", pattern=BASE64_PATTERN)


class AlterUserScramCredentialsSerializer(StrictSerializer):
    deletions = serializers.ListField(
        child=ScramCredentialDeletionSerializer(),
        max_length=MAX_ITEMS,
        required=False,
        default=list,
    )
    upsertions = serializers.ListField(
        child=ScramCredentialUpsertionSerializer(),
        max_length=MAX_ITEMS,
        required=False,
        default=list,
    )


class UserNameSerializer(StrictSerializer):
    name = _name()


class DescribeUserScramCredentialsSerializer(StrictSerializer):
    users = serializers.ListField(
        child=UserNameSerializer(),
        max_length=MAX_ITEMS,
        required=False,
        allow_null=True,
        default=None,
    )
