"""The strict serializers' fast path accepts exactly what full validation accepts, identically."""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from rest_framework import serializers
from rest_framework.exceptions import ValidationError

from brokers.api.serializers import BrokerHeartbeatSerializer, UnregisterBrokerSerializer
from controlplane.api.fields import (
    StrictCharField,
    StrictIntegerField,
    StrictIntegerListField,
    StrictSerializer,
)

json_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**64), max_value=2**64),
    st.floats(allow_nan=False),
    st.text(max_size=5),
    st.sampled_from(["1", "true", str(uuid.UUID(int=1)), "not-a-uuid"]),
)
json_values = st.recursive(
    json_scalars,
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3), inner, max_size=3)
    ),
    max_leaves=6,
)
HEARTBEAT_KEYS = [
    "broker_id",
    "broker_epoch",
    "current_metadata_offset",
    "want_fence",
    "want_shut_down",
    "offline_log_dirs",
    "unknown",
]
plausible = {
    "broker_id": st.integers(-2, 2**31),
    "broker_epoch": st.integers(-3, 2**63),
    "current_metadata_offset": st.integers(-3, 10),
    "want_fence": st.booleans(),
    "want_shut_down": st.booleans(),
    "offline_log_dirs": st.lists(st.sampled_from([str(uuid.UUID(int=7)), "x"]), max_size=3),
    "unknown": json_values,
}


@st.composite
def heartbeat_bodies(draw: st.DrawFn) -> Any:
    if draw(st.integers(0, 9)) == 0:
        return draw(json_values)
    keys = draw(st.lists(st.sampled_from(HEARTBEAT_KEYS), unique=True))
    return {
        k: draw(st.one_of(plausible[k], json_values) if draw(st.booleans()) else plausible[k])
        for k in keys
    }


def full(serializer: type[StrictSerializer], data: Any) -> dict[str, Any] | str:
    instance = serializer(data=data)
    try:
        instance.is_valid(raise_exception=True)
    except ValidationError as error:
        return f"error: {error.detail}"
    return dict(instance.validated_data)


def fast(serializer: type[StrictSerializer], data: Any) -> dict[str, Any] | str:
    try:
        return serializer.validated(data)
    except ValidationError as error:
        return f"error: {error.detail}"


@settings(max_examples=600, deadline=None)
@given(heartbeat_bodies())
def test_heartbeat_fast_path_agrees_with_full_validation(data: Any) -> None:
    assert fast(BrokerHeartbeatSerializer, data) == full(BrokerHeartbeatSerializer, data)


@settings(max_examples=200, deadline=None)
@given(st.one_of(json_values, st.fixed_dictionaries({"broker_id": json_values})))
def test_unregister_fast_path_agrees_with_full_validation(data: Any) -> None:
    assert fast(UnregisterBrokerSerializer, data) == full(UnregisterBrokerSerializer, data)


def test_the_fast_path_is_taken_for_a_plain_heartbeat() -> None:
    body = {"broker_id": 1, "broker_epoch": 5, "current_metadata_offset": 9}
    assert BrokerHeartbeatSerializer.validated(body) == {
        **body,
        "want_fence": False,
        "want_shut_down": False,
        "offline_log_dirs": [],
        "cordoned_log_dirs": None,  # KIP-1066: the broker said nothing of them
    }
    plan = BrokerHeartbeatSerializer.__dict__["_fast_plan"]
    assert plan.usable and plan.validate(body) is not None
    assert plan.validate({**body, "broker_id": "1"}) is None  # left to full validation


ENVELOPE_TEXT = st.one_of(
    st.text(max_size=6),
    st.sampled_from(["", " padded ", "a\x00b", "é", "x" * 70, "legacy-admin"]),
)
plausible_header = st.fixed_dictionaries(
    {
        "request_api_key": st.one_of(st.integers(-1, 40000), json_values),
        "request_api_version": st.integers(-1, 3),
        "correlation_id": st.one_of(st.integers(-(2**32), 2**32), st.none()),
    },
    optional={"client_id": st.one_of(ENVELOPE_TEXT, st.none(), json_values), "x": json_values},
)
envelope_bodies = st.fixed_dictionaries(
    {
        "request_header": st.one_of(plausible_header, json_values),
        "request_data": json_values,
        "request_principal": json_values,
        "client_host_address": st.one_of(ENVELOPE_TEXT, json_values),
    },
    optional={
        "forwarding_broker_id": st.one_of(st.none(), st.integers(-2, 2**32), json_values),
        "extra": json_values,
    },
)


@settings(max_examples=600, deadline=None)
@given(st.one_of(envelope_bodies, json_values))
def test_envelope_fast_path_agrees_with_full_validation(data: Any) -> None:
    from shell.api.envelope import EnvelopeSerializer

    assert fast(EnvelopeSerializer, data) == full(EnvelopeSerializer, data)


def test_the_fast_path_is_taken_for_a_plain_envelope() -> None:
    from shell.api.envelope import EnvelopeSerializer

    body = {
        "request_header": {
            "request_api_key": 44,
            "request_api_version": 1,
            "client_id": "admin",
            "correlation_id": 3,
        },
        "request_data": {"resources": []},
        "request_principal": {"type": "User", "name": "alice"},
        "client_host_address": "10.0.0.1",
    }
    EnvelopeSerializer.validated(body)
    plan = EnvelopeSerializer.__dict__["_fast_plan"]
    assert plan.usable and plan.validate(body) == {**body, "forwarding_broker_id": None}


CONFIG_TEXT = st.one_of(
    st.text(max_size=4), st.sampled_from(["", " x ", "a\x00b", "retention.ms", "é", "1" * 1001])
)
config_entries = st.fixed_dictionaries(
    {
        "name": st.one_of(CONFIG_TEXT, json_values),
        "config_operation": st.one_of(
            st.sampled_from(["SET", "DELETE", "APPEND", "SUBTRACT", "set", ""]), json_values
        ),
    },
    optional={"value": st.one_of(CONFIG_TEXT, st.none(), json_values), "x": json_values},
)
config_resources = st.fixed_dictionaries(
    {
        "resource_type": st.one_of(
            st.sampled_from(["TOPIC", "BROKER", "BROKER_LOGGER", "GROUP", "topic"]), json_values
        ),
        "resource_name": st.one_of(CONFIG_TEXT, json_values),
    },
    optional={
        "configs": st.one_of(st.lists(config_entries, max_size=3), json_values),
        "x": json_values,
    },
)
incremental_alter_bodies = st.fixed_dictionaries(
    {"resources": st.one_of(st.lists(config_resources, max_size=3), json_values)},
    optional={"validate_only": st.one_of(st.booleans(), json_values), "x": json_values},
)


@settings(max_examples=800, deadline=None)
@given(st.one_of(incremental_alter_bodies, json_values))
def test_incremental_alter_configs_fast_path_agrees_with_full_validation(data: Any) -> None:
    from configs.api.config_serializers import IncrementalAlterConfigsSerializer

    assert fast(IncrementalAlterConfigsSerializer, data) == full(
        IncrementalAlterConfigsSerializer, data
    )


def test_the_fast_path_is_taken_for_a_plain_incremental_alter_configs() -> None:
    from configs.api.config_serializers import IncrementalAlterConfigsSerializer

    body: dict[str, Any] = {
        "resources": [
            {
                "resource_type": "TOPIC",
                "resource_name": "t",
                "configs": [{"name": "retention.ms", "config_operation": "SET", "value": "1"}],
            },
            {"resource_type": "BROKER", "resource_name": "1"},
        ]
    }
    IncrementalAlterConfigsSerializer.validated(body)
    plan = IncrementalAlterConfigsSerializer.__dict__["_fast_plan"]
    assert plan.usable
    assert plan.validate(body) == {
        "resources": [
            {**body["resources"][0]},
            {**body["resources"][1], "configs": []},
        ],
        "validate_only": False,
    }
    # A list too long, or an item the plan cannot vouch for: left to full validation.
    assert plan.validate({"resources": body["resources"] * 5001}) is None
    assert plan.validate({"resources": [{**body["resources"][0], "x": 1}]}) is None


class _Named(StrictSerializer):
    name = StrictCharField(required=False, allow_null=True, default=None)

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        if not attrs.get("name"):
            raise ValidationError("A name is required.")
        return attrs


class _Names(StrictSerializer):
    items = serializers.ListField(child=_Named())


def test_a_serializer_checking_more_than_its_fields_is_never_fast() -> None:
    """The plan checks fields only: a nested serializer's own validate() still runs."""
    assert str(fast(_Names, {"items": [{}]})).startswith("error:")
    assert fast(_Names, {"items": [{"name": "a"}]}) == {"items": [{"name": "a"}]}
    assert not _Names.__dict__["_fast_plan"].usable


INT_LISTS = st.one_of(
    st.lists(st.integers(-(2**31) - 1, 2**31), max_size=4),
    st.lists(st.integers(0, 3), min_size=1000, max_size=1001),  # at the length bound
    st.just([]),
    st.none(),
    json_values,
)


def test_the_fast_path_is_taken_for_a_move_of_thousands_of_partitions() -> None:
    from replicas.api.serializers import AlterPartitionReassignmentsSerializer

    partitions = [{"partition_index": i, "replicas": [1, 3]} for i in range(3000)]
    cancel = {"partition_index": 9, "replicas": None}
    body = {"topics": [{"name": "orders", "partitions": [*partitions, cancel]}]}
    AlterPartitionReassignmentsSerializer.validated(body)
    plan = AlterPartitionReassignmentsSerializer.__dict__["_fast_plan"]
    assert plan.usable
    assert plan.validate(body) == {
        "topics": body["topics"],
        "timeout_ms": 60000,
        "allow_replication_factor_change": True,
    }
    assert plan.validate(body) == full(AlterPartitionReassignmentsSerializer, body)


def body_of(serializer: Any, depth: int = 0) -> st.SearchStrategy[Any]:
    """Bodies for `serializer` drawn from its own fields: plausible values near each field's
    bounds, each sometimes replaced by any JSON, fields sometimes missing, sometimes extra."""

    def value(field: Any) -> st.SearchStrategy[Any]:
        if isinstance(field, StrictIntegerListField):
            low, high = field.min_value, field.max_value
            near = st.integers(low - 1, low + 3) | st.sampled_from([high, high + 1])
            return st.lists(near, max_size=3) | INT_LISTS
        if isinstance(field, StrictIntegerField):
            low, high = field.min_value, field.max_value
            valid = st.integers(low, min(low + 3, high))
            return valid | valid | valid | st.sampled_from([low - 1, high, high + 1])
        if isinstance(field, StrictSerializer) and depth < 3:
            return body_of(field, depth + 1)
        if isinstance(field, serializers.ListField) and isinstance(field.child, StrictSerializer):
            return (
                st.lists(body_of(field.child, depth + 1), max_size=3) if depth < 3 else st.just([])
            )
        if isinstance(field, serializers.BooleanField):
            return st.booleans()
        if isinstance(field, serializers.ChoiceField):
            return st.sampled_from([*field.choices, "unknown"])
        return CONFIG_TEXT

    kind = serializer if isinstance(serializer, type) else type(serializer)
    fields = kind().fields
    whole = st.fixed_dictionaries({name: value(f) for name, f in fields.items()})
    return (
        whole
        | whole
        | st.fixed_dictionaries(
            {},
            optional={
                **{name: st.one_of(value(f), json_values) for name, f in fields.items()},
                "extra": json_values,
            },
        )
    )


@pytest.mark.parametrize(
    "name",
    [
        "AlterPartitionReassignmentsSerializer",
        "AlterPartitionSerializer",
        "ListPartitionReassignmentsSerializer",
        "ElectLeadersSerializer",
        "CreatePartitionsSerializer",
        "CreateTopicsSerializer",
    ],
)
@settings(max_examples=300, deadline=None)
@given(data=st.data())
def test_the_fast_path_of_a_body_with_integer_lists_agrees(name: str, data: st.DataObject) -> None:
    from replicas.api import serializers as replica_serializers

    serializer = getattr(replica_serializers, name)
    body = data.draw(body_of(serializer) | json_values)
    assert fast(serializer, body) == full(serializer, body)


def test_a_broker_s_alter_partition_takes_the_fast_path() -> None:
    from replicas.api.serializers import AlterPartitionSerializer

    body = {
        "broker_id": 1,
        "broker_epoch": 7,
        "topics": [
            {
                "topic_name": "orders",
                "partitions": [
                    {
                        "partition_index": 0,
                        "leader_epoch": 3,
                        "new_isr": [1, 2],
                        "partition_epoch": 9,
                    }
                ],
            }
        ],
    }
    AlterPartitionSerializer.validated(body)
    plan = AlterPartitionSerializer.__dict__["_fast_plan"]
    assert plan.usable and plan.validate(body) == full(AlterPartitionSerializer, body)


@pytest.mark.parametrize(
    "new_isr",
    [[-1], [0, 1], [2**31 - 1], [2**31], [True], [1.0], ["1"], [], None, "1", list(range(1001))],
)
def test_an_integer_list_at_its_bounds_is_judged_as_full_validation_judges_it(
    new_isr: Any,
) -> None:
    from replicas.api.serializers import AlterPartitionSerializer

    partition = {"partition_index": 0, "leader_epoch": 3, "partition_epoch": 9, "new_isr": new_isr}
    body = {
        "broker_id": 1,
        "broker_epoch": 7,
        "topics": [{"topic_name": "o", "partitions": [partition]}],
    }
    assert fast(AlterPartitionSerializer, body) == full(AlterPartitionSerializer, body)
