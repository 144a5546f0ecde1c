"""Rows of the canary page (KIP-1095): brokers by pod and version, and each topic's canary
partitions with why those not isolated are not (their table as its columns)."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from django.urls import reverse
from django.utils.html import format_html, format_html_join
from django.utils.safestring import SafeString

from frontend.tables.columns import Column, Table, badge, joined, link

CANARY_POD = "canary-broker"


@dataclasses.dataclass(frozen=True, slots=True)
class PodGroup:
    pod: str
    brokers: list[dict[str, Any]]
    versions: list[tuple[str, int]]  # version (or "unknown"), brokers running it

    @property
    def is_canary(self) -> bool:
        return self.pod == CANARY_POD


def pod_groups(brokers: Iterable[Mapping[str, Any]]) -> list[PodGroup]:
    """Canary brokers first, then the others; each with how many run which version."""
    by_pod: dict[str, list[dict[str, Any]]] = {}
    for broker in brokers:
        by_pod.setdefault(str(broker["pod"]), []).append(dict(broker))
    groups = []
    for pod in sorted(by_pod, key=lambda p: (p != CANARY_POD, p)):
        counts: dict[str, int] = {}
        for broker in by_pod[pod]:
            version = broker.get("software_version") or "unknown"
            counts[version] = counts.get(version, 0) + 1
        groups.append(PodGroup(pod, by_pod[pod], sorted(counts.items())))
    return groups


@dataclasses.dataclass(frozen=True, slots=True)
class NotIsolatedRow:
    partition_index: int
    replicas: list[int]
    off_canary: list[int]  # replicas on brokers that are not (registered) canary brokers

    @property
    def why(self) -> str:
        brokers = ", ".join(map(str, self.off_canary))
        if len(self.off_canary) == 1:
            return f"broker {brokers} is not a canary broker"
        return f"brokers {brokers} are not canary brokers"


@dataclasses.dataclass(frozen=True, slots=True)
class CanaryTopicRow:
    name: str
    partition_count: int
    canary_partitions: list[int]
    not_isolated: list[NotIsolatedRow]

    @property
    def isolated(self) -> bool:
        return not self.not_isolated


def canary_topic_rows(
    topics: Iterable[Mapping[str, Any]], canary_brokers: set[int]
) -> list[CanaryTopicRow]:
    return [
        CanaryTopicRow(
            name=topic["name"],
            partition_count=topic["partition_count"],
            canary_partitions=list(topic["canary_partitions"]),
            not_isolated=[
                NotIsolatedRow(
                    partition_index=p["partition_index"],
                    replicas=list(p["replica_nodes"]),
                    off_canary=[r for r in p["replica_nodes"] if r not in canary_brokers],
                )
                for p in topic["not_isolated"]
            ],
        )
        for topic in topics
    ]


def isolation_reason(summary: Mapping[str, Any]) -> str:
    """Why canary partitions may not be isolated, from the cluster as it stands."""
    unfenced = len(summary["canary_brokers"]["unfenced"])
    largest = summary["max_replication_factor"]
    if unfenced < largest:
        return (
            f"Only {unfenced} unfenced canary broker(s) for a replication factor of up to "
            f"{largest}: canary partitions that need more are placed like any partition "
            "(availability over isolation)."
        )
    return (
        "There are enough canary brokers now: these were placed when too few canary brokers "
        "were unfenced, assigned by hand, or a broker changed pod since. New canary "
        "partitions are isolated; existing ones keep their placement."
    )


def _not_isolated(topic: CanaryTopicRow) -> SafeString:
    if topic.isolated:
        return badge("ok", "all isolated")
    items = format_html_join(
        "",
        '<li data-partition="{}">{} replicas {} — {}</li>',
        (
            (
                p.partition_index,
                badge("danger", f"partition {p.partition_index}"),
                joined(p.replicas),
                p.why,
            )
            for p in topic.not_isolated
        ),
    )
    return format_html('<ul class="plain">{}</ul>', items)


CANARY_TOPIC_COLUMNS = (
    Column(
        "name", "Topic", lambda t: link(reverse("frontend:topic-detail", args=[t.name]), t.name)
    ),
    Column("partition_count", "Partitions", num=True),
    Column(
        "canary_partitions", "Canary partitions", lambda t: joined(t.canary_partitions), css="mono"
    ),
    Column("not_isolated", "Not isolated", _not_isolated),
)


def canary_topic_table(rows: Sequence[CanaryTopicRow]) -> Table:
    return Table(
        CANARY_TOPIC_COLUMNS,
        rows,
        testid="canary-topics",
        row_attributes=lambda t: {
            "class": "" if t.isolated else "not-isolated",
            "data-topic": t.name,
        },
    )
