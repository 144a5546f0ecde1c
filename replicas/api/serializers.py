"""Request bodies as Kafka's (snake_case), checked strictly; answers as Kafka's."""

from __future__ import annotations

from typing import Any

from rest_framework import serializers

from controlplane.api.fields import (
    INT32_MAX,
    INT64_MAX,
    StrictBooleanField,
    StrictCharField,
    StrictIntegerField,
    StrictIntegerListField,
    StrictSerializer,
    UuidStringField,
)
from replicas.models import Partition, Topic

INT16_MIN, INT16_MAX = -(2**15), 2**15 - 1
INT32_MIN = -(2**31)
MAX_ITEMS = 100_000
NAME_MAX = 1000  # longer than any legal topic name, so the controller answers the Kafka error


def _ints(**kwargs: Any) -> StrictIntegerListField:
    return StrictIntegerListField(min_value=0, max_value=INT32_MAX, **kwargs)


class CreatableReplicaAssignmentSerializer(StrictSerializer):
    partition_index = StrictIntegerField(min_value=0, max_value=INT32_MAX)
    broker_ids = _ints(max_length=1000)


class CreatableTopicConfigSerializer(StrictSerializer):
    name = StrictCharField(max_length=255)
    value = StrictCharField(max_length=10_000, allow_null=True, allow_blank=True)


class CreatableTopicSerializer(StrictSerializer):
    name = StrictCharField(max_length=NAME_MAX, allow_blank=True, trim_whitespace=False)
    num_partitions = StrictIntegerField(
        min_value=INT32_MIN, max_value=INT32_MAX, required=False, default=-1
    )
    replication_factor = StrictIntegerField(
        min_value=INT16_MIN, max_value=INT16_MAX, required=False, default=-1
    )
    assignments = serializers.ListField(
        child=CreatableReplicaAssignmentSerializer(),
        max_length=MAX_ITEMS,
        required=False,
        default=list,
    )
    configs = serializers.ListField(
        child=CreatableTopicConfigSerializer(), max_length=1000, required=False, default=list
    )


class CreateTopicsSerializer(StrictSerializer):
    topics = serializers.ListField(child=CreatableTopicSerializer(), max_length=10_000)
    timeout_ms = StrictIntegerField(min_value=0, max_value=INT32_MAX, required=False, default=60000)
    validate_only = StrictBooleanField(required=False, default=False)


class DeleteTopicStateSerializer(StrictSerializer):
    openapi_schema = {
        "anyOf": [
            {"required": ["name"], "properties": {"name": {"type": "string", "minLength": 1}}},
            {
                "required": ["topic_id"],
                "properties": {"topic_id": {"type": "string", "minLength": 1}},
            },
        ]
    }
    name = StrictCharField(max_length=NAME_MAX, required=False, allow_null=True, default=None)
    topic_id = StrictCharField(max_length=64, required=False, allow_null=True, default=None)

    def validate(self, attrs: dict[str, object]) -> dict[str, object]:
        if not attrs.get("name") and not attrs.get("topic_id"):
            raise serializers.ValidationError("Either name or topic_id is required.")
        return attrs


class DeleteTopicsSerializer(StrictSerializer):
    topic_names = serializers.ListField(
        child=StrictCharField(max_length=NAME_MAX),
        max_length=10_000,
        required=False,
        default=list,
    )
    topics = serializers.ListField(
        child=DeleteTopicStateSerializer(), max_length=10_000, required=False, default=list
    )
    timeout_ms = StrictIntegerField(min_value=0, max_value=INT32_MAX, required=False, default=60000)


class CreatePartitionsAssignmentSerializer(StrictSerializer):
    broker_ids = _ints(max_length=1000)


class CreatePartitionsTopicSerializer(StrictSerializer):
    name = StrictCharField(max_length=NAME_MAX)
    count = StrictIntegerField(min_value=INT32_MIN, max_value=INT32_MAX)
    assignments = serializers.ListField(
        child=CreatePartitionsAssignmentSerializer(),
        max_length=MAX_ITEMS,
        required=False,
        allow_null=True,
        default=None,
    )


class CreatePartitionsSerializer(StrictSerializer):
    topics = serializers.ListField(child=CreatePartitionsTopicSerializer(), max_length=10_000)
    timeout_ms = StrictIntegerField(min_value=0, max_value=INT32_MAX, required=False, default=60000)
    validate_only = StrictBooleanField(required=False, default=False)


class TopicPartitionsSerializer(StrictSerializer):
    topic = StrictCharField(max_length=NAME_MAX)
    partitions = _ints(max_length=MAX_ITEMS)


class ElectLeadersSerializer(StrictSerializer):
    election_type = serializers.ChoiceField(
        choices=["PREFERRED", "UNCLEAN"], required=False, default="PREFERRED"
    )
    topic_partitions = serializers.ListField(
        child=TopicPartitionsSerializer(),
        max_length=10_000,
        allow_null=True,
        required=False,
        default=None,
    )
    timeout_ms = StrictIntegerField(min_value=0, max_value=INT32_MAX, required=False, default=60000)


class AlterPartitionPartitionSerializer(StrictSerializer):
    partition_index = StrictIntegerField(min_value=0, max_value=INT32_MAX)
    leader_epoch = StrictIntegerField(min_value=-1, max_value=INT32_MAX)
    new_isr = _ints(max_length=1000)
    partition_epoch = StrictIntegerField(min_value=-1, max_value=INT32_MAX)
    leader_recovery_state = StrictIntegerField(min_value=0, max_value=1, required=False, default=0)


class AlterPartitionTopicSerializer(StrictSerializer):
    topic_name = StrictCharField(max_length=NAME_MAX)
    partitions = serializers.ListField(
        child=AlterPartitionPartitionSerializer(), max_length=MAX_ITEMS
    )


class AlterPartitionSerializer(StrictSerializer):
    broker_id = StrictIntegerField(min_value=0, max_value=INT32_MAX)
    broker_epoch = StrictIntegerField(min_value=-1, max_value=INT64_MAX)
    topics = serializers.ListField(child=AlterPartitionTopicSerializer(), max_length=10_000)


class ReplicaStateTopicSerializer(StrictSerializer):
    name = StrictCharField(max_length=NAME_MAX)
    partitions = _ints(max_length=MAX_ITEMS)


class AlterReplicaStateSerializer(StrictSerializer):
    broker_id = StrictIntegerField(min_value=0, max_value=INT32_MAX)
    broker_epoch = StrictIntegerField(min_value=-1, max_value=INT64_MAX)
    new_state = StrictIntegerField(min_value=-128, max_value=127)
    reason = StrictCharField(max_length=1000, required=False, allow_blank=True, default="")
    # Our addition to KIP-589 (which leaves the directory to `reason`): the failed log dir's
    # UUID, as registration names the broker's log dirs, for the audit trail and its reports.
    log_dir = UuidStringField(required=False, default="")
    topics = serializers.ListField(child=ReplicaStateTopicSerializer(), max_length=10_000)


class ReassignablePartitionSerializer(StrictSerializer):
    partition_index = StrictIntegerField(min_value=0, max_value=INT32_MAX)
    # The target replicas; null cancels the partition's reassignment in progress.
    replicas = StrictIntegerListField(
        min_value=-(2**31), max_value=INT32_MAX, max_length=1000, allow_null=True
    )


class ReassignableTopicSerializer(StrictSerializer):
    name = StrictCharField(max_length=NAME_MAX)
    partitions = serializers.ListField(
        child=ReassignablePartitionSerializer(), max_length=MAX_ITEMS
    )


class AlterPartitionReassignmentsSerializer(StrictSerializer):
    topics = serializers.ListField(child=ReassignableTopicSerializer(), max_length=10_000)
    timeout_ms = StrictIntegerField(min_value=0, max_value=INT32_MAX, required=False, default=60000)
    # KIP-860 (v1): false refuses a target of another size (INVALID_REPLICATION_FACTOR).
    allow_replication_factor_change = StrictBooleanField(required=False, default=True)


class ListPartitionReassignmentsTopicSerializer(StrictSerializer):
    name = StrictCharField(max_length=NAME_MAX)
    partition_indexes = _ints(max_length=MAX_ITEMS)


class ListPartitionReassignmentsSerializer(StrictSerializer):
    # null (or absent) lists every reassignment in progress.
    topics = serializers.ListField(
        child=ListPartitionReassignmentsTopicSerializer(),
        max_length=10_000,
        allow_null=True,
        required=False,
        default=None,
    )
    timeout_ms = StrictIntegerField(min_value=0, max_value=INT32_MAX, required=False, default=60000)


class PartitionSerializer(serializers.ModelSerializer):  # type: ignore[type-arg]
    topic = serializers.CharField(source="topic.name")
    leader_id = serializers.IntegerField(source="leader")
    replica_nodes = serializers.ListField(source="replicas", child=serializers.IntegerField())
    isr_nodes = serializers.ListField(source="isr", child=serializers.IntegerField())
    offline_replicas = serializers.ListField(child=serializers.IntegerField())
    # KIP-858: each replica's log dir (its UUID), in the replicas' order, as the brokers placed
    # them with AssignReplicasToDirs; [] until a broker with several dirs places one.
    directories = serializers.ListField(child=serializers.CharField())
    # KIP-455: a reassignment in progress, as Kafka's TopicDescription shows it ([] when none).
    adding_replicas = serializers.ListField(child=serializers.IntegerField())
    removing_replicas = serializers.ListField(child=serializers.IntegerField())

    class Meta:
        model = Partition
        fields = [
            "topic",
            "partition_index",
            "leader_id",
            "leader_epoch",
            "partition_epoch",
            "replica_nodes",
            "isr_nodes",
            "offline_replicas",
            "directories",
            "adding_replicas",
            "removing_replicas",
            "is_canary",
            "canary_isolated",
        ]


class TopicPartitionSerializer(PartitionSerializer):
    class Meta(PartitionSerializer.Meta):
        fields = [f for f in PartitionSerializer.Meta.fields if f != "topic"]


class TopicSerializer(serializers.ModelSerializer):  # type: ignore[type-arg]
    leaderless_partitions = serializers.IntegerField(source="leaderless_count", read_only=True)
    offline_replicas = serializers.IntegerField(source="offline_replica_total", read_only=True)
    under_replicated_partitions = serializers.IntegerField(
        source="under_replicated_count", read_only=True
    )
    under_min_isr_partitions = serializers.IntegerField(
        source="under_min_isr_count", read_only=True
    )
    at_min_isr_partitions = serializers.IntegerField(source="at_min_isr_count", read_only=True)
    preferred_replica_imbalance = serializers.IntegerField(
        source="imbalanced_count", read_only=True
    )
    min_insync_replicas = serializers.IntegerField(source="min_isr", read_only=True)

    class Meta:
        model = Topic
        fields = [
            "topic_id",
            "name",
            "partition_count",
            "leaderless_partitions",
            "offline_replicas",
            "under_replicated_partitions",
            "under_min_isr_partitions",
            "at_min_isr_partitions",
            "preferred_replica_imbalance",
            "min_insync_replicas",
        ]


class TopicDetailSerializer(TopicSerializer):
    partitions = TopicPartitionSerializer(many=True, read_only=True)

    class Meta(TopicSerializer.Meta):
        fields = [*TopicSerializer.Meta.fields, "partitions"]
