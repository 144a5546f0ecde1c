"""wire.convert.from_data: the entity kio's own constructors build, ints checked against their
type's range (a scalar, or each item of an array)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st
from kio.schema.list_partition_reassignments.v0.response import OngoingPartitionReassignment
from kio.schema.types import BrokerId
from kio.static.primitive import i32

from wire.convert import from_data

I32 = (-(2**31), 2**31 - 1)
ints = st.one_of(st.integers(*I32), st.integers(), st.booleans())


def _reference(index: object, replicas: list[object]) -> OngoingPartitionReassignment:
    """Built through kio's types, each value checked by its constructor."""
    return OngoingPartitionReassignment(
        partition_index=i32(index),
        replicas=tuple(BrokerId(r) for r in replicas),
        adding_replicas=(),
        removing_replicas=(),
    )


@given(index=ints, replicas=st.lists(ints, max_size=5))
def test_from_data_builds_what_kios_constructors_build(
    index: object, replicas: list[object]
) -> None:
    data = {"partition_index": index, "replicas": replicas}
    try:
        expected = _reference(index, replicas)
    except TypeError:
        with pytest.raises(TypeError):
            from_data(OngoingPartitionReassignment, data)
        return
    built = from_data(OngoingPartitionReassignment, data)
    assert built == expected
    assert [type(r) for r in built.replicas] == [type(r) for r in expected.replicas]


def test_an_int_out_of_its_types_range_is_refused() -> None:
    with pytest.raises(TypeError):
        from_data(OngoingPartitionReassignment, {"partition_index": 2**31, "replicas": []})
    with pytest.raises(TypeError):
        from_data(
            OngoingPartitionReassignment, {"partition_index": 0, "replicas": [1, -(2**31) - 1]}
        )
