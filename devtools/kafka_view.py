"""What a stock Kafka broker's image says of the brokers and partitions, against the
controller's own image: the two must never differ.

The broker's side is replayed from Kafka's records by Kafka's rules, written here from Kafka's
source and nothing of the controller's image code (an oracle, not a copy): `ClusterDelta`
(a registration whole; a change record's fencing and controlled-shutdown fields, where the
controlled-shutdown flag only ever turns on: a new registration alone clears it) and
`PartitionRegistration.merge` (null fields keep what was, a leader other than -2 bumps the
leader epoch, every change bumps the partition epoch). Its sources:

- the Kafka-format log the controller serves (`view_of_kafka_log(bytes)`), decoded by
  `controlplane.controller.kraft`;
- `kafka-dump-log --cluster-metadata-decoder` of a broker's own replica of `__cluster_metadata`
  (`view_of_dump_log(text)`: its `payload:` JSON lines), what the broker itself appended;
- a broker's Metadata answer (`metadata_facts`), the part of the image Metadata shows.
"""

from __future__ import annotations

import base64
import dataclasses
import json
import re
import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from controlplane.controller.image import MetadataImage
from controlplane.controller.kraft import DecodedRecord, decode_records

NO_LEADER_CHANGE = -2


@dataclasses.dataclass(frozen=True)
class BrokerFacts:
    epoch: int
    fenced: bool
    in_controlled_shutdown: bool


@dataclasses.dataclass(frozen=True)
class PartitionFacts:
    leader: int
    leader_epoch: int
    partition_epoch: int
    replicas: tuple[int, ...]
    isr: tuple[int, ...]
    adding: tuple[int, ...] = ()
    removing: tuple[int, ...] = ()


@dataclasses.dataclass
class KafkaView:
    """Brokers by id; topics by id (their names); partitions by (topic id, index)."""

    brokers: dict[int, BrokerFacts] = dataclasses.field(default_factory=dict)
    topics: dict[str, str] = dataclasses.field(default_factory=dict)
    partitions: dict[tuple[str, int], PartitionFacts] = dataclasses.field(default_factory=dict)

    def replay(self, name: str, fields: Mapping[str, Any]) -> None:
        handler = _REPLAYERS.get(name)
        if handler is not None:
            handler(self, fields)

    def replay_all(self, records: Iterable[DecodedRecord]) -> KafkaView:
        for record in records:
            if not record.is_control:
                self.replay(record.name, record.fields)
        return self

    def differences(self, other: KafkaView) -> list[str]:
        """What differs, one line each (empty when the views agree)."""
        lines = []
        for kind, mine, theirs in (
            ("broker", self.brokers, other.brokers),
            ("topic", self.topics, other.topics),
            ("partition", self.partitions, other.partitions),
        ):
            for key in sorted(set(mine) | set(theirs), key=repr):
                if mine.get(key) != theirs.get(key):  # type: ignore[call-overload]
                    lines.append(f"{kind} {key}: {mine.get(key)} != {theirs.get(key)}")  # type: ignore[call-overload]
        return lines


def _ids(value: Any) -> tuple[int, ...]:
    return tuple(int(v) for v in value or ())


def _topic_id(value: Any) -> str:
    """A topic id as the controller writes it: our decoder gives a UUID, kafka-dump-log's JSON
    Kafka's own form (`Uuid.toString`: 22 characters of URL-safe base64, no padding)."""
    if isinstance(value, uuid.UUID):
        return str(value)
    text = str(value)
    if len(text) == 22:
        return str(uuid.UUID(bytes=base64.urlsafe_b64decode(text + "==")))
    return str(uuid.UUID(text))


def _register_broker(view: KafkaView, f: Mapping[str, Any]) -> None:
    view.brokers[int(f["BrokerId"])] = BrokerFacts(
        epoch=int(f["BrokerEpoch"]),
        fenced=bool(f.get("Fenced", True)),
        in_controlled_shutdown=bool(f.get("InControlledShutdown", False)),
    )


def _broker_change(view: KafkaView, f: Mapping[str, Any]) -> None:
    broker_id = int(f["BrokerId"])
    current = view.brokers[broker_id]
    if current.epoch != int(f["BrokerEpoch"]):
        raise ValueError(f"a change of broker {broker_id} at epoch {f['BrokerEpoch']}: stale")
    fenced = {1: True, -1: False}.get(int(f.get("Fenced", 0)), current.fenced)
    shutting_down = current.in_controlled_shutdown or int(f.get("InControlledShutdown", 0)) == 1
    view.brokers[broker_id] = BrokerFacts(current.epoch, fenced, shutting_down)


def _fence(fenced: bool) -> Any:
    def replay(view: KafkaView, f: Mapping[str, Any]) -> None:
        current = view.brokers[int(f["Id"])]
        view.brokers[int(f["Id"])] = dataclasses.replace(current, fenced=fenced)

    return replay


def _unregister(view: KafkaView, f: Mapping[str, Any]) -> None:
    view.brokers.pop(int(f["BrokerId"]), None)


def _topic(view: KafkaView, f: Mapping[str, Any]) -> None:
    view.topics[_topic_id(f["TopicId"])] = str(f["Name"])


def _remove_topic(view: KafkaView, f: Mapping[str, Any]) -> None:
    topic_id = _topic_id(f["TopicId"])
    view.topics.pop(topic_id, None)
    for key in [k for k in view.partitions if k[0] == topic_id]:
        del view.partitions[key]


def _partition(view: KafkaView, f: Mapping[str, Any]) -> None:
    view.partitions[(_topic_id(f["TopicId"]), int(f["PartitionId"]))] = PartitionFacts(
        leader=int(f["Leader"]),
        leader_epoch=int(f["LeaderEpoch"]),
        partition_epoch=int(f["PartitionEpoch"]),
        replicas=_ids(f["Replicas"]),
        isr=_ids(f["Isr"]),
        adding=_ids(f.get("AddingReplicas")),
        removing=_ids(f.get("RemovingReplicas")),
    )


def _partition_change(view: KafkaView, f: Mapping[str, Any]) -> None:
    key = (_topic_id(f["TopicId"]), int(f["PartitionId"]))
    p = view.partitions[key]
    leader = int(f.get("Leader", NO_LEADER_CHANGE))

    def kept(field: str, current: tuple[int, ...]) -> tuple[int, ...]:
        return current if f.get(field) is None else _ids(f[field])

    view.partitions[key] = PartitionFacts(
        leader=p.leader if leader == NO_LEADER_CHANGE else leader,
        leader_epoch=p.leader_epoch if leader == NO_LEADER_CHANGE else p.leader_epoch + 1,
        partition_epoch=p.partition_epoch + 1,
        replicas=kept("Replicas", p.replicas),
        isr=kept("Isr", p.isr),
        adding=kept("AddingReplicas", p.adding),
        removing=kept("RemovingReplicas", p.removing),
    )


_REPLAYERS = {
    "RegisterBrokerRecord": _register_broker,
    "BrokerRegistrationChangeRecord": _broker_change,
    "FenceBrokerRecord": _fence(True),
    "UnfenceBrokerRecord": _fence(False),
    "UnregisterBrokerRecord": _unregister,
    "TopicRecord": _topic,
    "RemoveTopicRecord": _remove_topic,
    "PartitionRecord": _partition,
    "PartitionChangeRecord": _partition_change,
}


def view_of_kafka_log(data: bytes) -> KafkaView:
    """A broker's view after loading `data` (whole record batches, as the Raft Fetch serves)."""
    return KafkaView().replay_all(record for _, record in decode_records(data))


def view_of_image(image: MetadataImage) -> KafkaView:
    """The controller's view of the same facts, from its image."""
    view = KafkaView()
    for broker in image.all_brokers():
        view.brokers[broker.broker_id] = BrokerFacts(
            broker.epoch, broker.fenced, broker.in_controlled_shutdown
        )
    for topic_id, topic in image.topics.items():
        view.topics[str(topic_id)] = topic.name
    for (topic_id, index), p in image.partitions.items():
        view.partitions[(str(topic_id), index)] = PartitionFacts(
            leader=p.leader,
            leader_epoch=p.leader_epoch,
            partition_epoch=p.partition_epoch,
            replicas=tuple(p.replicas),
            isr=tuple(p.isr),
            adding=tuple(getattr(p, "adding_replicas", ()) or ()),
            removing=tuple(getattr(p, "removing_replicas", ()) or ()),
        )
    return view


# kafka-dump-log --cluster-metadata-decoder prints each record's payload as
# `| offset: N ... payload: {"type":"PARTITION_CHANGE_RECORD","version":0,"data":{...}}`.
_PAYLOAD = re.compile(r"payload: (\{.*\})\s*$")
_DUMP_NAMES = {
    "REGISTER_BROKER_RECORD": "RegisterBrokerRecord",
    "BROKER_REGISTRATION_CHANGE_RECORD": "BrokerRegistrationChangeRecord",
    "FENCE_BROKER_RECORD": "FenceBrokerRecord",
    "UNFENCE_BROKER_RECORD": "UnfenceBrokerRecord",
    "UNREGISTER_BROKER_RECORD": "UnregisterBrokerRecord",
    "TOPIC_RECORD": "TopicRecord",
    "REMOVE_TOPIC_RECORD": "RemoveTopicRecord",
    "PARTITION_RECORD": "PartitionRecord",
    "PARTITION_CHANGE_RECORD": "PartitionChangeRecord",
}


def _camel_to_kafka(data: Mapping[str, Any]) -> dict[str, Any]:
    """The dump's JSON field names (`brokerId`) as Kafka's schema names them (`BrokerId`)."""
    return {key[:1].upper() + key[1:]: value for key, value in data.items()}


_OFFSET = re.compile(r"^\| offset: (\d+) ")


def view_of_dump_log(
    text: str, *, from_offset: int = 0, view: KafkaView | None = None
) -> KafkaView:
    """A broker's view from `kafka-dump-log --cluster-metadata-decoder` of its own replica (the
    records at `from_offset` and after, replayed onto `view`: a snapshot's, say)."""
    view = KafkaView() if view is None else view
    for line in text.splitlines():
        match = _PAYLOAD.search(line)
        if match is None:
            continue
        offset = _OFFSET.match(line)
        if offset is not None and int(offset.group(1)) < from_offset:
            continue
        payload = json.loads(match.group(1))
        name = _DUMP_NAMES.get(str(payload.get("type")))
        if name is not None:
            view.replay(name, _camel_to_kafka(payload.get("data", {})))
    return view


def metadata_facts(view: KafkaView) -> dict[str, Any]:
    """What a broker's Metadata answer shows of a view: the live (unfenced) brokers, and each
    partition's leader, leader epoch, replicas and ISR by topic name (KRaft brokers list
    fenced brokers nowhere and leave the controlled-shutdown flag unshown)."""
    return {
        "brokers": sorted(b for b, facts in view.brokers.items() if not facts.fenced),
        "partitions": {
            (view.topics[topic_id], index): (p.leader, p.leader_epoch, p.replicas, p.isr)
            for (topic_id, index), p in sorted(view.partitions.items())
            if topic_id in view.topics
        },
    }


def facts_of_metadata(response: Any) -> dict[str, Any]:
    """`metadata_facts`' shape from a broker's own Metadata answer (kio's MetadataResponse of
    every topic): the brokers it lists, each partition's leader, leader epoch, replicas and ISR."""
    return {
        "brokers": sorted(int(b.node_id) for b in response.brokers),
        "partitions": {
            (str(t.name), int(p.partition_index)): (
                int(p.leader_id),
                int(p.leader_epoch),
                _ids(p.replica_nodes),
                _ids(p.isr_nodes),
            )
            for t in sorted(response.topics, key=lambda t: str(t.name))
            if int(t.error_code) == 0
            for p in sorted(t.partitions, key=lambda p: int(p.partition_index))
        },
    }


def facts_differences(mine: Mapping[str, Any], theirs: Mapping[str, Any]) -> list[str]:
    """What differs between two `metadata_facts`, one line each."""
    lines = []
    if mine["brokers"] != theirs["brokers"]:
        lines.append(f"live brokers: {mine['brokers']} != {theirs['brokers']}")
    for key in sorted(set(mine["partitions"]) | set(theirs["partitions"])):
        here, there = mine["partitions"].get(key), theirs["partitions"].get(key)
        if here != there:
            lines.append(
                f"partition {key} (leader, leader epoch, replicas, isr): {here} != {there}"
            )
    return lines


Query = Callable[..., Sequence[Sequence[Any]]]


def _json_list(value: Any) -> tuple[int, ...]:
    return _ids(json.loads(value) if isinstance(value, str) else value)


def view_of_tables(query: Query) -> KafkaView:
    """The controller's view as its tables project it (what the REST API and the console show):
    `query(sql, *params)` answers rows (`Stack.sql`, or a cursor's in a test process)."""
    view = KafkaView()
    for broker_id, epoch, fenced, shutting_down in query(
        "SELECT broker_id, epoch, fenced, in_controlled_shutdown FROM cp_broker"
    ):
        view.brokers[int(broker_id)] = BrokerFacts(int(epoch), bool(fenced), bool(shutting_down))
    for topic_id, name in query("SELECT topic_id, name FROM cp_topic"):
        view.topics[_topic_id(topic_id)] = str(name)
    for topic_id, index, leader, leader_epoch, partition_epoch, replicas, isr in query(
        "SELECT topic_id, partition_index, leader, leader_epoch, partition_epoch, replicas, isr"
        " FROM cp_partition"
    ):
        view.partitions[(_topic_id(topic_id), int(index))] = PartitionFacts(
            leader=int(leader),
            leader_epoch=int(leader_epoch),
            partition_epoch=int(partition_epoch),
            replicas=_json_list(replicas),
            isr=_json_list(isr),
        )
    return view
