"""A kafka-python consumer partition assignor for canary isolation (KIP-1095).

The group leader runs it. Canary members (their member id, which starts with the client id, or
their group instance id contains `marker`, as the KIP suggests) get the canary partitions;
regular members get the others, each set round robin over its members in order. So that nothing
is left unconsumed, canary partitions go to the regular members when the group has no canary
member, and the other partitions to the canary members when it has no regular one.
"""

from __future__ import annotations

import logging
from collections import defaultdict
from collections.abc import Sequence
from typing import Any

from kafka.coordinator.assignors.abstract import (
    AbstractPartitionAssignor,
    ConsumerProtocolAssignment,
    ConsumerProtocolSubscription,
)

from canary.clients.directory import CanaryDirectory

logger = logging.getLogger("canary.clients")


class CanaryAssignor(AbstractPartitionAssignor):  # type: ignore[misc]
    name = "canary"
    version = 0

    def __init__(self, directory: CanaryDirectory, *, marker: str = "canary") -> None:
        if not marker:
            raise ValueError("The canary marker must not be empty.")
        self.directory = directory
        self.marker = marker

    def is_canary_member(self, member: Any) -> bool:
        names = (getattr(member, "group_instance_id", None) or "", member.member_id or "")
        return any(self.marker in name for name in names)

    def assign(self, cluster: Any, members: Sequence[Any]) -> dict[str, Any]:
        canary_members = sorted(m.member_id for m in members if self.is_canary_member(m))
        regular_members = sorted(m.member_id for m in members if not self.is_canary_member(m))
        subscribed = {m.member_id: set(m.metadata.topics) for m in members}
        assignment: dict[str, dict[str, list[int]]] = defaultdict(dict)
        for topic in sorted(set().union(*subscribed.values()) if subscribed else ()):
            partitions = cluster.partitions_for_topic(topic)
            if partitions is None:
                logger.warning("No partition metadata for topic %s", topic)
                continue
            ordered = sorted(partitions)
            canary = self.directory.canary_partitions(topic, len(ordered))
            to_canary = [m for m in canary_members if topic in subscribed[m]]
            to_regular = [m for m in regular_members if topic in subscribed[m]]
            _round_robin(
                assignment, topic, [p for p in ordered if p in canary], to_canary or to_regular
            )
            _round_robin(
                assignment, topic, [p for p in ordered if p not in canary], to_regular or to_canary
            )
        return {
            m.member_id: ConsumerProtocolAssignment(
                self.version, sorted(assignment[m.member_id].items()), b""
            )
            for m in members
        }

    def metadata(self, topics: Any) -> Any:
        return ConsumerProtocolSubscription(self.version, sorted(topics), b"")

    def on_assignment(self, assignment: Any, generation: int) -> None:
        pass


def _round_robin(
    assignment: dict[str, dict[str, list[int]]],
    topic: str,
    partitions: list[int],
    members: list[str],
) -> None:
    if not members:
        return
    for i, partition in enumerate(partitions):
        assignment[members[i % len(members)]].setdefault(topic, []).append(partition)
