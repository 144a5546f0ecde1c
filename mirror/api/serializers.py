"""Mirror request bodies, checked strictly (unknown fields, wrong JSON types and oversized values
answer 400 INVALID_REQUEST naming the field), and the flows answer's shape for the schema."""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from controlplane.api.fields import (
    INT32_MAX,
    StrictCharField,
    StrictIntegerField,
    StrictSerializer,
)

NAME_MAX = 255
URL_MAX = 1000
VALUE_MAX = 10_000
MAX_TASKS = 10_000
MAX_TOPICS = 100_000
TRACE_MAX = 4000
STATES = ("UNASSIGNED", "RUNNING", "PAUSED", "FAILED", "RESTARTING")


class StringMapField(serializers.Field):  # type: ignore[type-arg]
    """A JSON object of strings to strings (a connector or task config)."""

    def __init__(self, *, max_items: int = 1000, **kwargs: Any) -> None:
        self.max_items = max_items
        super().__init__(**kwargs)

    def to_internal_value(self, data: Any) -> dict[str, str]:
        if not isinstance(data, dict):
            raise serializers.ValidationError("Expected a JSON object of strings.")
        if len(data) > self.max_items:
            raise serializers.ValidationError(f"At most {self.max_items} keys.")
        for key, value in data.items():
            if not isinstance(value, str) or len(key) > NAME_MAX or len(value) > VALUE_MAX:
                raise serializers.ValidationError(f"{key[:80]!r}: expected a string value.")
        return dict(data)

    def to_representation(self, value: Any) -> Any:
        return value


class _Status(StrictSerializer):
    state = serializers.ChoiceField(choices=STATES)
    trace = StrictCharField(max_length=TRACE_MAX, allow_null=True, allow_blank=True, default=None)


@extend_schema_field(
    {
        "type": "object",
        "maxProperties": MAX_TASKS,
        "additionalProperties": {
            "type": "object",
            "properties": {
                "state": {"type": "string", "enum": list(STATES)},
                "trace": {"type": "string", "nullable": True, "maxLength": TRACE_MAX},
            },
            "required": ["state"],
            "additionalProperties": False,
        },
    }
)
class _StatusMapField(serializers.Field):  # type: ignore[type-arg]
    """{name: {state, trace}} for connectors or tasks."""

    def to_internal_value(self, data: Any) -> dict[str, Any]:
        if not isinstance(data, dict) or len(data) > MAX_TASKS:
            raise serializers.ValidationError("Expected a JSON object of statuses.")
        out: dict[str, Any] = {}
        for name, status in data.items():
            if len(name) > NAME_MAX:
                raise serializers.ValidationError("A name is too long.")
            out[name] = _Status.validated(status)
        return out

    def to_representation(self, value: Any) -> Any:
        return value


class _TopicSerializer(StrictSerializer):
    source_topic = StrictCharField(max_length=NAME_MAX)
    remote_topic = StrictCharField(max_length=NAME_MAX)
    matched_filter = StrictCharField(max_length=VALUE_MAX)


class MemberReportSerializer(StrictSerializer):
    """What a member reports with each heartbeat (statuses, never a resolved value)."""

    worker_id = StrictCharField(max_length=NAME_MAX)
    rest_url = StrictCharField(max_length=URL_MAX, required=False, default="")
    connectors = _StatusMapField(required=False, default=dict)
    tasks = _StatusMapField(required=False, default=dict)
    topics = serializers.ListField(
        child=_TopicSerializer(),
        max_length=MAX_TOPICS,
        required=False,
        allow_null=True,
        default=None,
    )
    lagging_topics = serializers.ListField(
        child=StrictCharField(max_length=NAME_MAX),
        max_length=MAX_TOPICS,
        required=False,
        allow_null=True,
        default=None,
    )
    emitted_heartbeat_ms = StrictIntegerField(
        min_value=0, required=False, allow_null=True, default=None
    )


class JoinSerializer(StrictSerializer):
    member_id = StrictCharField(max_length=NAME_MAX)
    worker_id = StrictCharField(max_length=NAME_MAX)
    rest_url = StrictCharField(max_length=URL_MAX)
    session_timeout_ms = StrictIntegerField(min_value=1000, max_value=300_000)


class MemberSerializer(StrictSerializer):
    member_id = StrictCharField(max_length=NAME_MAX)


class HeartbeatSerializer(StrictSerializer):
    member_id = StrictCharField(max_length=NAME_MAX)
    report = MemberReportSerializer()
    known_flow_offset = StrictIntegerField(min_value=-1, required=False, default=-1)
    known_config_offset = StrictIntegerField(min_value=-1, required=False, default=-1)
    wait_ms = StrictIntegerField(min_value=0, max_value=30_000, required=False, default=0)


class _AssignmentSerializer(StrictSerializer):
    member_id = StrictCharField(max_length=NAME_MAX)
    connectors = serializers.ListField(child=StrictCharField(max_length=NAME_MAX), max_length=10)
    tasks = serializers.ListField(child=StrictCharField(max_length=NAME_MAX), max_length=MAX_TASKS)


class SyncSerializer(StrictSerializer):
    member_id = StrictCharField(max_length=NAME_MAX)
    generation = StrictIntegerField(min_value=0, max_value=INT32_MAX)
    assignments = serializers.ListField(child=_AssignmentSerializer(), max_length=1000)


class TaskConfigsSerializer(StrictSerializer):
    member_id = StrictCharField(max_length=NAME_MAX)
    generation = StrictIntegerField(min_value=0, max_value=INT32_MAX)
    connector = StrictCharField(max_length=NAME_MAX)
    task_configs = serializers.ListField(child=StringMapField(), max_length=MAX_TASKS)
    # The member whose connector computed them (a follower that posted them to the leader's
    # REST server), for the audit trail; empty: the leader's own connector.
    poster_member_id = StrictCharField(max_length=NAME_MAX, required=False, default="")
    poster_worker_id = StrictCharField(max_length=NAME_MAX, required=False, default="")


class ConfigTextSerializer(StrictSerializer):
    text = StrictCharField(max_length=1_048_576, allow_blank=True, trim_whitespace=False)


class TargetStateSerializer(StrictSerializer):
    source = StrictCharField(max_length=NAME_MAX)  # type: ignore[assignment]  # a field named source
    target = StrictCharField(max_length=NAME_MAX)
    state = serializers.ChoiceField(choices=("PAUSED", "STARTED"))
    connectors = serializers.ListField(
        child=StrictCharField(max_length=NAME_MAX), max_length=10, required=False, default=list
    )


class FlowQuerySerializer(StrictSerializer):
    """GET /api/v1/mirror/flows' filters: a cluster alias each."""

    source = StrictCharField(max_length=NAME_MAX, required=False, default=None)  # type: ignore[assignment]
    target = StrictCharField(max_length=NAME_MAX, required=False, default=None)


class TargetStateQuerySerializer(StrictSerializer):
    """PUT .../pause and .../resume: the connectors named (none: every one of the flow)."""

    connector = serializers.ListField(
        child=StrictCharField(max_length=NAME_MAX), max_length=10, required=False, default=list
    )
