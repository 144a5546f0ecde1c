"""What a config page is about: a topic, a broker, the cluster default, a client metrics
subscription or a group (`ConfigTarget`), with its dynamic configs as stored, every key as
DescribeConfigs answers it, the digest a diff was made from, and whether it exists."""

from __future__ import annotations

import dataclasses
import json
from typing import Any

from django.urls import reverse
from django.utils.crypto import salted_hmac

from brokers.selectors import broker_exists
from configs.selectors import configs_describe
from controlplane.controller.acls.bindings import CLUSTER_NAME, ResourceType
from controlplane.controller.client_configs import (
    CLIENT_METRICS,
    CLIENT_METRICS_CONFIGS,
    GROUP,
    GROUP_CONFIGS,
)
from controlplane.controller.config_schema import (
    BROKER,
    BROKER_CONFIGS,
    CLUSTER_DEFAULT,
    TOPIC,
    TOPIC_CONFIGS,
    ConfigDef,
)
from controlplane.controller.configs.describe import (
    CLIENT_METRICS_CONFIG,
    DYNAMIC_BROKER_CONFIG,
    DYNAMIC_DEFAULT_BROKER_CONFIG,
    DYNAMIC_TOPIC_CONFIG,
    GROUP_CONFIG,
)
from controlplane.selectors import StoredConfigs, configs_stored
from frontend.tables.configs import ConfigRow, config_row
from replicas.selectors import topic_exists

TOPIC_KIND, BROKER_KIND, DEFAULT_KIND = "topic", "broker", "default"
# Kafka 4.x's clients' resources (KIP-714, KIP-848): any name, no existence to check.
CLIENT_METRICS_KIND, GROUP_KIND = "client-metrics", "group"
NAMED_KINDS = {
    CLIENT_METRICS_KIND: (CLIENT_METRICS, CLIENT_METRICS_CONFIG, CLIENT_METRICS_CONFIGS),
    GROUP_KIND: (GROUP, GROUP_CONFIG, GROUP_CONFIGS),
}
OWN_SOURCES = {
    TOPIC_KIND: DYNAMIC_TOPIC_CONFIG,
    BROKER_KIND: DYNAMIC_BROKER_CONFIG,
    DEFAULT_KIND: DYNAMIC_DEFAULT_BROKER_CONFIG,
    **{kind: source for kind, (_, source, _) in NAMED_KINDS.items()},
}
LABELS = {CLIENT_METRICS_KIND: "client metrics subscription", GROUP_KIND: "group"}
# Kafka describes the cluster default (BROKER "") with only the keys set at that level. Its page
# lists every key as a broker without overrides of its own sees it (the cluster default, then
# static, then default): described as a broker that cannot exist.
BROKER_WITHOUT_OVERRIDES = "-1"
INT32_MAX = 2**31 - 1  # broker ids are Kafka's int32


@dataclasses.dataclass(frozen=True, slots=True)
class ConfigTarget:
    """A resource whose configs a page shows: a topic, a broker, the cluster default, a client
    metrics subscription or a group."""

    kind: str
    resource_name: str  # the topic, broker id, subscription or group; "" for the cluster default

    @property
    def resource_type(self) -> str:
        if self.kind in NAMED_KINDS:
            return NAMED_KINDS[self.kind][0]
        return TOPIC if self.kind == TOPIC_KIND else BROKER

    @property
    def own_source(self) -> str:
        return OWN_SOURCES[self.kind]

    @property
    def definitions(self) -> dict[str, ConfigDef]:
        if self.kind in NAMED_KINDS:
            return NAMED_KINDS[self.kind][2]
        return TOPIC_CONFIGS if self.kind == TOPIC_KIND else BROKER_CONFIGS

    @property
    def label(self) -> str:
        if self.kind == DEFAULT_KIND:
            return "the cluster default"
        return f"{LABELS.get(self.kind, self.kind)} {self.resource_name}"

    @property
    def acl_resource(self) -> tuple[ResourceType, str]:
        if self.kind == TOPIC_KIND:
            return ResourceType.TOPIC, self.resource_name
        if self.kind == GROUP_KIND:
            return ResourceType.GROUP, self.resource_name
        return ResourceType.CLUSTER, CLUSTER_NAME

    def url(self, step: str = "") -> str:
        kwargs: dict[str, Any] = {}
        if self.kind == TOPIC_KIND or self.kind in NAMED_KINDS:
            kwargs = {"name": self.resource_name}
        elif self.kind == BROKER_KIND:
            kwargs = {"broker_id": int(self.resource_name)}
        name = f"frontend:{self.kind}-config" + (f"-{step}" if step else "")
        return reverse(name, kwargs=kwargs)

    @property
    def edit_url(self) -> str:
        return self.url("edit")

    @property
    def apply_url(self) -> str:
        return self.url("apply")


def config_target(kind: str, name: str = "", broker_id: int | None = None) -> ConfigTarget:
    if kind == TOPIC_KIND or kind in NAMED_KINDS:
        return ConfigTarget(kind, name)
    if kind == BROKER_KIND:
        return ConfigTarget(kind, str(broker_id))
    return ConfigTarget(DEFAULT_KIND, CLUSTER_DEFAULT)


def stored_configs(target: ConfigTarget) -> StoredConfigs:
    return configs_stored(resources=[(target.resource_type, target.resource_name)])


def described_configs(target: ConfigTarget, stored: StoredConfigs) -> list[ConfigRow]:
    """Every key of the target as DescribeConfigs answers it (the API's own selector)."""
    name = BROKER_WITHOUT_OVERRIDES if target.kind == DEFAULT_KIND else target.resource_name
    entries = configs_describe(
        resource_type=target.resource_type,
        resource_name=name,
        stored=stored,
        include_synonyms=True,
        include_documentation=True,
    )
    return [
        config_row(
            entry,
            own_source=target.own_source,
            default=target.definitions[entry["name"]].default,
        )
        for entry in entries
    ]


def config_fingerprint(target: ConfigTarget, stored: StoredConfigs) -> str:
    """A keyed digest of the target's own dynamic configs: the diff was computed from them.
    Keyed, because a secret's digest goes into the page."""
    own = sorted(stored.get((target.resource_type, target.resource_name), {}).items())
    return salted_hmac("frontend.config-diff", json.dumps(own)).hexdigest()


def config_target_exists(target: ConfigTarget) -> bool:
    if target.kind == TOPIC_KIND:
        return topic_exists(name=target.resource_name)
    if target.kind == BROKER_KIND:
        broker_id = int(target.resource_name)
        return 0 <= broker_id <= INT32_MAX and broker_exists(broker_id=broker_id)
    return True  # the cluster default; a subscription or a group exists once named
