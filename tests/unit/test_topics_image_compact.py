"""The topics image's compact form (issue 23): partitions share their broker tuples and their
topic's id string, and the indexes by broker are kept as groups of partitions alike in
(replicas, ISR, leader). Whatever the puts, the groups answer what a naive scan of the
partitions answers, on the image and through a delta over it, and leave no empty group behind.
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from controlplane.controller.image import MetadataDelta, MetadataImage, PartitionRegistration
from controlplane.controller.image.topics import TopicInfo, TopicPartition, TopicsImage
from controlplane.controller.records import (
    NO_LEADER,
    PartitionChangeRecord,
    PartitionRecord,
    RemoveTopicRecord,
    TopicRecord,
)

TOPIC = "00000000-0000-0000-0000-000000000001"
BROKERS = st.integers(0, 4)
BROKER_TUPLES = st.lists(BROKERS, max_size=3, unique=True).map(tuple)


def fresh(text: str) -> str:
    """An equal string that is another object (as a decoded record or a loaded row brings)."""
    copy = "".join(list(text))
    assert copy == text and copy is not text
    return copy


def own(brokers: tuple[int, ...]) -> tuple[int, ...]:
    """An equal tuple that is another object."""
    return tuple(list(brokers))  # tuple() of a list always builds a new one


def image_with_topic(partitions: int) -> MetadataImage:
    image = MetadataImage(cluster_id="c")
    delta = MetadataDelta(image)
    delta.replay(TopicRecord(name="foo", topic_id=TOPIC))
    for index in range(partitions):
        delta.replay(
            PartitionRecord(
                partition_id=index,
                topic_id=fresh(TOPIC),
                replicas=own((1, 2, 3)),
                isr=own((1, 2, 3)),
                leader=1,
            )
        )
    image.apply(delta)
    return image


def test_partitions_share_their_tuples_and_their_topic_id() -> None:
    image = image_with_topic(3)
    first, second = image.partitions[(TOPIC, 0)], image.partitions[(TOPIC, 1)]
    assert first.replicas is second.replicas
    assert first.isr is first.replicas  # equal tuples are one object
    topic_id = image.topics[TOPIC].topic_id
    assert all(tp[0] is topic_id for tp in image.partitions)


def test_a_loaded_partition_shares_them_too() -> None:
    image = image_with_topic(1)
    # As the tables' load builds it: its own tuples, its own copy of the topic id.
    image.put_partition(
        (fresh(TOPIC), 1), PartitionRegistration(replicas=own((1, 2, 3)), isr=own((1, 2)), leader=2)
    )
    loaded = image.partitions[(TOPIC, 1)]
    assert loaded.replicas is image.partitions[(TOPIC, 0)].replicas
    assert loaded == PartitionRegistration(replicas=(1, 2, 3), isr=(1, 2), leader=2)
    assert all(tp[0] is image.topics[TOPIC].topic_id for tp in image.partitions)


def test_large_partition_indexes_share_their_ints() -> None:
    image = TopicsImage()
    image.put_topic(TOPIC, TopicInfo(TOPIC, "foo", 2000))
    other = "00000000-0000-0000-0000-000000000002"
    image.put_topic(other, TopicInfo(other, "bar", 2000))
    partition = PartitionRegistration(replicas=(1,), isr=(1,), leader=1)
    for topic_id in (TOPIC, other):
        image.put_partition((topic_id, int("1999")), partition)  # int(): an int of its own
    first, second = (tp[1] for tp in image.partitions)
    assert first == second == 1999 and first is second


def test_a_change_keeps_the_tuples_shared_and_leaves_no_empty_group() -> None:
    image = image_with_topic(2)
    delta = MetadataDelta(image)
    delta.replay(
        PartitionChangeRecord(partition_id=0, topic_id=fresh(TOPIC), isr=own((2, 3)), leader=2)
    )
    delta.replay(PartitionChangeRecord(partition_id=1, topic_id=TOPIC, isr=own((2, 3)), leader=2))
    image.apply(delta)
    moved = image.partitions[(TOPIC, 0)], image.partitions[(TOPIC, 1)]
    assert moved[0].isr is moved[1].isr
    assert set(image.topics_image.groups) == {((1, 2, 3), (2, 3), 2)}
    assert not image.broker_has_leaderships(1) and image.broker_has_leaderships(2)
    assert image.leader_index == {2: {(TOPIC, 0), (TOPIC, 1)}}

    delta = MetadataDelta(image)
    delta.replay(RemoveTopicRecord(topic_id=TOPIC))
    image.apply(delta)
    topics = image.topics_image
    assert not topics.partitions and not topics.groups
    assert not topics.groups_by_replica and not topics.groups_by_isr_member
    assert not topics.groups_by_leader


def test_the_delta_answers_leaderships_through_its_changes() -> None:
    image = image_with_topic(2)
    delta = MetadataDelta(image)
    assert delta.broker_has_leaderships(1) and not delta.broker_has_leaderships(3)
    delta.replay(PartitionChangeRecord(partition_id=0, topic_id=TOPIC, leader=3))
    assert delta.broker_has_leaderships(1) and delta.broker_has_leaderships(3)
    delta.replay(PartitionChangeRecord(partition_id=1, topic_id=TOPIC, leader=NO_LEADER))
    assert not delta.broker_has_leaderships(1)
    assert delta.partitions_led_by(NO_LEADER) == {(TOPIC, 1)}
    assert delta.partitions_led_by(3) == {(TOPIC, 0)}
    assert delta.partitions_with_isr_member(2) == {(TOPIC, 0), (TOPIC, 1)}


REGISTRATIONS = st.builds(
    lambda replicas, isr, leader, offline: PartitionRegistration(
        replicas=own(replicas), isr=own(isr), leader=leader, offline_replicas=own(offline)
    ),
    BROKER_TUPLES,
    BROKER_TUPLES,  # not always within the replicas: the groups must not assume it
    st.one_of(st.just(NO_LEADER), BROKERS),
    BROKER_TUPLES,
)
PUTS = st.lists(
    st.tuples(st.integers(0, 5), st.one_of(st.none(), REGISTRATIONS)), min_size=1, max_size=30
)


def naive(
    partitions: dict[TopicPartition, PartitionRegistration | None],
) -> tuple[dict[int, set[TopicPartition]], ...]:
    replicas: dict[int, set[TopicPartition]] = {}
    isrs: dict[int, set[TopicPartition]] = {}
    leaders: dict[int, set[TopicPartition]] = {}
    for tp, p in partitions.items():
        if p is None:
            continue
        for r in p.replicas:
            replicas.setdefault(r, set()).add(tp)
        for r in p.isr:
            isrs.setdefault(r, set()).add(tp)
        leaders.setdefault(p.leader, set()).add(tp)
    return replicas, isrs, leaders


@settings(max_examples=200, deadline=None)
@given(base=PUTS, changes=PUTS)
def test_the_groups_answer_what_a_scan_answers(
    base: list[tuple[int, PartitionRegistration | None]],
    changes: list[tuple[int, PartitionRegistration | None]],
) -> None:
    image = TopicsImage()
    image.put_topic(TOPIC, TopicInfo(TOPIC, "foo", 6))
    for index, partition in base:
        image.put_partition((fresh(TOPIC), index), partition)
    replicas, isrs, leaders = naive(dict(image.partitions))
    assert (image.replica_index, image.isr_index, image.leader_index) == (replicas, isrs, leaders)
    for broker_id in range(-1, 5):
        assert image.broker_has_leaderships(broker_id) == (broker_id in leaders)
        assert image.broker_has_replicas(broker_id) == (broker_id in replicas)
    grouped_partitions = 0
    for group, grouped in image.groups.items():
        # A group of one holds its partition's key, a larger one a set of two or more.
        members = grouped if isinstance(grouped, set) else {grouped}
        assert len(members) >= 2 or not isinstance(grouped, set)
        assert all(
            (p.replicas, p.isr, p.leader) == group for p in (image.partitions[tp] for tp in members)
        )
        grouped_partitions += len(members)
    assert grouped_partitions == len(image.partitions)  # each partition in one group

    # A delta over the image: its answers are those of the image as the delta changes it.
    delta = MetadataDelta(MetadataImage(cluster_id="c", topics_image=image))
    merged: dict[TopicPartition, PartitionRegistration | None] = dict(image.partitions)
    for index, partition in changes:
        delta.topics_delta.changed_partitions[(TOPIC, index)] = partition
        merged[(TOPIC, index)] = partition
    replicas, isrs, leaders = naive(merged)
    for broker_id in range(-1, 5):
        assert delta.partitions_with_replica(broker_id) == replicas.get(broker_id, set())
        assert delta.partitions_with_isr_member(broker_id) == isrs.get(broker_id, set())
        assert delta.partitions_led_by(broker_id) == leaders.get(broker_id, set())
        assert delta.broker_has_leaderships(broker_id) == (broker_id in leaders)
