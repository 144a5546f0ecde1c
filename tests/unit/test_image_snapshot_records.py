"""Snapshots of the image (Kafka's MetadataImage.write): the records each part yields rebuild it.

For any valid record stream: the image after some step, said as `snapshot_records()` (through
the JSON the log stores), replayed into an empty image by `image_from_records`, then followed by
the rest of the log, is the image the whole log builds. Equal images yield identical records
(standbys compare checksums of them), and every part of the image yields records.

The record streams are those of the controller's own property machines (brokers, replication,
canary, MirrorMaker groups), extended by a snapshot rule; configs, quotas, ACLs and delegation
tokens, which no machine drives, by a small machine of their records.
"""

from __future__ import annotations

import dataclasses
import json
import uuid
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

import tests.unit.test_canary_properties as canary_properties
import tests.unit.test_controller_properties as controller_properties
import tests.unit.test_mirror_group as mirror_group
import tests.unit.test_replication_properties as replication_properties
from controlplane.controller.env import BrokerSession
from controlplane.controller.image import MetadataDelta, MetadataImage, image_from_records
from controlplane.controller.image import metadata as image_metadata
from controlplane.controller.records import (
    AccessControlEntryRecord,
    ClientQuotaRecord,
    ConfigRecord,
    DelegationTokenRecord,
    PartitionRecord,
    Record,
    RemoveAccessControlEntryRecord,
    RemoveDelegationTokenRecord,
    RemoveTopicRecord,
    TopicRecord,
    record_from_data,
)

STATE_FIELDS_THAT_ARE_NOT_PARTS = {"cluster_id", "last_offset", "derived"}


def through_json(records: list[Record]) -> list[Record]:
    """The records as the runtime stores and reads them back."""
    return [record_from_data(r.TYPE, json.loads(r.to_json())) for r in records]


def encoded(image: MetadataImage) -> list[tuple[str, str]]:
    return [(r.TYPE, r.to_json()) for r in image.snapshot_records()]


def rebuilt(image: MetadataImage) -> MetadataImage:
    return image_from_records(
        cluster_id=image.cluster_id,
        records=through_json(list(image.snapshot_records())),
        last_offset=image.last_offset,
    )


def replayed_after(image: MetadataImage, records: list[Record]) -> MetadataImage:
    delta = MetadataDelta(image)
    for record in records:
        delta.replay(record)
    image.apply(delta)
    return image


class SnapshotChecks:
    """Mixed into a property machine: a rule takes a snapshot at some step, and after every step
    the snapshot followed by the log since is the image; so is a snapshot of the image now."""

    image: MetadataImage
    snapshot: tuple[int, list[Record], int] | None = None  # (log length, records, last offset)

    def logged(self) -> list[Record]:
        raise NotImplementedError

    @rule()
    def take_snapshot(self) -> None:
        records = through_json(list(self.image.snapshot_records()))
        self.snapshot = (len(self.logged()), records, self.image.last_offset)

    @invariant()
    def a_snapshot_now_rebuilds_the_image(self) -> None:
        again = rebuilt(self.image)
        assert again.as_comparable() == self.image.as_comparable()
        assert encoded(again) == encoded(self.image)  # equal images, identical records

    @invariant()
    def a_snapshot_then_the_log_since_rebuilds_the_image(self) -> None:
        if self.snapshot is None:
            return
        taken_at, records, last_offset = self.snapshot
        start = image_from_records(
            cluster_id=self.image.cluster_id, records=records, last_offset=last_offset
        )
        image = replayed_after(start, self.logged()[taken_at:])
        assert image.as_comparable() == self.image.as_comparable()


class BrokerSnapshots(SnapshotChecks, controller_properties.ControllerMachine):
    def logged(self) -> list[Record]:
        return [record for _, record in self.log]


class ReplicationSnapshots(SnapshotChecks, replication_properties.ReplicationMachine):
    def logged(self) -> list[Record]:
        return [record for _, record in self.records]

    # Log dir ids, as Kafka's heartbeats name them (KIP-858: Uuids).
    @rule(
        broker_id=replication_properties.BROKER_IDS,
        dirs=st.sets(st.sampled_from([str(uuid.UUID(int=0xA)), str(uuid.UUID(int=0xB))])),
    )
    def log_dirs_go_offline_or_back(  # the machine's own heartbeats bring them back
        self, broker_id: int, dirs: set[str]
    ) -> None:
        registered = self.image.broker(broker_id)
        if registered is None:
            return
        self.sessions[broker_id] = BrokerSession(self.now, self.image.last_offset)
        response = self.run(
            "BrokerHeartbeat",
            {
                "broker_id": broker_id,
                "broker_epoch": registered.epoch,
                "current_metadata_offset": self.image.last_offset,
                "want_fence": False,
                "want_shut_down": False,
                "offline_log_dirs": sorted(dirs),
            },
        )
        assert response["error_code"] == 0, response


class CanarySnapshots(SnapshotChecks, canary_properties.CanaryMachine):
    def logged(self) -> list[Record]:
        return [record for _, record in self.records]


class MirrorSnapshots(SnapshotChecks, mirror_group.GroupMachine):
    @property
    def image(self) -> MetadataImage:
        return self.cluster.image

    def logged(self) -> list[Record]:
        return list(self.cluster.log)


NAMES = st.sampled_from(["a", "b", "c"])


class OtherPartsMachine(SnapshotChecks, RuleBasedStateMachine):
    """Configs (of brokers and of topics, which go with their topic), client quotas (default
    and named entities), ACLs and delegation tokens, as valid records in any order."""

    def __init__(self) -> None:
        super().__init__()
        self.image = MetadataImage(cluster_id="other-parts")
        self.log: list[Record] = []
        self.serial = 0

    def logged(self) -> list[Record]:
        return self.log

    def write(self, record: Record) -> None:
        self.log.append(replay_one(self.image, record))

    @rule(name=NAMES)
    def create_topic(self, name: str) -> None:
        if name not in self.image.topic_ids:
            self.serial += 1
            self.write(TopicRecord(name=name, topic_id=f"id-{name}-{self.serial}"))

    @rule(name=NAMES)
    def delete_topic(self, name: str) -> None:
        topic_id = self.image.topic_ids.get(name)
        if topic_id is not None:
            self.write(RemoveTopicRecord(topic_id=topic_id))

    @rule(
        resource=st.sampled_from([("TOPIC", "a"), ("TOPIC", "b"), ("BROKER", "1"), ("BROKER", "")]),
        name=st.sampled_from(["retention.ms", "cleanup.policy"]),
        value=st.none() | st.sampled_from(["1", "2", "delete"]),
    )
    def alter_config(self, resource: tuple[str, str], name: str, value: str | None) -> None:
        self.write(ConfigRecord(resource[0], resource[1], name, value))

    @rule(
        entity=st.sampled_from(
            [
                (("user", None),),
                (("user", "alice"),),
                (("client-id", "app"), ("user", "alice")),
                (("client-id", None), ("user", None)),
                (("ip", "10.0.0.1"),),
            ]
        ),
        key=st.sampled_from(["producer_byte_rate", "request_percentage"]),
        value=st.floats(min_value=0, max_value=1e9),
        remove=st.booleans(),
    )
    def alter_quota(self, entity: Any, key: str, value: float, remove: bool) -> None:
        self.write(ClientQuotaRecord(entity=entity, key=key, value=value, remove=remove))

    @rule(
        principal=st.sampled_from(["User:alice", "User:bob"]),
        operation=st.sampled_from(["READ", "WRITE"]),
    )
    def create_acl(self, principal: str, operation: str) -> None:
        self.serial += 1
        self.write(
            AccessControlEntryRecord(
                f"acl-{self.serial}", "TOPIC", "a", "LITERAL", principal, "*", operation, "ALLOW"
            )
        )

    @precondition(lambda self: bool(self.image.acls))
    @rule(pick=st.integers(0, 100))
    def delete_acl(self, pick: int) -> None:
        ids = sorted(self.image.acls)
        self.write(RemoveAccessControlEntryRecord(ids[pick % len(ids)]))

    @rule(token=st.sampled_from(["t1", "t2", "t3"]), expiry=st.integers(0, 100))
    def create_or_renew_token(self, token: str, expiry: int) -> None:
        self.write(
            DelegationTokenRecord(token, "User:alice", "User:alice", ("User:bob",), 0, 100, expiry)
        )

    @precondition(lambda self: bool(self.image.delegation_tokens))
    @rule(pick=st.integers(0, 100))
    def expire_token(self, pick: int) -> None:
        ids = sorted(self.image.delegation_tokens)
        self.write(RemoveDelegationTokenRecord(ids[pick % len(ids)]))


def replay_one(image: MetadataImage, record: Record) -> Record:
    replayed_after(image, [record])
    return record


MACHINE_SETTINGS = settings(max_examples=40, stateful_step_count=30, deadline=None)
TestBrokerSnapshots = BrokerSnapshots.TestCase
TestBrokerSnapshots.settings = MACHINE_SETTINGS
TestReplicationSnapshots = ReplicationSnapshots.TestCase
TestReplicationSnapshots.settings = MACHINE_SETTINGS
TestCanarySnapshots = CanarySnapshots.TestCase
TestCanarySnapshots.settings = MACHINE_SETTINGS
TestMirrorSnapshots = MirrorSnapshots.TestCase
TestMirrorSnapshots.settings = MACHINE_SETTINGS
TestOtherPartsSnapshots = OtherPartsMachine.TestCase
TestOtherPartsSnapshots.settings = settings(max_examples=80, stateful_step_count=30, deadline=None)


def test_every_part_of_the_image_is_in_its_snapshot() -> None:
    """A part added to MetadataImage must be in `parts()` (so in the snapshot), with records()
    of its own."""
    image = MetadataImage(cluster_id="c")
    fields = {f.name for f in dataclasses.fields(MetadataImage)} - STATE_FIELDS_THAT_ARE_NOT_PARTS
    assert {id(getattr(image, name)) for name in fields} == {id(part) for part in image.parts()}
    assert len(image.parts()) == len(fields)
    for name in fields:
        assert "records" in vars(type(getattr(image, name))), f"{name} has no records()"


ACLS = [
    AccessControlEntryRecord(f"acl-{i}", "TOPIC", "t", "LITERAL", "User:u", "*", "READ", "ALLOW")
    for i in range(4)
]
CONFIGS = [ConfigRecord("BROKER", str(i % 2), f"k{i}", "v") for i in range(4)]
QUOTAS = [
    ClientQuotaRecord(entity=(("user", name),), key=key, value=1.0)
    for name in (None, "u")
    for key in ("a", "b")
]
TOKENS = [DelegationTokenRecord(f"t{i}", "User:o", "User:o", (), 0, 9, 9) for i in range(3)]


@settings(max_examples=50, deadline=None)
@given(
    first=st.permutations([*ACLS, *CONFIGS, *QUOTAS, *TOKENS]),
    second=st.permutations([*ACLS, *CONFIGS, *QUOTAS, *TOKENS]),
)
def test_equal_images_built_in_any_order_yield_identical_records(
    first: list[Record], second: list[Record]
) -> None:
    one = replayed_after(MetadataImage(cluster_id="c"), first)
    other = replayed_after(MetadataImage(cluster_id="c"), second)
    assert encoded(one) == encoded(other)
    assert rebuilt(one).as_comparable() == one.as_comparable()


def test_a_snapshot_loads_at_its_offset_and_the_log_goes_on_from_there() -> None:
    image = replayed_after(MetadataImage(cluster_id="c"), [*ACLS, TopicRecord("t", "id-t")])
    loaded = image_from_records(cluster_id="c", records=image.snapshot_records(), last_offset=41)
    assert loaded.last_offset == 41
    delta = MetadataDelta(loaded)
    assert delta.replay(RemoveTopicRecord("id-t")) == 42
    loaded.apply(delta)
    assert loaded.last_offset == 42 and not loaded.topics


def test_a_snapshot_loaded_in_many_deltas_is_the_same_image(monkeypatch: Any) -> None:
    """Large snapshots load in deltas of SNAPSHOT_RECORDS_PER_DELTA records; a delta may end
    between a topic and its partitions, or within them."""
    log: list[Record] = [*ACLS, *CONFIGS]
    for t in range(3):
        log.append(TopicRecord(f"t{t}", f"id-{t}"))
        log.extend(PartitionRecord(p, f"id-{t}", (1, 2), (2,), 2, p, 2 * p) for p in range(5))
    image = replayed_after(MetadataImage(cluster_id="c"), log)
    monkeypatch.setattr(image_metadata, "SNAPSHOT_RECORDS_PER_DELTA", 4)
    loaded = rebuilt(image)
    assert loaded.as_comparable() == image.as_comparable()
    assert loaded.leader_index == image.leader_index  # the indexes are built as replay builds them


# Records about topics in any order, valid or not: a topic (of three names and ids), a partition
# (of one of the three, most often at its topic's next index), a topic's removal, a config.
@st.composite
def topic_records(draw: st.DrawFn) -> list[Record]:
    records: list[Record] = []
    next_index = {"i": 0, "j": 0, "k": 0}
    created: list[str] = []  # partitions are mostly of a topic created before them
    for _ in range(draw(st.integers(0, 14))):
        kind = draw(st.sampled_from(["topic", "partition", "partition", "partition", "other"]))
        anyone = draw(st.integers(0, 9)) == 0  # most often a valid record, but not always
        if not created and not anyone:
            kind = "topic"
        fresh = [t for t in "ijk" if t not in created] if kind == "topic" else created
        anyone = anyone or not fresh
        topic_id = draw(st.sampled_from(list("ijk") if anyone else fresh))
        if kind == "topic":
            created.append(topic_id)
            name = draw(st.sampled_from("abc")) if anyone else "abc"["ijk".index(topic_id)]
            records.append(TopicRecord(name=name, topic_id=topic_id))
        elif kind == "partition":
            index = next_index[topic_id] + draw(st.sampled_from([0] * 8 + [1, -1]))
            next_index[topic_id] = max(index + 1, 0)
            records.append(
                PartitionRecord(
                    partition_id=max(index, 0),
                    topic_id=topic_id,
                    replicas=draw(st.sampled_from([(1, 2), (2, 3)])),
                    isr=draw(st.sampled_from([(1, 2), (2,), ()])),
                    leader=draw(st.sampled_from([1, 2, -1])),
                    offline_replicas=draw(st.sampled_from([(), (3,)])),
                )
            )
        else:
            records.append(
                draw(
                    st.sampled_from(
                        [RemoveTopicRecord(topic_id), ConfigRecord("TOPIC", "a", "k", "v")]
                    )
                )
            )
            if isinstance(records[-1], RemoveTopicRecord):
                next_index[topic_id] = 0
                created = [t for t in created if t != topic_id]
    return records


@settings(max_examples=300, deadline=None)
@given(records=topic_records())
def test_a_snapshot_loads_as_replay_builds_or_is_refused_as_replay_refuses(
    records: list[Record],
) -> None:
    """`image_from_records` puts a topic and its partitions straight into the image: for any
    records, what replaying them through a delta makes (indexes included), or, where replay
    refuses them, a refusal."""
    try:
        replayed = replayed_after(MetadataImage(cluster_id="c"), records)
    except ValueError:
        replayed = None
    try:
        loaded = image_from_records(cluster_id="c", records=records, last_offset=len(records) - 1)
    except ValueError:
        assert replayed is None
        return
    assert replayed is not None
    assert loaded.as_comparable() == replayed.as_comparable()
    topics, expected = loaded.topics_image, replayed.topics_image
    assert topics.groups == expected.groups
    assert (topics.replica_index, topics.isr_index, topics.leader_index) == (
        expected.replica_index,
        expected.isr_index,
        expected.leader_index,
    )
