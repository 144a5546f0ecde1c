"""What a flow replicates, by MirrorSourceConnector's rules.

DefaultReplicationPolicy (remote topic `<source><separator><topic>`, cycle detection), the
DefaultTopicFilter (whole-name regexes), the DefaultConfigPropertyFilter, and the rules for
topic ACLs (LITERAL topic ACLs only; ALLOW WRITE is not synced; ALLOW ALL becomes ALLOW READ)
and topic configs (dynamic topic configs only, without `config.properties.exclude`; sensitive
and read-only ones never).
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterable, Mapping
from typing import Any

from controlplane.controller.mirror.settings import SourceSettings

HEARTBEATS_TOPIC = "heartbeats"
HEARTBEATS_FILTER = "heartbeats.replication.enabled"  # why a heartbeats topic is selected
DYNAMIC_TOPIC_CONFIG = "DYNAMIC_TOPIC_CONFIG"


@dataclasses.dataclass(frozen=True, slots=True)
class ReplicationPolicy:
    """Kafka's DefaultReplicationPolicy."""

    separator: str = "."

    def format_remote_topic(self, source_alias: str, topic: str) -> str:
        return f"{source_alias}{self.separator}{topic}"

    def topic_source(self, topic: str) -> str | None:
        parts = topic.split(self.separator)
        while parts and parts[-1] == "":  # Java's Pattern.split drops trailing empty strings
            parts.pop()
        return parts[0] if len(parts) >= 2 else None

    def upstream_topic(self, topic: str) -> str | None:
        source = self.topic_source(topic)
        return None if source is None else topic[len(source) + len(self.separator) :]

    def original_topic(self, topic: str) -> str:
        upstream = self.upstream_topic(topic)
        if upstream is None or upstream == topic:
            return topic
        return self.original_topic(upstream)

    def is_heartbeats_topic(self, topic: str) -> bool:
        return self.original_topic(topic) == HEARTBEATS_TOPIC

    def is_internal_topic(self, topic: str) -> bool:
        mm2_internal = topic.endswith(self.separator + "internal")
        kafka_internal = topic.startswith(("__", "."))
        connect_internal = topic.endswith(("-internal", ".internal"))
        return mm2_internal or kafka_internal or connect_internal


@dataclasses.dataclass(frozen=True, slots=True)
class TopicSelection:
    """MirrorSourceConnector.shouldReplicateTopic for one flow, with the reason for each
    topic it takes (the include pattern that matched, or the heartbeats rule)."""

    source: str
    target: str
    include: tuple[str, ...]
    exclude: tuple[str, ...]
    policy: ReplicationPolicy
    heartbeats_replication: bool = True

    @classmethod
    def of(cls, source: str, target: str, settings: SourceSettings) -> TopicSelection:
        return cls(
            source,
            target,
            settings.topics,
            settings.topics_exclude,
            ReplicationPolicy(settings.separator),
            settings.heartbeats_replication_enabled,
        )

    def matched_filter(self, topic: str) -> str | None:
        """Why `topic` is replicated (its selecting filter), or None when it is not."""
        if self.policy.is_internal_topic(topic) or self.is_cycle(topic):
            return None
        excluded = any(re.fullmatch(p, topic) for p in self.exclude)
        if not excluded:
            for pattern in self.include:
                if re.fullmatch(pattern, topic):
                    return pattern
        if self.heartbeats_replication and self.policy.is_heartbeats_topic(topic):
            return HEARTBEATS_FILTER
        return None

    def is_cycle(self, topic: str) -> bool:
        """The topic came from the target already (directly or further upstream)."""
        seen = topic
        while True:
            source = self.policy.topic_source(seen)
            if source is None:
                return False
            if source == self.target:
                return True
            upstream = self.policy.upstream_topic(seen)
            if upstream is None or upstream == seen:
                return False
            seen = upstream

    def remote_topic(self, topic: str) -> str:
        return self.policy.format_remote_topic(self.source, topic)


def config_excluded(name: str, exclude: Iterable[str]) -> bool:
    return any(re.fullmatch(pattern, name) for pattern in exclude)


def config_sync_ops(
    source_entries: Iterable[Mapping[str, Any]],
    target_entries: Iterable[Mapping[str, Any]],
    exclude: Iterable[str],
) -> list[dict[str, Any]]:
    """IncrementalAlterConfigs operations that make a remote topic's configs follow its source
    topic's: SET what the source sets dynamically (minus excluded, sensitive and read-only keys)
    and the target lacks or holds otherwise, DELETE what the target sets that the source left
    at its default. Empty when they agree (a no-op sends nothing)."""
    patterns = tuple(exclude)

    def dynamic(entries: Iterable[Mapping[str, Any]]) -> dict[str, str]:
        return {
            str(e["name"]): str(e["value"])
            for e in entries
            if e.get("config_source") == DYNAMIC_TOPIC_CONFIG
            and not e.get("read_only")
            and not e.get("is_sensitive")
            and e.get("value") is not None
            and not config_excluded(str(e["name"]), patterns)
        }

    wanted, present = dynamic(source_entries), dynamic(target_entries)
    ops: list[dict[str, Any]] = [
        {"name": name, "config_operation": "SET", "value": value}
        for name, value in sorted(wanted.items())
        if present.get(name) != value
    ]
    ops.extend(
        {"name": name, "config_operation": "DELETE", "value": None}
        for name in sorted(present)
        if name not in wanted
    )
    return ops


def creation_configs(
    source_entries: Iterable[Mapping[str, Any]], exclude: Iterable[str]
) -> list[dict[str, str]]:
    """The configs a new remote topic is created with (its source's, by the same rule)."""
    ops = config_sync_ops(source_entries, (), exclude)
    return [{"name": str(op["name"]), "value": str(op["value"])} for op in ops]


def target_acl(acl: Mapping[str, Any], selection: TopicSelection) -> dict[str, str] | None:
    """The ACL a flow creates on the target for a source ACL (MirrorSourceConnector's
    syncTopicAcls), or None when that ACL is not synced."""
    if acl.get("resource_type") != "TOPIC" or acl.get("pattern_type") != "LITERAL":
        return None
    allow = acl.get("permission_type") == "ALLOW"
    if allow and acl.get("operation") == "WRITE":
        return None
    topic = str(acl.get("resource_name", ""))
    if selection.matched_filter(topic) is None:
        return None
    operation = "READ" if allow and acl.get("operation") == "ALL" else str(acl["operation"])
    return {
        "resource_type": "TOPIC",
        "resource_name": selection.remote_topic(topic),
        "pattern_type": "LITERAL",
        "principal": str(acl["principal"]),
        "host": str(acl["host"]),
        "operation": operation,
        "permission_type": str(acl["permission_type"]),
    }
