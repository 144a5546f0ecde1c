"""The strict serializers' fast path accepts exactly what full validation accepts, identically."""

from __future__ import annotations

import uuid
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st
from rest_framework.exceptions import ValidationError

from brokers.api.serializers import BrokerHeartbeatSerializer, UnregisterBrokerSerializer
from controlplane.api.fields import StrictSerializer

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
    }
    plan = BrokerHeartbeatSerializer.__dict__["_fast_plan"]
    assert plan.usable and plan.validate(body) is not None
    assert plan.validate({**body, "broker_id": "1"}) is None  # left to full validation
