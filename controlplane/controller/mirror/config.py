"""MirrorMaker 2's configuration (Kafka's MirrorMakerConfig) with KIP-710's additions.

The text is mm2.properties: `clusters`, per-cluster settings (`A.bootstrap.servers`, `A.token`),
per-flow settings (`A->B.enabled`, `A->B.topics`, ...) over top-level defaults, the REST settings
(`mm.rest.host.name`, `mm.rest.protocol`, `listeners`, `listeners.https.`, `A->B.worker.`) and
config providers (`config.providers`). Connector configs are derived from it as Kafka's
`connectorBaseConfig` derives them, without resolving references (KIP-710's lazy resolution);
worker configs likewise, resolved on each node.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping

from controlplane.controller.mirror import settings as typed
from controlplane.controller.mirror.properties import PropertiesError, parse_properties
from controlplane.controller.mirror.references import (
    has_reference,
    is_single_reference,
    reference_problems,
    references,
)

CLUSTERS = "clusters"
CONFIG_PROVIDERS = "config.providers"
FLOW_ARROW = "->"
WORKER_PREFIX = "worker."
# Aliases start keys (`A.bootstrap.servers`, `A->B.topics`): no dots, no arrows.
ALIAS = re.compile(r"[A-Za-z0-9_]+(?:-[A-Za-z0-9_]+)*")
PROVIDER_NAME = re.compile(r"[A-Za-z0-9_-]+")
FLOW_KEY = re.compile(r"^(?P<source>[^.]*?)->(?P<target>[^.]*)\.(?P<name>.+)$")

SOURCE_CONNECTOR = "MirrorSourceConnector"
CHECKPOINT_CONNECTOR = "MirrorCheckpointConnector"
HEARTBEAT_CONNECTOR = "MirrorHeartbeatConnector"
CONNECTORS = (CHECKPOINT_CONNECTOR, HEARTBEAT_CONNECTOR, SOURCE_CONNECTOR)  # sorted by name
CONNECTOR_PACKAGE = "org.apache.kafka.connect.mirror."

ENV_PROVIDER, FILE_PROVIDER, DIRECTORY_PROVIDER = "env", "file", "directory"
_PROVIDER_PACKAGE = "org.apache.kafka.common.config.provider."
PROVIDER_KINDS = {
    "EnvVarConfigProvider": ENV_PROVIDER,
    "FileConfigProvider": FILE_PROVIDER,
    "DirectoryConfigProvider": DIRECTORY_PROVIDER,
}
PROVIDER_CLASSES = {
    **{_PROVIDER_PACKAGE + name: kind for name, kind in PROVIDER_KINDS.items()},
    **PROVIDER_KINDS,  # the simple class name is accepted too
}
# Kafka's allowlist parameters (EnvVarConfigProvider.ALLOWLIST_PATTERN_CONFIG, AllowedPaths).
PROVIDER_PARAMS = {
    ENV_PROVIDER: frozenset({"allowlist.pattern"}),
    FILE_PROVIDER: frozenset({"allowed.paths"}),
    DIRECTORY_PROVIDER: frozenset({"allowed.paths"}),
}

# Top-level keys that reach every connector's config (Kafka: the connector ConfigDefs' names).
CONNECTOR_SETTINGS = frozenset(
    {
        "topics",
        "topics.exclude",
        "groups",
        "groups.exclude",
        "config.properties.exclude",
        "use.defaults.from",
        "sync.topic.configs.enabled",
        "sync.topic.configs.interval.seconds",
        "sync.topic.acls.enabled",
        "sync.topic.acls.interval.seconds",
        "refresh.topics.enabled",
        "refresh.topics.interval.seconds",
        "refresh.groups.enabled",
        "refresh.groups.interval.seconds",
        "emit.heartbeats.enabled",
        "emit.heartbeats.interval.seconds",
        "emit.checkpoints.enabled",
        "emit.checkpoints.interval.seconds",
        "heartbeats.replication.enabled",
        "heartbeats.topic.replication.factor",
        "replication.factor",
        "tasks.max",
        "topic.filter.class",
        "config.property.filter.class",
        "admin.timeout.ms",
    }
)
CONNECTOR_PREFIXES = (CONFIG_PROVIDERS, "replication.policy")
# Top-level and target-cluster keys that reach a flow's worker config (KIP-710's REST settings
# and the group settings), under `A->B.worker.` overrides.
WORKER_SETTINGS = frozenset(
    {
        "listeners",
        "mm.rest.host.name",
        "mm.rest.protocol",
        "session.timeout.ms",
        "heartbeat.interval.ms",
        "client.id",
    }
)
WORKER_PREFIXES = ("listeners.https.", CONFIG_PROVIDERS)


class MirrorConfigError(ValueError):
    """The configuration text is refused; `problems` says why, each naming its key."""

    def __init__(self, problems: list[str]) -> None:
        super().__init__("; ".join(problems))
        self.problems = problems


@dataclasses.dataclass(frozen=True, slots=True, order=True)
class Flow:
    source: str
    target: str

    @property
    def key(self) -> tuple[str, str]:
        return (self.source, self.target)

    @property
    def name(self) -> str:
        return f"{self.source}{FLOW_ARROW}{self.target}"

    def worker_id(self, rest_host_name: str) -> str:
        """KIP-710: `<REST_HOST_NAME>/<SOURCE_CLUSTER_ALIAS>__<TARGET_CLUSTER_ALIAS>`."""
        return f"{rest_host_name}/{self.source}__{self.target}"


@dataclasses.dataclass(frozen=True, slots=True)
class ProviderDeclaration:
    name: str
    kind: str  # env, file, directory
    class_name: str
    params: Mapping[str, str]


def is_sensitive(key: str) -> bool:
    """Keys whose value is a secret (Kafka's PASSWORD configs, and a cluster's token here)."""
    last = key.rsplit(".", 1)[-1]
    return (
        last in ("token", "password")
        or key.endswith(("sasl.jaas.config", "ssl.keystore.key"))
        or "password" in last
        or "secret" in last
    )


@dataclasses.dataclass(frozen=True, slots=True)
class MirrorMakerConfig:
    properties: Mapping[str, str]
    clusters: tuple[str, ...]
    providers: Mapping[str, ProviderDeclaration]

    # --- flows -----------------------------------------------------------------------------
    def flows(self) -> list[Flow]:
        """Kafka's clusterPairs: every ordered pair of clusters whose flow is enabled or emits
        heartbeats (`emit.heartbeats.enabled`, true unless turned off)."""
        pairs: list[Flow] = []
        heartbeats_default = self._bool(self.properties.get("emit.heartbeats.enabled"), True)
        for source in self.clusters:
            for target in self.clusters:
                if source == target:
                    continue
                prefix = f"{source}{FLOW_ARROW}{target}."
                enabled = self._bool(self.properties.get(prefix + "enabled"), False)
                heartbeats = self._bool(
                    self.properties.get(prefix + "emit.heartbeats.enabled"), heartbeats_default
                )
                if enabled or heartbeats:
                    pairs.append(Flow(source, target))
        return sorted(pairs)

    def flow(self, source: str, target: str) -> Flow | None:
        wanted = Flow(source, target)
        return wanted if wanted in self.flows() else None

    def flow_enabled(self, flow: Flow) -> bool:
        return self._bool(self.properties.get(f"{flow.name}.enabled"), False)

    @staticmethod
    def _bool(value: str | None, default: bool) -> bool:
        if value is None or has_reference(value):
            return default
        return value.strip().lower() == "true"

    # --- derived configs -------------------------------------------------------------------
    def cluster_props(self, alias: str) -> dict[str, str]:
        prefix = alias + "."
        return {k[len(prefix) :]: v for k, v in self.properties.items() if k.startswith(prefix)}

    def flow_props(self, flow: Flow) -> dict[str, str]:
        prefix = flow.name + "."
        return {k[len(prefix) :]: v for k, v in self.properties.items() if k.startswith(prefix)}

    def connector_config(self, flow: Flow, connector: str) -> dict[str, str]:
        """A connector's config as Kafka's connectorBaseConfig makes it, references unresolved."""
        props = {k: v for k, v in self.properties.items() if k in CONNECTOR_SETTINGS}
        props.update({k: v for k, v in self.properties.items() if k.startswith(CONNECTOR_PREFIXES)})
        for role, alias in (("source", flow.source), ("target", flow.target)):
            for key, value in self.cluster_props(alias).items():
                client = key.startswith(("consumer", "producer", "admin"))
                props[f"{role}.{key}" if client else f"{role}.cluster.{key}"] = value
        props.setdefault("name", connector)
        props.setdefault("connector.class", CONNECTOR_PACKAGE + connector)
        props.setdefault("source.cluster.alias", flow.source)
        props.setdefault("target.cluster.alias", flow.target)
        props.update(
            {k: v for k, v in self.flow_props(flow).items() if not k.startswith(WORKER_PREFIX)}
        )
        props.setdefault("enabled", "false")
        return dict(sorted(props.items()))

    def worker_config(self, flow: Flow) -> dict[str, str]:
        """A flow's worker settings (REST listener, TLS, group timings): top level, then the
        target cluster's, then `A->B.worker.`; references unresolved."""

        def wanted(key: str) -> bool:
            return key in WORKER_SETTINGS or key.startswith(WORKER_PREFIXES)

        props = {k: v for k, v in self.properties.items() if wanted(k)}
        props.update({k: v for k, v in self.cluster_props(flow.target).items() if wanted(k)})
        props.update(
            {
                k[len(WORKER_PREFIX) :]: v
                for k, v in self.flow_props(flow).items()
                if k.startswith(WORKER_PREFIX)
            }
        )
        return dict(sorted(props.items()))

    def setting(self, flow: Flow, name: str, default: str) -> str:
        """One connector setting as a flow sees it: `A->B.name`, else `name`, else `default`."""
        return self.properties.get(f"{flow.name}.{name}", self.properties.get(name, default))


# --- reading and validating the text ---------------------------------------------------------
def mirror_config_parse(text: str) -> MirrorMakerConfig:
    """The configuration, or MirrorConfigError naming every problem (nothing is stored then)."""
    try:
        properties = parse_properties(text).values
    except PropertiesError as error:
        raise MirrorConfigError([str(error)]) from None
    problems: list[str] = []
    clusters = _clusters(properties, problems)
    providers = _providers(properties, problems)
    _check_keys(properties, set(clusters), problems)
    _check_references(properties, providers, problems)
    _check_secrets(properties, problems)
    config = MirrorMakerConfig(properties, clusters, providers)
    if not problems:
        _check_flows(config, problems)
    if problems:
        raise MirrorConfigError(list(dict.fromkeys(problems)))
    return config


def _list(value: str) -> list[str]:
    return [item.strip() for item in value.split(",") if item.strip()]


def _clusters(properties: Mapping[str, str], problems: list[str]) -> tuple[str, ...]:
    value = properties.get(CLUSTERS)
    if value is None or not _list(value):
        problems.append(f"{CLUSTERS}: required, the list of cluster aliases (e.g. A, B)")
        return ()
    aliases = _list(value)
    for alias in aliases:
        if not ALIAS.fullmatch(alias):
            problems.append(
                f"{CLUSTERS}: {alias!r} is not a valid cluster alias "
                "(letters, digits, _ and inner -)"
            )
    if len(set(aliases)) != len(aliases):
        problems.append(f"{CLUSTERS}: an alias is listed twice")
    return tuple(aliases)


def _providers(
    properties: Mapping[str, str], problems: list[str]
) -> dict[str, ProviderDeclaration]:
    names = _list(properties.get(CONFIG_PROVIDERS, ""))
    declared: dict[str, ProviderDeclaration] = {}
    for name in names:
        if not PROVIDER_NAME.fullmatch(name):
            problems.append(f"{CONFIG_PROVIDERS}: {name!r} is not a valid provider name")
            continue
        class_key = f"{CONFIG_PROVIDERS}.{name}.class"
        class_name = properties.get(class_key, "").strip()
        kind = PROVIDER_CLASSES.get(class_name)
        if kind is None:
            problems.append(
                f"{class_key}: unknown config provider class {class_name!r} (known: "
                + ", ".join(_PROVIDER_PACKAGE + n for n in PROVIDER_KINDS)
                + ")"
            )
            continue
        param_prefix = f"{CONFIG_PROVIDERS}.{name}.param."
        params = {
            k[len(param_prefix) :]: v for k, v in properties.items() if k.startswith(param_prefix)
        }
        for param, value in params.items():
            if param not in PROVIDER_PARAMS[kind]:
                problems.append(
                    f"{param_prefix}{param}: {class_name} has no parameter {param!r} "
                    f"(it takes {', '.join(sorted(PROVIDER_PARAMS[kind]))})"
                )
            elif param == "allowlist.pattern":
                problem = typed.regex_problem(value)
                if problem:
                    problems.append(f"{param_prefix}{param}: {problem}")
            elif any(not p.strip().startswith("/") for p in value.split(",")):
                problems.append(f"{param_prefix}{param}: every allowed path must be absolute")
        declared[name] = ProviderDeclaration(name, kind, class_name, params)
    for key in properties:
        if key.startswith(CONFIG_PROVIDERS + "."):
            name = key[len(CONFIG_PROVIDERS) + 1 :].split(".", 1)[0]
            if name not in names:
                problems.append(f"{key}: provider {name!r} is not listed in {CONFIG_PROVIDERS}")
    return declared


def _flow_key(key: str) -> tuple[str, str, str] | None:
    match = FLOW_KEY.match(key)
    if match is None:
        return None
    return match.group("source"), match.group("target"), match.group("name")


def _check_keys(properties: Mapping[str, str], clusters: set[str], problems: list[str]) -> None:
    for key, value in properties.items():
        flow = _flow_key(key)
        if flow is None and FLOW_ARROW in key.split(".", 1)[0]:
            problems.append(f"{key}: a flow's settings are written A->B.<setting>")
            continue
        if flow is not None:
            source, target, name = flow
            for alias in (source, target):
                if clusters and alias not in clusters:
                    problems.append(f"{key}: unknown cluster alias {alias!r} (not in clusters)")
            if source == target:
                problems.append(f"{key}: a flow from {source} to itself ({source}->{source})")
            setting = name[len(WORKER_PREFIX) :] if name.startswith(WORKER_PREFIX) else name
        else:
            alias, _, rest = key.partition(".")
            if rest in ("bootstrap.servers", "token") and clusters and alias not in clusters:
                problems.append(f"{key}: unknown cluster alias {alias!r} (not in clusters)")
            setting = rest if alias in clusters else key
        if not has_reference(value):
            problem = typed.setting_problem(setting, value)
            if problem:
                problems.append(f"{key}: {problem}")


def _check_references(
    properties: Mapping[str, str],
    providers: Mapping[str, ProviderDeclaration],
    problems: list[str],
) -> None:
    for key, value in properties.items():
        problems.extend(f"{key}: {p}" for p in reference_problems(value))
        for reference in references(value):
            provider = providers.get(reference.provider)
            if provider is None:
                # Not declared here: it stays literal (only a super user declares providers,
                # and a node resolves only what is declared), never an error.
                continue
            if provider.kind == ENV_PROVIDER and reference.path:
                problems.append(
                    f"{key}: {reference.text}: EnvVarConfigProvider takes no path "
                    "(${" + reference.provider + ":NAME})"
                )
            elif provider.kind != ENV_PROVIDER and not reference.path.startswith("/"):
                problems.append(
                    f"{key}: {reference.text}: {provider.class_name} needs an absolute path "
                    "(${" + reference.provider + ":/path:key})"
                )


def _check_secrets(properties: Mapping[str, str], problems: list[str]) -> None:
    """A secret never enters the metadata log: sensitive keys must be provider references."""
    for key, value in properties.items():
        if is_sensitive(key) and value.strip() and not is_single_reference(value):
            problems.append(
                f"{key}: a secret cannot be stored in the configuration; give a config provider "
                "reference instead (e.g. ${env:NAME} or ${file:/path:key})"
            )


def _check_flows(config: MirrorMakerConfig, problems: list[str]) -> None:
    for flow in config.flows():
        for alias in (flow.source, flow.target):
            servers = config.properties.get(f"{alias}.bootstrap.servers")
            if servers is None or not servers.strip():
                problems.append(
                    f"{alias}.bootstrap.servers: required by flow {flow.name} (the base URL "
                    f"of cluster {alias}'s control plane)"
                )
