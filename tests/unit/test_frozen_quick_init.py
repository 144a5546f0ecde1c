"""quick_init builds what the dataclass's own __init__ builds, and refuses what it cannot."""

from __future__ import annotations

import dataclasses
import inspect

import pytest
from hypothesis import given
from hypothesis import strategies as st

from controlplane.controller.frozen import quick_init
from controlplane.controller.image import PartitionRegistration, TopicInfo
from controlplane.controller.kraft.frames import KafkaRecord
from controlplane.controller.records import PartitionChangeRecord, PartitionRecord

QUICK = [PartitionRegistration, TopicInfo, PartitionRecord, PartitionChangeRecord, KafkaRecord]


@pytest.mark.parametrize("cls", QUICK, ids=lambda c: c.__name__)
def test_the_signature_is_the_dataclass_fields(cls: type) -> None:
    fields = dataclasses.fields(cls)
    parameters = list(inspect.signature(cls).parameters.values())
    assert [p.name for p in parameters] == [f.name for f in fields]
    for parameter, field in zip(parameters, fields, strict=True):
        expected = (
            inspect.Parameter.empty if field.default is dataclasses.MISSING else field.default
        )
        assert parameter.default == expected
        assert parameter.kind is inspect.Parameter.POSITIONAL_OR_KEYWORD


@pytest.mark.parametrize("cls", QUICK, ids=lambda c: c.__name__)
def test_instances_stay_frozen(cls: type) -> None:
    required = {f.name: 0 for f in dataclasses.fields(cls) if f.default is dataclasses.MISSING}
    instance = cls(**required)
    with pytest.raises(dataclasses.FrozenInstanceError):
        instance.__setattr__(dataclasses.fields(cls)[0].name, 1)


ints = st.lists(st.integers(0, 9), max_size=3).map(tuple)


@given(
    st.integers(0, 5),
    st.text(max_size=3),
    st.none() | ints,
    st.integers(-2, 9),
    st.none() | ints,
    st.none() | st.booleans(),
)
def test_a_record_holds_what_it_was_given_by_position_or_keyword(
    partition_id: int,
    topic_id: str,
    isr: tuple[int, ...] | None,
    leader: int,
    offline: tuple[int, ...] | None,
    isolated: bool | None,
) -> None:
    given_fields = {
        "partition_id": partition_id,
        "topic_id": topic_id,
        "isr": isr,
        "leader": leader,
        "offline_replicas": offline,
        "canary_isolated": isolated,
    }
    by_keyword = PartitionChangeRecord(**given_fields)  # type: ignore[arg-type]
    by_position = PartitionChangeRecord(
        partition_id, topic_id, isr, leader, None, offline, isolated
    )
    assert by_keyword == by_position
    assert hash(by_keyword) == hash(by_position)
    held = dataclasses.asdict(by_keyword)
    assert {name: held[name] for name in given_fields} == given_fields
    assert held["replicas"] is held["directories"] is held["adding_replicas"] is None
    assert dataclasses.replace(by_keyword, leader=leader + 1).leader == leader + 1


def test_what_it_cannot_build_the_same_is_refused() -> None:
    @dataclasses.dataclass(slots=True)
    class NotFrozen:
        a: int

    @dataclasses.dataclass(frozen=True, slots=True)
    class Factory:
        a: list[int] = dataclasses.field(default_factory=list)

    @dataclasses.dataclass(frozen=True, slots=True)
    class PostInit:
        a: int

        def __post_init__(self) -> None:
            pass

    @dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
    class KeywordOnly:
        a: int

    @dataclasses.dataclass(frozen=True)
    class NoSlots:
        a: int

    for cls in (NotFrozen, Factory, PostInit, KeywordOnly, NoSlots):
        with pytest.raises(TypeError):
            quick_init(cls)
