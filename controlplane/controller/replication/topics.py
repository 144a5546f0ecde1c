"""CreateTopics, DeleteTopics and CreatePartitions (Kafka's ReplicationControlManager).

Per item, as Kafka: each topic either gets all its records or an error, and one request's records
commit together. Messages are Kafka's, so operators recognise them.
"""

from __future__ import annotations

import functools
import re
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from controlplane.controller.canary.rules import (
    canary_brokers_of,
    canary_partitions,
    isolated,
    topic_canary_percent,
)
from controlplane.controller.config_schema import (
    TOPIC_CONFIGS,
    ConfigView,
    validate_topic_configs,
)
from controlplane.controller.errors import ApiError, Errors
from controlplane.controller.image import MetadataDelta, TopicInfo
from controlplane.controller.partitions.changes import AcceptableLeader, acceptable_leaders
from controlplane.controller.partitions.leadership import config_view
from controlplane.controller.partitions.states import (
    PARTITION_CREATION_PATH,
    PARTITION_DELETION_PATH,
    REPLICA_CREATION_PATH,
    REPLICA_DELETION_PATH,
    PartitionState,
    ReplicaState,
    partition_state,
    walk_partition,
    walk_replica,
)
from controlplane.controller.records import (
    ConfigRecord,
    PartitionRecord,
    Record,
    RemoveTopicRecord,
    TopicRecord,
)
from controlplane.controller.replication.placement import (
    BrokerRings,
    Placed,
    UsableBroker,
)

MAX_TOPIC_NAME_LENGTH = 249
LEGAL_TOPIC_NAME = re.compile(r"^[a-zA-Z0-9._-]+$")
# Bad input must not hurt: one request may not ask for more partitions than this.
MAX_PARTITIONS_PER_REQUEST = 100_000
MAX_REPLICATION_FACTOR = 32767


def _check_budget(partitions: int, budget: int) -> None:
    """What is left of MAX_PARTITIONS_PER_REQUEST for this request must cover `partitions`."""
    if partitions > budget:
        raise ApiError(
            Errors.INVALID_PARTITIONS,
            f"Creating {partitions} partitions would exceed the limit of "
            f"{MAX_PARTITIONS_PER_REQUEST} partitions per request.",
        )


def validate_topic_name(name: str) -> None:
    """Kafka's Topic.validate."""
    if not name:
        raise ApiError(Errors.INVALID_TOPIC_EXCEPTION, "Topic name is illegal, it can't be empty")
    if name in (".", ".."):
        raise ApiError(Errors.INVALID_TOPIC_EXCEPTION, 'Topic name cannot be "." or ".."')
    if len(name) > MAX_TOPIC_NAME_LENGTH:
        raise ApiError(
            Errors.INVALID_TOPIC_EXCEPTION,
            f"Topic name is illegal, it can't be longer than {MAX_TOPIC_NAME_LENGTH} "
            f"characters, topic name: {name}",
        )
    if not LEGAL_TOPIC_NAME.match(name):
        raise ApiError(
            Errors.INVALID_TOPIC_EXCEPTION,
            f'Topic name "{name}" is illegal, it contains a character other than ASCII '
            "alphanumerics, '.', '_' and '-'",
        )


def usable_brokers(view: MetadataDelta) -> list[UsableBroker]:
    """Brokers new replicas may go to: registered, not shutting down and with a log dir that is
    not cordoned (KIP-1066; fenced ones last)."""
    return RequestBrokers(view).usable


class RequestBrokers:
    """What one request's placements read of the brokers, each read once per request: a
    handler builds its records from the view and they are replayed only after it, so the
    brokers stand still while a request of 500 topics is placed (each topic read them afresh:
    a third of the handler's time)."""

    def __init__(self, view: MetadataDelta) -> None:
        self._view = view

    @functools.cached_property
    def canary(self) -> frozenset[int]:
        return canary_brokers_of(self._view)

    @functools.cached_property
    def usable(self) -> list[UsableBroker]:
        canary = self.canary
        return [
            UsableBroker(b.broker_id, b.rack, b.fenced, b.broker_id in canary)
            for b in self._view.all_brokers()
            if not b.in_controlled_shutdown and b.has_uncordoned_dirs
        ]

    @functools.cached_property
    def acceptable(self) -> AcceptableLeader:
        return acceptable_leaders(self._view)

    @functools.cached_property
    def rings(self) -> BrokerRings:
        return BrokerRings(self.usable)


def _partition_records(
    brokers: RequestBrokers,
    topic_id: str,
    first: int,
    placed: Placed,
    canary: Sequence[int],
) -> list[PartitionRecord]:
    """The new partitions' records: the ISR is every replica that can lead, the leader its
    first (a canary partition's first canary replica, KIP-1095)."""
    acceptable = brokers.acceptable
    canary_brokers = brokers.canary
    canary_set = frozenset(canary)
    records = []
    for offset, (assigned, is_isolated) in enumerate(
        zip(placed.replicas, placed.isolated, strict=True)
    ):
        index = first + offset
        isr = tuple(r for r in assigned if acceptable(r))
        if not isr:
            raise ApiError(
                Errors.INVALID_REPLICA_ASSIGNMENT,
                f"All brokers specified in the manual partition assignment for partition "
                f"{index} are fenced or in controlled shutdown.",
            )
        is_canary = index in canary_set
        leader = isr[0]
        if is_canary:
            leader = next((r for r in isr if r in canary_brokers), leader)
        records.append(
            PartitionRecord(
                partition_id=index,
                topic_id=topic_id,
                replicas=assigned,
                isr=isr,
                leader=leader,
                is_canary=is_canary,
                canary_isolated=is_isolated,
            )
        )
    return records


def _assigned(
    brokers: RequestBrokers, replicas: list[tuple[int, ...]], first: int, canary: Sequence[int]
) -> Placed:
    """Manual assignments, with whether each canary partition landed on canary brokers alone."""
    canary_brokers = brokers.canary
    canary_set = frozenset(canary)
    return Placed(
        replicas,
        [
            first + i in canary_set and isolated(assigned, canary_brokers)
            for i, assigned in enumerate(replicas)
        ],
    )


def canary_answer(first: int, placed: Placed, canary: Sequence[int]) -> dict[str, Any]:
    """What a CreateTopics / CreatePartitions result says of the canary partitions it made:
    nothing when it made none."""
    if not canary:
        return {}
    return {
        "canary_partitions": list(canary),
        "canary_isolated": all(placed.isolated[i - first] for i in canary),
    }


def _duplicates(names: Sequence[str]) -> set[str]:
    return {name for name, count in Counter(names).items() if count > 1}


def _topic_error(name: str, error: ApiError) -> dict[str, Any]:
    return {
        "name": name,
        "topic_id": None,
        "error_code": int(error.error),
        "error_message": error.message,
        "num_partitions": -1,
        "replication_factor": -1,
        "configs": [],
    }


# --- CreateTopics --------------------------------------------------------------------------


def create_topics(
    view: MetadataDelta,
    request: Mapping[str, Any],
    *,
    configs: ConfigView,
    new_topic_id: Callable[[], str],
) -> tuple[list[Record], dict[str, Any]]:
    topics = request["topics"]
    duplicates = _duplicates([t["name"] for t in topics])
    validate_only = bool(request.get("validate_only", False))
    records: list[Record] = []
    answers = []
    budget = MAX_PARTITIONS_PER_REQUEST
    brokers = RequestBrokers(view)
    for topic in topics:
        name = topic["name"]
        if name in duplicates:
            answers.append(
                _topic_error(name, ApiError(Errors.INVALID_REQUEST, "Duplicate topic name."))
            )
            continue
        try:
            topic_records, answer = _create_topic(
                view, brokers, topic, configs=configs, budget=budget, new_topic_id=new_topic_id
            )
        except ApiError as error:
            answers.append(_topic_error(name, error))
            continue
        budget -= answer["num_partitions"]
        if not validate_only:
            records.extend(topic_records)
        answers.append(answer)
    return records, {"topics": answers}


def _create_topic(
    view: MetadataDelta,
    brokers: RequestBrokers,
    topic: Mapping[str, Any],
    *,
    configs: ConfigView,
    budget: int,
    new_topic_id: Callable[[], str],
) -> tuple[list[Record], dict[str, Any]]:
    name = topic["name"]
    validate_topic_name(name)
    if view.topic_id(name) is not None:
        raise ApiError(Errors.TOPIC_ALREADY_EXISTS, f"Topic '{name}' already exists.")
    _check_collision(view, name)
    topic_configs = {c["name"]: c["value"] for c in topic.get("configs") or ()}
    if len(topic_configs) != len(topic.get("configs") or ()):
        raise ApiError(Errors.INVALID_REQUEST, "Duplicate config name.")
    validate_topic_configs(topic_configs)
    percent = topic_canary_percent(configs, name, topic_configs)
    assignments = topic.get("assignments") or []
    if assignments:
        replicas = _manual_assignment(view, topic, assignments)
        canary = canary_partitions(0, len(replicas), percent)
        placed = _assigned(brokers, replicas, 0, canary)
    else:
        placed, canary = _placed(brokers, topic, configs=configs, budget=budget, percent=percent)
        replicas = placed.replicas
    _check_budget(len(replicas), budget)
    topic_id = new_topic_id()
    records: list[Record] = [TopicRecord(name=name, topic_id=topic_id)]
    walk_partition(PartitionState.NON_EXISTENT, PARTITION_CREATION_PATH)
    records.extend(_partition_records(brokers, topic_id, 0, placed, canary))
    walk_replica(ReplicaState.NON_EXISTENT, REPLICA_CREATION_PATH)
    records.extend(
        ConfigRecord(resource_type="TOPIC", resource_name=name, name=key, value=value)
        for key, value in sorted(topic_configs.items())
        if value is not None
    )
    answer = {
        "name": name,
        "topic_id": topic_id,
        "error_code": 0,
        "error_message": None,
        "num_partitions": len(replicas),
        "replication_factor": len(replicas[0]),
        "configs": _described_topic_configs(name, topic_configs, configs),
        **canary_answer(0, placed, canary),
    }
    return records, answer


def _check_collision(view: MetadataDelta, name: str) -> None:
    """Kafka refuses names that differ only by '.' versus '_' (their metric names collide)."""
    if "." not in name and "_" not in name:
        return
    normalized = name.replace(".", "_")
    for existing in view.all_topics():
        if existing.name != name and existing.name.replace(".", "_") == normalized:
            raise ApiError(
                Errors.INVALID_TOPIC_EXCEPTION,
                f"Topic '{name}' collides with existing topic: {existing.name}",
            )


def _placed(
    brokers: RequestBrokers,
    topic: Mapping[str, Any],
    *,
    configs: ConfigView,
    budget: int,
    percent: float,
) -> tuple[Placed, list[int]]:
    num_partitions = topic.get("num_partitions", -1)
    replication_factor = topic.get("replication_factor", -1)
    if num_partitions == -1:
        num_partitions = configs.broker_value("num.partitions")
    if replication_factor == -1:
        replication_factor = configs.broker_value("default.replication.factor")
    if num_partitions <= 0:
        raise ApiError(
            Errors.INVALID_PARTITIONS,
            "Number of partitions was set to an invalid non-positive value.",
        )
    _check_budget(num_partitions, budget)
    if replication_factor <= 0 or replication_factor > MAX_REPLICATION_FACTOR:
        raise ApiError(
            Errors.INVALID_REPLICATION_FACTOR,
            "Replication factor must be larger than 0, or -1 to use the default value.",
        )
    canary = canary_partitions(0, num_partitions, percent)
    placed = brokers.rings.place(
        seed_name=topic["name"],
        first_partition=0,
        num_partitions=num_partitions,
        replication_factor=replication_factor,
        canary=canary,
    )
    return placed, canary


def _manual_assignment(
    view: MetadataDelta, topic: Mapping[str, Any], assignments: Sequence[Mapping[str, Any]]
) -> list[tuple[int, ...]]:
    if topic.get("num_partitions", -1) != -1 or topic.get("replication_factor", -1) != -1:
        raise ApiError(
            Errors.INVALID_REQUEST,
            "A manual partition assignment was specified, but numPartitions or "
            "replicationFactor was not set to -1.",
        )
    indexes = sorted(a["partition_index"] for a in assignments)
    if indexes != list(range(len(assignments))):
        raise ApiError(
            Errors.INVALID_REPLICA_ASSIGNMENT,
            "Partitions should be a consecutive 0-based integer sequence.",
        )
    ordered = sorted(assignments, key=lambda a: a["partition_index"])
    return _checked_assignments(view, [tuple(a["broker_ids"]) for a in ordered], None)


def _checked_assignments(
    view: MetadataDelta, replica_lists: list[tuple[int, ...]], expected_rf: int | None
) -> list[tuple[int, ...]]:
    for index, replicas in enumerate(replica_lists):
        if not replicas:
            raise ApiError(
                Errors.INVALID_REPLICA_ASSIGNMENT,
                f"The manual partition assignment includes an empty replica list for "
                f"partition {index}.",
            )
        for broker_id in replicas:
            if replicas.count(broker_id) > 1:
                raise ApiError(
                    Errors.INVALID_REPLICA_ASSIGNMENT,
                    f"The manual partition assignment includes the broker {broker_id} more "
                    "than once.",
                )
            broker = view.broker(broker_id)
            if broker is None:
                raise ApiError(
                    Errors.INVALID_REPLICA_ASSIGNMENT,
                    f"The manual partition assignment includes broker {broker_id}, but no such "
                    "broker is registered.",
                )
            if not broker.has_uncordoned_dirs:
                raise ApiError(
                    Errors.INVALID_REPLICA_ASSIGNMENT,
                    f"The manual partition assignment includes broker {broker_id}, but all its "
                    "log directories are cordoned.",
                )
        expected = expected_rf if expected_rf is not None else len(replica_lists[0])
        if len(replicas) != expected:
            raise ApiError(
                Errors.INVALID_REPLICA_ASSIGNMENT,
                f"The manual partition assignment includes a partition with {len(replicas)} "
                f"replica(s), but this is not consistent with previous partitions, which have "
                f"{expected} replica(s).",
            )
    return replica_lists


def _described_topic_configs(
    name: str, given: Mapping[str, str | None], configs: ConfigView
) -> list[dict[str, Any]]:
    described = []
    for key, definition in sorted(TOPIC_CONFIGS.items()):
        if key in given and given[key] is not None:
            value, source = given[key], "DYNAMIC_TOPIC_CONFIG"
        else:
            value, source = definition.default, "DEFAULT_CONFIG"
        described.append(
            {
                "name": key,
                "value": None if definition.sensitive else value,
                "read_only": definition.read_only,
                "config_source": source,
                "is_sensitive": definition.sensitive,
            }
        )
    return described


# --- DeleteTopics --------------------------------------------------------------------------


def delete_topics(
    view: MetadataDelta, request: Mapping[str, Any]
) -> tuple[list[Record], dict[str, Any]]:
    """By name (`topic_names`) or by name or id (`topics`), as Kafka's DeleteTopics."""
    wanted: list[tuple[str | None, str | None]] = [
        (name, None) for name in request.get("topic_names") or ()
    ]
    wanted += [(t.get("name"), t.get("topic_id")) for t in request.get("topics") or ()]
    duplicates = _duplicates([name or topic_id or "" for name, topic_id in wanted])
    records: list[Record] = []
    responses = []
    deleting: set[str] = set()
    for name, topic_id in wanted:
        key = name or topic_id or ""
        topic: TopicInfo | None
        if key in duplicates:
            error: ApiError | None = ApiError(Errors.INVALID_REQUEST, "Duplicate topic name.")
            topic = None
        else:
            topic = view.topic_by_name(name) if name else view.topic(topic_id or "")
            error = None
            if topic is None:
                error = (
                    ApiError(
                        Errors.UNKNOWN_TOPIC_OR_PARTITION,
                        "This server does not host this topic-partition.",
                    )
                    if name
                    else ApiError(
                        Errors.UNKNOWN_TOPIC_ID, "This server does not host this topic ID."
                    )
                )
        if error is not None or topic is None:
            assert error is not None
            responses.append(
                {
                    "name": name,
                    "topic_id": topic_id,
                    "error_code": int(error.error),
                    "error_message": error.message,
                }
            )
            continue
        # Named once by name and once by id: one deletion, both answered (Kafka deletes a set).
        if topic.topic_id not in deleting:
            deleting.add(topic.topic_id)
            for _, partition in view.topic_partitions(topic):
                walk_partition(partition_state(partition), PARTITION_DELETION_PATH)
                for _replica in partition.replicas:
                    walk_replica(ReplicaState.OFFLINE, REPLICA_DELETION_PATH[1:])
            records.append(RemoveTopicRecord(topic_id=topic.topic_id))
        responses.append(
            {"name": topic.name, "topic_id": topic.topic_id, "error_code": 0, "error_message": None}
        )
    return records, {"responses": responses}


# --- CreatePartitions ----------------------------------------------------------------------


def create_partitions(
    view: MetadataDelta, request: Mapping[str, Any], *, configs: ConfigView | None = None
) -> tuple[list[Record], dict[str, Any]]:
    configs = configs or config_view(view)
    topics = request["topics"]
    duplicates = _duplicates([t["name"] for t in topics])
    validate_only = bool(request.get("validate_only", False))
    records: list[Record] = []
    results = []
    budget = MAX_PARTITIONS_PER_REQUEST
    brokers = RequestBrokers(view)
    for topic in topics:
        name = topic["name"]
        try:
            if name in duplicates:
                raise ApiError(Errors.INVALID_REQUEST, "Duplicate topic name.")
            new_records, canary = _create_partitions(view, brokers, topic, budget, configs)
        except ApiError as error:
            results.append(
                {"name": name, "error_code": int(error.error), "error_message": error.message}
            )
            continue
        budget -= len(new_records)
        if not validate_only:
            records.extend(new_records)
        results.append({"name": name, "error_code": 0, "error_message": None, **canary})
    return records, {"results": results}


def _create_partitions(
    view: MetadataDelta,
    brokers: RequestBrokers,
    topic: Mapping[str, Any],
    budget: int,
    configs: ConfigView,
) -> tuple[list[PartitionRecord], dict[str, Any]]:
    """The new partitions' records, and what the result says of the canary ones among them
    (classified by the stride rule over the new partition count; the old ones keep theirs)."""
    info = view.topic_by_name(topic["name"])
    if info is None:
        raise ApiError(
            Errors.UNKNOWN_TOPIC_OR_PARTITION, "This server does not host this topic-partition."
        )
    count, current = topic["count"], info.partition_count
    if count < current:
        raise ApiError(
            Errors.INVALID_PARTITIONS,
            f"The topic {info.name} currently has {current} partition(s); {count} would not be "
            "an increase.",
        )
    if count == current:
        raise ApiError(Errors.INVALID_PARTITIONS, f"Topic already has {current} partition(s).")
    additional = count - current
    _check_budget(additional, budget)
    first = view.partition((info.topic_id, 0))
    rf = len(first.replicas) if first is not None else 1
    canary = canary_partitions(current, count, topic_canary_percent(configs, info.name))
    assignments = topic.get("assignments")
    if assignments:
        if len(assignments) != additional:
            raise ApiError(
                Errors.INVALID_REPLICA_ASSIGNMENT,
                f"Attempted to add {additional} additional partition(s), but only "
                f"{len(assignments)} assignment(s) were specified.",
            )
        replicas = _checked_assignments(view, [tuple(a["broker_ids"]) for a in assignments], rf)
        placed = _assigned(brokers, replicas, current, canary)
    else:
        placed = brokers.rings.place(
            seed_name=info.name,
            first_partition=current,
            num_partitions=additional,
            replication_factor=rf,
            canary=canary,
            isolated_before=sum(
                1 for _, p in view.topic_partitions(info) if p.is_canary and p.canary_isolated
            ),
        )
    records = _partition_records(brokers, info.topic_id, current, placed, canary)
    return records, canary_answer(current, placed, canary)
