from __future__ import annotations

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from brokers.models import Broker
from controlplane.api.fields import (
    INT32_MAX,
    INT64_MAX,
    StrictBooleanField,
    StrictCharField,
    StrictIntegerField,
    StrictSerializer,
    UuidStringField,
)
from controlplane.controller.brokers.control import BROKER_PODS, SECURITY_PROTOCOLS


class ListenerSerializer(StrictSerializer):
    name = StrictCharField(max_length=100)
    host = StrictCharField(max_length=255)
    port = StrictIntegerField(min_value=0, max_value=65535)
    security_protocol = serializers.ChoiceField(choices=sorted(SECURITY_PROTOCOLS))


class SupportedFeatureSerializer(StrictSerializer):
    name = StrictCharField(max_length=255)
    min_supported_version = StrictIntegerField(min_value=-32768, max_value=32767)
    max_supported_version = StrictIntegerField(min_value=-32768, max_value=32767)


@extend_schema_field({"type": "integer", "minimum": 0, "maximum": INT32_MAX - 1})
class RegistrableBrokerIdField(StrictIntegerField):
    """The schema shows the ids registrable by default (Int32.MAX_VALUE is reserved: Kafka's
    clients name their group coordinator's connection with it; CP_BROKER_ID_RANGE may narrow
    the range). Any int32 still parses, so registration's own checks answer the rest as on the
    Kafka listener: INVALID_REGISTRATION, or CLUSTER_AUTHORIZATION_FAILED for a broker
    principal naming another id."""


class BrokerRegistrationSerializer(StrictSerializer):
    broker_id = RegistrableBrokerIdField(min_value=0, max_value=INT32_MAX)
    cluster_id = StrictCharField(max_length=64)
    incarnation_id = UuidStringField()
    listeners = serializers.ListField(child=ListenerSerializer(), allow_empty=False, max_length=64)
    rack = StrictCharField(max_length=255, allow_null=True, required=False, default=None)
    pod = serializers.ChoiceField(choices=sorted(BROKER_PODS), required=False, default="broker")
    log_dirs = serializers.ListField(
        child=UuidStringField(), max_length=1024, required=False, default=list
    )
    # KIP-1095's rollout guard compares brokers by what they run; optional, as Kafka's
    # brokers do not send it.
    software_version = StrictCharField(
        max_length=128, allow_null=True, required=False, default=None
    )
    # The features a Kafka broker supports (its registration's Features): it registers only if
    # it supports every finalized level; a broker that sends none is not checked.
    features = serializers.ListField(
        child=SupportedFeatureSerializer(), max_length=64, required=False, default=list
    )


class BrokerRegistrationResponseSerializer(serializers.Serializer):  # type: ignore[type-arg]
    error_code = serializers.IntegerField()
    error = serializers.CharField(required=False)
    error_message = serializers.CharField(allow_null=True)
    broker_epoch = serializers.IntegerField(required=False)  # not when refused


class BrokerHeartbeatSerializer(StrictSerializer):
    broker_id = StrictIntegerField(min_value=0, max_value=INT32_MAX)
    broker_epoch = StrictIntegerField(min_value=-1, max_value=INT64_MAX)
    current_metadata_offset = StrictIntegerField(min_value=-1, max_value=INT64_MAX)
    want_fence = StrictBooleanField(required=False, default=False)
    want_shut_down = StrictBooleanField(required=False, default=False)
    offline_log_dirs = serializers.ListField(
        child=UuidStringField(), max_length=1024, required=False, default=list
    )


class BrokerHeartbeatResponseSerializer(serializers.Serializer):  # type: ignore[type-arg]
    error_code = serializers.IntegerField()
    error = serializers.CharField(required=False)
    error_message = serializers.CharField(allow_null=True)
    # Not when refused (STALE_BROKER_EPOCH, NOT_CONTROLLER).
    is_caught_up = serializers.BooleanField(required=False)
    is_fenced = serializers.BooleanField(required=False)
    should_shut_down = serializers.BooleanField(required=False)


class DescribeClusterSerializer(StrictSerializer):
    include_cluster_authorized_operations = StrictBooleanField(required=False, default=False)


class UnregisterBrokerSerializer(StrictSerializer):
    broker_id = StrictIntegerField(min_value=0, max_value=INT32_MAX)


class BrokerSerializer(serializers.ModelSerializer):  # type: ignore[type-arg]
    broker_epoch = serializers.IntegerField(source="epoch")
    state = serializers.CharField()

    class Meta:
        model = Broker
        fields = [
            "broker_id",
            "incarnation_id",
            "broker_epoch",
            "state",
            "fenced",
            "in_controlled_shutdown",
            "pod",
            "rack",
            "software_version",
            "listeners",
            "log_dirs",
            "offline_log_dirs",
        ]
