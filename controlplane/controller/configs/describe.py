"""DescribeConfigs: a resource's configs as Kafka answers them, with their sources and synonyms.

Pure functions over a lookup of stored dynamic configs, so the API answers them from the
projection without the controller.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from controlplane.controller.client_configs import CLIENT_METRICS, GROUP
from controlplane.controller.config_schema import (
    BROKER,
    BROKER_CONFIGS,
    CLUSTER_DEFAULT,
    TOPIC,
    TOPIC_CONFIGS,
    ConfigDef,
    ConfigType,
    registry_of,
)
from controlplane.controller.configs.resources import ROOT_LOGGER, ROOT_LOGGER_LEVEL

# Kafka's DescribeConfigsResponse.ConfigSource names.
DEFAULT_CONFIG = "DEFAULT_CONFIG"
DYNAMIC_TOPIC_CONFIG = "DYNAMIC_TOPIC_CONFIG"
DYNAMIC_BROKER_CONFIG = "DYNAMIC_BROKER_CONFIG"
DYNAMIC_DEFAULT_BROKER_CONFIG = "DYNAMIC_DEFAULT_BROKER_CONFIG"
STATIC_BROKER_CONFIG = "STATIC_BROKER_CONFIG"
DYNAMIC_BROKER_LOGGER_CONFIG = "DYNAMIC_BROKER_LOGGER_CONFIG"
CLIENT_METRICS_CONFIG = "CLIENT_METRICS_CONFIG"
GROUP_CONFIG = "GROUP_CONFIG"
# The source of a value set on a client metrics subscription or a group (Kafka 4.x's ConfigHelper).
CLIENT_SOURCES = {CLIENT_METRICS: CLIENT_METRICS_CONFIG, GROUP: GROUP_CONFIG}


def _entry(
    definition: ConfigDef,
    synonyms: list[tuple[str, str | None, str]],
    *,
    read_only: bool,
    include_synonyms: bool,
    include_documentation: bool,
) -> dict[str, Any]:
    """One DescribeConfigs entry; `synonyms` in precedence order, the first is the answer."""
    sensitive = definition.sensitive
    _, value, source = synonyms[0] if synonyms else (definition.name, None, DEFAULT_CONFIG)
    return {
        "name": definition.name,
        "value": None if sensitive else value,
        "read_only": read_only,
        "config_source": source,
        "is_sensitive": sensitive,
        "synonyms": [
            {"name": n, "value": None if sensitive else v, "source": s} for n, v, s in synonyms
        ]
        if include_synonyms
        else [],
        "config_type": definition.type.value,
        "documentation": definition.doc if include_documentation else None,
    }


def _broker_synonyms(
    name: str,
    broker_name: str,
    dynamic: Callable[[str, str, str], str | None],
    static: Mapping[str, str],
) -> list[tuple[str, str | None, str]]:
    """A broker key's values from every level that has one, strongest first (Kafka's
    DynamicBrokerConfig: per broker, cluster default, static, default). A read-only key has
    no dynamic level, whatever an older log set."""
    found: list[tuple[str, str | None, str]] = []
    definition = BROKER_CONFIGS.get(name)
    if definition is None or not definition.read_only:
        found += _dynamic_synonyms(name, broker_name, dynamic)
    if name in static:
        found.append((name, static[name], STATIC_BROKER_CONFIG))
    if definition is not None and definition.default is not None:
        found.append((name, definition.default, DEFAULT_CONFIG))
    return found


def _dynamic_synonyms(
    name: str, broker_name: str, dynamic: Callable[[str, str, str], str | None]
) -> list[tuple[str, str | None, str]]:
    found: list[tuple[str, str | None, str]] = []
    if broker_name != CLUSTER_DEFAULT:
        value = dynamic(BROKER, broker_name, name)
        if value is not None:
            found.append((name, value, DYNAMIC_BROKER_CONFIG))
    value = dynamic(BROKER, CLUSTER_DEFAULT, name)
    if value is not None:
        found.append((name, value, DYNAMIC_DEFAULT_BROKER_CONFIG))
    return found


def describe_configs(
    resource_type: str,
    resource_name: str,
    *,
    dynamic: Callable[[str, str, str], str | None],
    static: Mapping[str, str],
    keys: list[str] | None = None,
    include_synonyms: bool = False,
    include_documentation: bool = False,
) -> list[dict[str, Any]]:
    """The configs of one existing resource as Kafka's DescribeConfigs answers them.

    `dynamic(type, name, key)` reads a stored dynamic config; `keys` None or empty means every
    key (Kafka's ConfigHelper reads an empty list as null).
    A TOPIC key is its topic value, else its broker synonym's cluster default, static or default
    value; a BROKER id's key its own, else the cluster default, static or default value; the
    cluster default resource (BROKER "") answers only its dynamic entries, as Kafka does. A
    CLIENT_METRICS subscription or a GROUP answers every key: its own value, else the default.
    """
    flags = {"include_synonyms": include_synonyms, "include_documentation": include_documentation}
    wanted = set(keys) if keys else None
    entries = []
    if resource_type == TOPIC:
        for name, definition in sorted(TOPIC_CONFIGS.items()):
            if wanted is not None and name not in wanted:
                continue
            synonyms: list[tuple[str, str | None, str]] = []
            value = dynamic(TOPIC, resource_name, name)
            if value is not None:
                synonyms.append((name, value, DYNAMIC_TOPIC_CONFIG))
            if definition.synonym is not None and definition.synonym in BROKER_CONFIGS:
                synonyms += _broker_synonyms(definition.synonym, CLUSTER_DEFAULT, dynamic, static)
            elif definition.default is not None:
                synonyms.append((name, definition.default, DEFAULT_CONFIG))
            entries.append(_entry(definition, synonyms, read_only=False, **flags))
        return entries
    if resource_type == BROKER:
        for name, definition in sorted(BROKER_CONFIGS.items()):
            if wanted is not None and name not in wanted:
                continue
            synonyms = _broker_synonyms(name, resource_name, dynamic, static)
            if resource_name == CLUSTER_DEFAULT and (
                not synonyms or synonyms[0][2] != DYNAMIC_DEFAULT_BROKER_CONFIG
            ):
                continue
            entries.append(_entry(definition, synonyms, read_only=definition.read_only, **flags))
        return entries
    if resource_type in CLIENT_SOURCES:
        registry = registry_of(resource_type) or {}
        for name, definition in sorted(registry.items()):
            if wanted is not None and name not in wanted:
                continue
            value = dynamic(resource_type, resource_name, name)
            synonyms = [(name, value, CLIENT_SOURCES[resource_type])] if value is not None else []
            synonyms.append((name, definition.default, DEFAULT_CONFIG))
            entries.append(_entry(definition, synonyms, read_only=False, **flags))
        return entries
    raise ValueError(f"describe_configs: {resource_type} is described by describe_loggers")


def describe_loggers(
    levels: Mapping[str, str],
    *,
    keys: list[str] | None = None,
    include_synonyms: bool = False,
    include_documentation: bool = False,
) -> list[dict[str, Any]]:
    """A broker's logger levels (BROKER_LOGGER): the root logger and every logger set."""
    all_levels = {ROOT_LOGGER: ROOT_LOGGER_LEVEL, **levels}
    entries = []
    for name, level in sorted(all_levels.items()):
        if keys and name not in keys:
            continue
        source = DYNAMIC_BROKER_LOGGER_CONFIG if name in levels else DEFAULT_CONFIG
        entries.append(
            {
                "name": name,
                "value": level,
                "read_only": False,
                "config_source": source,
                "is_sensitive": False,
                "synonyms": [{"name": name, "value": level, "source": source}]
                if include_synonyms
                else [],
                "config_type": ConfigType.STRING.value,
                "documentation": "The log level of this logger." if include_documentation else None,
            }
        )
    return entries
