"""The dynamic configs' part of the image (Kafka's ConfigurationsImage and ConfigurationsDelta).

Replays ConfigRecord; a removed topic's configs go with it (`replay_remove_topic`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterator
from typing import Any

from controlplane.controller.records import ConfigRecord, Record

ConfigKey = tuple[str, str, str]  # (resource type, resource name, config name)
TOPIC_RESOURCE = "TOPIC"  # the resource type a topic's configs are kept under


@dataclasses.dataclass(slots=True)
class ConfigurationsImage:
    configs: dict[tuple[str, str], dict[str, str]] = dataclasses.field(default_factory=dict)

    def put_config(self, key: ConfigKey, value: str | None) -> None:
        resource_type, resource_name, name = key
        entries = self.configs.setdefault((resource_type, resource_name), {})
        if value is None:
            entries.pop(name, None)
            if not entries:
                del self.configs[(resource_type, resource_name)]
        else:
            entries[name] = value

    def apply(self, delta: ConfigurationsDelta) -> None:
        for key, value in delta.changed_configs.items():
            self.put_config(key, value)

    def as_comparable(self) -> dict[str, Any]:
        return {
            "configs": {
                f"{t}:{n}": dict(sorted(v.items())) for (t, n), v in sorted(self.configs.items())
            }
        }

    def records(self) -> Iterator[Record]:
        """The records that rebuild this part in an empty image: one per value, by resource
        and name."""
        for (resource_type, resource_name), entries in sorted(self.configs.items()):
            for name, value in sorted(entries.items()):
                yield ConfigRecord(resource_type, resource_name, name, value)


class ConfigurationsDelta:
    """Config values changed over a ConfigurationsImage; None marks a deleted key."""

    def __init__(self, image: ConfigurationsImage) -> None:
        self.image = image
        self.changed_configs: dict[ConfigKey, str | None] = {}

    def replayers(self) -> dict[type[Record], Callable[[Any, int], None]]:
        return {ConfigRecord: self.replay_config}

    def config(self, resource_type: str, resource_name: str, name: str) -> str | None:
        key = (resource_type, resource_name, name)
        if key in self.changed_configs:
            return self.changed_configs[key]
        return self.image.configs.get((resource_type, resource_name), {}).get(name)

    def configs_of(self, resource_type: str, resource_name: str) -> dict[str, str]:
        entries = dict(self.image.configs.get((resource_type, resource_name), {}))
        for (rtype, rname, name), value in self.changed_configs.items():
            if rtype == resource_type and rname == resource_name:
                if value is None:
                    entries.pop(name, None)
                else:
                    entries[name] = value
        return entries

    def replay_config(self, record: ConfigRecord, offset: int) -> None:
        key = (record.resource_type, record.resource_name, record.name)
        self.changed_configs[key] = record.value

    def replay_remove_topic(self, topic_name: str) -> None:
        """A removed topic's configs go with it (Kafka's ConfigurationsDelta, on
        RemoveTopicRecord)."""
        for name in self.configs_of(TOPIC_RESOURCE, topic_name):
            self.changed_configs[(TOPIC_RESOURCE, topic_name, name)] = None
