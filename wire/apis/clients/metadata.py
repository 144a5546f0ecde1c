"""Metadata (apiKey 3): the cluster as stock Kafka clients learn it (DescribeCluster, 60, is
`describe_cluster`'s; the nodes both advertise, `nodes`').

Every node a client learns of is advertised at this listener's own address (`request.
advertised`): clients reconnect to the addresses Metadata gives and route admin requests (and
BROKER config resources) by node id, and the registered brokers may advertise addresses nobody
listens on (the simulator's). So node ids are the brokers' own, the address is always ours, and
Metadata, DescribeCluster and DescribeConfigs agree on the ids (`cluster_nodes`). When no broker
is alive one synthetic node (the controller's id) is advertised, so clients can still connect.

The reads are the REST API's: the live brokers as DescribeCluster lists them
(`brokers.selectors.brokers_alive`), topics and partitions from `replicas.selectors`, topic
visibility from `controlplane.authz.Visibility` (what GET /api/v1/topics shows), the cluster's
head (id, controller, the log's and the tables' offsets) from
`controlplane.selectors.metadata_head_with_tables_offset`.

KIP-1095's `Pod` travels as a tagged field of our own (`POD_TAG`) on the brokers of Metadata
v12 (and DescribeCluster v1+): those versions are flexible, so a stock client skips a tag it
does not know, and the canary clients (`canary.clients.wire`) read it.

An all-topics Metadata answer (1,000 topics x 10 partitions is ~10k kio entities, tens of ms to
encode in Python) is cached as encoded bytes per (the state tables' offset, version, flags,
advertised address, the principal's authorization outcome): every change of topics, partitions,
brokers or ACLs moves the offset, and the outcome (which topics the principal may see, with its
operations) is computed on each request, so a cached answer never shows more than now allowed.
"""

# No `from __future__ import annotations`: kio reads the Pod subclasses' field types, which
# must be types, not strings.
import collections
import dataclasses
import datetime
import uuid
from collections.abc import Hashable, Iterable, Mapping, Sequence
from typing import Any

from kio.schema.errors import ErrorCode

from brokers.rpcs import OPERATIONS_NOT_ASKED
from canary.clients.wire import PodMetadataBroker, PodMetadataResponse
from controlplane.authz import Visibility
from controlplane.controller.acls.bindings import AclOperation, ResourceType
from controlplane.selectors import metadata_head_with_tables_offset
from controlplane.tables_cache import AnswerCache
from replicas import selectors as replica_selectors
from wire.apis.base import WireRequest, wire_api
from wire.apis.clients.nodes import (
    ClusterNodes,
    advertised_nodes_for,
    cluster_operations,
    encode,
    field_names,
    make,
    operations_bits,
    response_module,
)

# KIP-1095's Pod is a tagged field (`POD_TAG`; why that number: canary.clients.wire, which
# defines it and Metadata v12's Pod classes, so the listener and the canary clients share them).
METADATA_API_KEY = 3
METADATA_POD_VERSION = 12  # KIP-1095: MetadataResponse brokers, v12+
ZERO_UUID = uuid.UUID(int=0)
NO_THROTTLE = datetime.timedelta(0)
# Kafka's AclEntry.supportedOperations(TOPIC): the bits of topic_authorized_operations.
TOPIC_OPERATIONS = (
    AclOperation.READ,
    AclOperation.WRITE,
    AclOperation.CREATE,
    AclOperation.DESCRIBE,
    AclOperation.DELETE,
    AclOperation.ALTER,
    AclOperation.DESCRIBE_CONFIGS,
    AclOperation.ALTER_CONFIGS,
)
CACHE_ENTRIES = 32  # (version, principal outcome) combinations kept per listener process


# (response, broker) classes that carry Pod, by version
METADATA_POD_CLASSES: dict[int, tuple[type, type]] = {
    METADATA_POD_VERSION: (PodMetadataResponse, PodMetadataBroker)
}


@dataclasses.dataclass(frozen=True, slots=True)
class _Topic:
    topic_id: str
    name: str


@dataclasses.dataclass(frozen=True, slots=True)
class _Classes:
    response: type
    broker: type
    topic: type
    partition: type
    version: int

    @classmethod
    def of(cls, version: int) -> "_Classes":
        module = response_module(METADATA_API_KEY, version)
        response, broker = METADATA_POD_CLASSES.get(
            version, (module.MetadataResponse, module.MetadataResponseBroker)
        )
        return cls(
            response,
            broker,
            module.MetadataResponseTopic,
            module.MetadataResponsePartition,
            version,
        )


metadata_cache: AnswerCache[bytes] = AnswerCache(CACHE_ENTRIES)


def _topics(names: Iterable[str] | None = None) -> list[_Topic]:
    topics = replica_selectors.topic_list()
    if names is not None:
        topics = topics.filter(name__in=list(names))
    return [_Topic(str(i), n) for i, n in topics.values_list("topic_id", "name")]


def _partitions(topics: Sequence[_Topic], everything: bool) -> dict[str, list[tuple[Any, ...]]]:
    """Each topic's partition rows (index, leader, epoch, replicas, ISR, offline), in one query."""
    rows = replica_selectors.partition_list()
    if not everything:
        rows = rows.filter(topic_id__in=[t.topic_id for t in topics])
    by_topic: dict[str, list[tuple[Any, ...]]] = collections.defaultdict(list)
    for topic_id, *row in rows.values_list(
        "topic_id",
        "partition_index",
        "leader",
        "leader_epoch",
        "replicas",
        "isr",
        "offline_replicas",
    ).iterator(chunk_size=10_000):
        by_topic[topic_id].append(tuple(row))
    return by_topic


def _partition_entities(
    classes: _Classes, rows: Sequence[tuple[Any, ...]], alive: frozenset[int]
) -> tuple[Any, ...]:
    make = classes.partition
    names = field_names(make)
    with_epoch = "leader_epoch" in names
    with_offline = "offline_replicas" in names
    out = []
    for index, leader, epoch, replicas, isr, offline in rows:
        values: dict[str, Any] = {
            "partition_index": index,
            "replica_nodes": tuple(replicas),
            "isr_nodes": tuple(isr),
        }
        if leader in alive:
            values["error_code"] = ErrorCode.none
            values["leader_id"] = leader
        else:  # no leader, or one on no live broker: Kafka's LEADER_NOT_AVAILABLE, no leader
            values["error_code"] = ErrorCode.leader_not_available
            values["leader_id"] = -1
        if with_epoch:
            values["leader_epoch"] = epoch
        if with_offline:
            values["offline_replicas"] = tuple(offline)
        out.append(make(**values))
    return tuple(out)


def _topic_entity(
    classes: _Classes,
    *,
    name: str | None,
    topic_id: str | None,
    error: ErrorCode = ErrorCode.none,
    partitions: tuple[Any, ...] = (),
    operations: int = OPERATIONS_NOT_ASKED,
) -> Any:
    return make(
        classes.topic,
        error_code=error,
        name=name,
        topic_id=uuid.UUID(topic_id) if topic_id else ZERO_UUID,
        is_internal=False,
        partitions=partitions,
        topic_authorized_operations=operations,
    )


def _response(
    classes: _Classes,
    request: WireRequest,
    head: Mapping[str, Any],
    nodes: ClusterNodes,
    topics: tuple[Any, ...],
    cluster_ops: int,
) -> Any:
    advertised = request.advertised
    brokers = tuple(
        make(
            classes.broker,
            node_id=n.node_id,
            host=advertised.host,
            port=advertised.port_of(n.node_id),
            rack=n.rack,
            pod=n.pod,
        )
        for n in nodes.nodes
    )
    return make(
        classes.response,
        throttle_time=NO_THROTTLE,
        brokers=brokers,
        cluster_id=head["cluster_id"] or None,
        controller_id=nodes.controller_id,
        topics=topics,
        cluster_authorized_operations=cluster_ops,
    )


@wire_api("Metadata", METADATA_API_KEY, (0, 12))
def metadata(request: WireRequest) -> Any:
    """Kafka's Metadata: brokers (at this listener), the controller, the topics asked (all when
    none is named) with their partitions; never creates a topic."""
    body = request.body
    version = request.api_version
    caller = request.caller
    topic_ops = version >= 8 and bool(body.include_topic_authorized_operations)
    cluster_ops = OPERATIONS_NOT_ASKED
    if 8 <= version <= 10 and body.include_cluster_authorized_operations:
        cluster_ops = cluster_operations(caller)
    visibility = Visibility(caller.principal, caller.host, ResourceType.TOPIC)
    head = metadata_head_with_tables_offset()
    classes = _Classes.of(version)
    # v0 names no topic to ask for all; v1+ sends null (an empty list asks for none).
    if body.topics is None or (version == 0 and not body.topics):
        return _all_topics(request, classes, head, visibility, topic_ops, cluster_ops)
    return _named_topics(request, classes, head, visibility, topic_ops, cluster_ops)


def _all_topics(
    request: WireRequest,
    classes: _Classes,
    head: Mapping[str, Any],
    visibility: Visibility,
    topic_ops: bool,
    cluster_ops: int,
) -> bytes:
    """Every topic the principal may DESCRIBE (the others are left out, as Kafka does), encoded
    and cached per offset of the state tables and authorization outcome."""
    caller = request.caller
    topics: list[_Topic] | None = None
    operations: dict[str, int] = {}  # a non-super principal's, by topic, when asked
    outcome: Hashable
    if visibility.everything:  # a super user sees all, with every operation: one outcome
        outcome = ("super",)
    else:
        topics = [t for t in _topics() if visibility.allows(t.name)]
        if topic_ops:
            operations = {
                t.name: operations_bits(caller, TOPIC_OPERATIONS, ResourceType.TOPIC, t.name)
                for t in topics
            }
        outcome = (tuple(t.name for t in topics), tuple(operations.items()))
    key = (
        head["tables_offset"],
        classes.version,
        topic_ops,
        cluster_ops,
        request.advertised,
        outcome,
    )
    cached = metadata_cache.get(key)
    if cached is not None:
        return cached
    everything = topics is None
    if topics is None:
        topics = _topics()
    nodes = advertised_nodes_for(head)
    alive = nodes.ids
    by_topic = _partitions(topics, everything)
    all_ops = sum(1 << op.value for op in TOPIC_OPERATIONS)
    entities = tuple(
        _topic_entity(
            classes,
            name=t.name,
            topic_id=t.topic_id,
            partitions=_partition_entities(classes, by_topic.get(t.topic_id, ()), alive),
            operations=operations.get(t.name, all_ops) if topic_ops else OPERATIONS_NOT_ASKED,
        )
        for t in topics
    )
    answer = encode(_response(classes, request, head, nodes, entities, cluster_ops))
    # Cache only what one offset of the tables alone gave: a commit between the reads may have
    # mixed two offsets' rows (answered once, never cached). The key is the tables' offset, not
    # the log's: between a commit's two transactions the log is ahead of what was read.
    if metadata_head_with_tables_offset()["tables_offset"] == head["tables_offset"]:
        metadata_cache.put(key, answer)
    return answer


def _named_topics(
    request: WireRequest,
    classes: _Classes,
    head: Mapping[str, Any],
    visibility: Visibility,
    topic_ops: bool,
    cluster_ops: int,
) -> Any:
    """The topics asked for, by name (or by id, v10+), in the order asked (once each)."""
    caller = request.caller
    asked: list[tuple[str | None, str | None]] = []  # (name, topic id)
    for item in request.body.topics:
        name = getattr(item, "name", None)
        topic_id = getattr(item, "topic_id", None)
        wanted = (name, None) if name is not None else (None, _id_str(topic_id))
        if wanted not in asked:
            asked.append(wanted)
    by_id = replica_selectors.topic_names_by_id(topic_ids=[i for _, i in asked if i is not None])
    names = {n for n, _ in asked if n is not None} | set(by_id.values())
    found = {t.name: t for t in _topics(names)}
    nodes = advertised_nodes_for(head)
    allowed = [t for t in found.values() if visibility.allows(t.name)]
    by_topic = _partitions(allowed, everything=False)
    entities = []
    for name, topic_id in asked:
        if name is None:  # asked by id (KIP-516): unknown ids, then authorization
            resolved = by_id.get(topic_id or "")
            if resolved is None or resolved not in found:
                entities.append(
                    _topic_entity(
                        classes, name=None, topic_id=topic_id, error=ErrorCode.unknown_topic_id
                    )
                )
                continue
            if not visibility.allows(resolved):  # the name is not told to whom may not see it
                entities.append(
                    _topic_entity(
                        classes,
                        name=None,
                        topic_id=topic_id,
                        error=ErrorCode.topic_authorization_failed,
                    )
                )
                continue
            name = resolved
        if not visibility.allows(name):  # whether it exists is not told either
            entities.append(
                _topic_entity(
                    classes, name=name, topic_id=None, error=ErrorCode.topic_authorization_failed
                )
            )
            continue
        operations = (
            operations_bits(caller, TOPIC_OPERATIONS, ResourceType.TOPIC, name)
            if topic_ops
            else OPERATIONS_NOT_ASKED
        )
        topic = found.get(name)
        if topic is None:
            entities.append(
                _topic_entity(
                    classes,
                    name=name,
                    topic_id=None,
                    error=ErrorCode.unknown_topic_or_partition,
                    operations=operations,
                )
            )
            continue
        entities.append(
            _topic_entity(
                classes,
                name=name,
                topic_id=topic.topic_id,
                partitions=_partition_entities(
                    classes, by_topic.get(topic.topic_id, ()), nodes.ids
                ),
                operations=operations,
            )
        )
    return _response(classes, request, head, nodes, tuple(entities), cluster_ops)


def _id_str(topic_id: uuid.UUID | None) -> str | None:
    return None if topic_id is None or topic_id == ZERO_UUID else str(topic_id)
