"""MirrorMaker 2's configuration in the pure core (issue 13, point 1): Java properties, config
provider references, Kafka's MirrorMakerConfig derivations (flows, connector and worker configs,
KIP-710's REST settings) and every refusal, each naming its key."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from controlplane.controller.mirror.config import (
    CONNECTORS,
    Flow,
    MirrorConfigError,
    is_sensitive,
    mirror_config_parse,
)
from controlplane.controller.mirror.properties import PropertiesError, parse_properties
from controlplane.controller.mirror.references import (
    is_single_reference,
    reference_problems,
    references,
    transform,
)
from controlplane.controller.mirror.settings import (
    SettingsError,
    SourceSettings,
    WorkerSettings,
)

BASE = """clusters = A, B
A.bootstrap.servers = http://a:8000
B.bootstrap.servers = https://b:8443
config.providers = env
config.providers.env.class = org.apache.kafka.common.config.provider.EnvVarConfigProvider
A->B.enabled = true
"""


def test_java_properties_semantics() -> None:
    text = (
        "# comment\n! also a comment\n\n"
        "  a = 1\n"
        "b:2\n"
        "c 3\n"
        "d\\=e = four\n"
        "long = one, \\\n     two, \\\n   three\n"
        "unicode = caf\\u00e9\\t!\n"
        "a = last wins\n"
        "empty =\n"
        "bare\n"
    )
    parsed = parse_properties(text)
    assert parsed.values == {
        "a": "last wins",
        "b": "2",
        "c": "3",
        "d=e": "four",
        "long": "one, two, three",
        "unicode": "café\t!",
        "empty": "",
        "bare": "",
    }
    assert parsed.lines["long"] == 8 and parsed.lines["a"] == 12
    with pytest.raises(PropertiesError, match="line 1"):
        parse_properties("x = \\u12g4")


def test_references_as_kafkas_config_transformer_reads_them() -> None:
    found = list(references("${env:HOME}/x ${file:/etc/a.properties:k} ${directory:/run/s:token}"))
    assert [(r.provider, r.path, r.key) for r in found] == [
        ("env", "", "HOME"),
        ("file", "/etc/a.properties", "k"),
        ("directory", "/run/s", "token"),
    ]
    assert (
        reference_problems("${env:X")
        and reference_problems("${:x}")
        and reference_problems("${env:}")
    )
    assert reference_problems("plain $ and {braces}") == []
    assert is_single_reference(" ${env:X} ") and not is_single_reference("a${env:X}")
    value, left = transform(
        "${env:A}-${env:B}", lambda p, path, k: {"A": "1"}.get(k) if p == "env" else None
    )
    assert value == "1-${env:B}" and [r.text for r in left] == ["${env:B}"]


def test_flows_follow_kafkas_cluster_pairs() -> None:
    config = mirror_config_parse(BASE)
    # emit.heartbeats.enabled defaults to true: B->A exists to emit heartbeats into A.
    assert config.flows() == [Flow("A", "B"), Flow("B", "A")]
    assert config.flow_enabled(Flow("A", "B")) and not config.flow_enabled(Flow("B", "A"))
    quiet = mirror_config_parse(BASE + "emit.heartbeats.enabled = false\n")
    assert quiet.flows() == [Flow("A", "B")]
    assert Flow("A", "B").worker_id("127.0.0.2") == "127.0.0.2/A__B"


def test_connector_configs_keep_references_and_follow_precedence() -> None:
    text = BASE + (
        "A.token = ${env:A_TOKEN}\n"
        "topics = default.*\n"
        "A->B.topics = orders.*\n"
        "refresh.topics.interval.seconds = 30\n"
        "A->B.worker.listeners = http://127.0.0.9:0\n"
        "unrelated.key = x\n"
    )
    config = mirror_config_parse(text)
    connector = config.connector_config(Flow("A", "B"), "MirrorSourceConnector")
    assert connector["source.cluster.token"] == "${env:A_TOKEN}"  # never resolved
    assert connector["source.cluster.bootstrap.servers"] == "http://a:8000"
    assert connector["target.cluster.bootstrap.servers"] == "https://b:8443"
    assert connector["topics"] == "orders.*"  # the flow's own beats the top level
    assert connector["refresh.topics.interval.seconds"] == "30"
    assert connector["connector.class"] == "org.apache.kafka.connect.mirror.MirrorSourceConnector"
    assert connector["name"] == "MirrorSourceConnector" and connector["enabled"] == "true"
    assert "unrelated.key" not in connector and "worker.listeners" not in connector
    assert connector["config.providers.env.class"].endswith("EnvVarConfigProvider")
    assert set(CONNECTORS) == {
        "MirrorSourceConnector",
        "MirrorCheckpointConnector",
        "MirrorHeartbeatConnector",
    }


def test_rest_listener_binding_as_the_seed_says() -> None:
    def worker(extra: str, flow: Flow | None = None) -> WorkerSettings:
        config = mirror_config_parse(BASE + extra)
        return WorkerSettings.parse(config.worker_config(flow or Flow("A", "B")))

    # Nothing set: any interface, any free port, http.
    assert (worker("").protocol, worker("").host, worker("").port) == ("http", "", 0)
    fallback = worker("mm.rest.host.name = 127.0.0.2\nmm.rest.protocol = https\n")
    assert (fallback.protocol, fallback.host, fallback.port) == ("https", "127.0.0.2", 0)
    both = "mm.rest.host.name = 127.0.0.2\nlisteners = http://127.0.0.5:8083\n"
    assert (worker(both).host, worker(both).port) == ("127.0.0.5", 8083)  # listeners first
    cluster = both + "B.listeners = http://127.0.0.6:8084\n"
    assert worker(cluster).host == "127.0.0.6"  # the target cluster's over the top level
    flow = cluster + "A->B.worker.listeners = https://127.0.0.7:0\n"
    assert (worker(flow).protocol, worker(flow).host) == ("https", "127.0.0.7")  # per flow
    assert worker(flow, Flow("B", "A")).host == "127.0.0.5"  # B->A: A has no listeners
    tls = worker(
        "listeners.https.ssl.keystore.location = /k.pem\nA->B.worker.session.timeout.ms = 4000\n"
    )
    assert tls.tls == {"ssl.keystore.location": "/k.pem"} and tls.session_timeout_ms == 4000


def test_source_settings_defaults_are_kafkas() -> None:
    settings = SourceSettings.parse({})
    assert settings.topics == (".*",)
    assert settings.topics_exclude == (r".*[\-\.]internal", r".*\.replica", "__.*")
    assert "min\\.insync\\.replicas" in settings.config_properties_exclude
    assert settings.refresh_topics_interval_s == 600 and settings.separator == "."
    assert settings.replication_factor == 2 and settings.tasks_max == 1
    with pytest.raises(SettingsError, match=r"refresh\.topics\.interval\.seconds"):
        SourceSettings.parse({"refresh.topics.interval.seconds": "${env:UNSET}"})


REFUSED = [
    ("clusters = A, A", "listed twice"),
    ("clusters = A, B.c", "not a valid cluster alias"),
    ("clusters = A, B\nA->A.enabled = true", "A->A.enabled: a flow from A to itself"),
    ("clusters = A, B\nX->B.topics = x", "X->B.topics: unknown cluster alias 'X'"),
    ("clusters = A, B\nC.bootstrap.servers = http://c", "unknown cluster alias 'C'"),
    ("clusters = A, B\nA->B.topics = a, (b", "A->B.topics: invalid regular expression"),
    ("clusters = A, B\ntopics.exclude = *x", "topics.exclude: invalid regular expression"),
    ("clusters = A, B\nA->B.sync.topic.acls.enabled = yes", "'yes' is not true/false"),
    ("clusters = A, B\nA->B.tasks.max = 0", "A->B.tasks.max: 0 is below 1"),
    ("clusters = A, B\nreplication.policy.separator =", "the separator cannot be empty"),
    ("clusters = A, B\nreplication.policy.class = com.acme.Policy", "DefaultReplicationPolicy"),
    ("clusters = A, B\nA->B.worker.listeners = http://h", "is not a listener"),
    ("clusters = A, B\nlisteners = ftp://h:1", "speaks http or https"),
    ("clusters = A, B\nlisteners.https.ssl.keystore.type = JKS", "is not one of PEM"),
    ("clusters = A, B\nA.bootstrap.servers = kafka:9092", "not an http(s) URL"),
    ("clusters = A, B\nA.token = ${env:X", "malformed config provider reference"),
    ("clusters = A, B\nA.token = ${env:}", "names no key"),
    (BASE + "A.token = ${env:/p:X}", "EnvVarConfigProvider takes no path"),
    (
        "clusters = A, B\nconfig.providers = f\nconfig.providers.f.class = FileConfigProvider\n"
        "A.token = ${f:relative.properties:t}",
        "needs an absolute path",
    ),
    (
        "clusters = A, B\nconfig.providers = v\nconfig.providers.v.class = com.Vault",
        "unknown config provider class",
    ),
    (BASE + "config.providers.env.param.allowed.paths = /x", "has no parameter 'allowed.paths'"),
    (BASE + "config.providers.env.param.allowlist.pattern = (", "invalid regular expression"),
    (
        "clusters = A, B\nconfig.providers = f\nconfig.providers.f.class = FileConfigProvider\n"
        "config.providers.f.param.allowed.paths = relative/dir",
        "every allowed path must be absolute",
    ),
    (
        "clusters = A, B\nconfig.providers.ghost.class = FileConfigProvider",
        "not listed in config.providers",
    ),
    ("clusters = A, B\nA.token = plain-secret", "A.token: a secret cannot be stored"),
    ("clusters = A, B\nlisteners.https.ssl.key.password = hunter2", "a secret cannot be stored"),
    (BASE + "A.token = prefix-${env:X}", "a secret cannot be stored"),
    ("clusters = A, B\nA->B.enabled = true", "A.bootstrap.servers: required by flow A->B"),
    ("A->B.enabled = true", "clusters: required"),
    ("x = \\uZZZZ", "malformed \\uXXXX escape"),
]


@pytest.mark.parametrize(("text", "why"), REFUSED)
def test_bad_configurations_name_their_key(text: str, why: str) -> None:
    with pytest.raises(MirrorConfigError) as refused:
        mirror_config_parse(text)
    assert any(why in problem for problem in refused.value.problems), refused.value.problems
    assert "plain-secret" not in str(refused.value) and "hunter2" not in str(refused.value)


def test_sensitive_keys() -> None:
    for key in (
        "A.token",
        "source.cluster.token",
        "ssl.key.password",
        "sasl.jaas.config",
        "listeners.https.ssl.keystore.password",
        "client.secret",
    ):
        assert is_sensitive(key), key
    for key in ("A.bootstrap.servers", "topics", "sync.topic.acls.enabled", "tokens.max"):
        assert not is_sensitive(key), key


@given(
    st.dictionaries(
        st.from_regex(r"[a-z][a-z.]{0,12}", fullmatch=True), st.text(max_size=30), max_size=8
    )
)
def test_any_properties_text_is_read_or_refused_never_crashes(values: dict[str, str]) -> None:
    text = "clusters = A, B\n" + "\n".join(f"{k} = {v}" for k, v in values.items())
    try:
        config = mirror_config_parse(text)
    except MirrorConfigError as refused:
        assert refused.problems
    else:
        assert config.clusters == ("A", "B")


def test_a_reference_to_an_undeclared_provider_stays_literal() -> None:
    """Issue 34: only a super user declares providers; a text without declarations is valid
    and its references stay literal (a node resolves only declared providers)."""
    parsed = mirror_config_parse(
        "clusters = A, B\nA.bootstrap.servers = http://a:8000\nB.bootstrap.servers = http://b:8000\n"
        "A.token = ${env:MM2_TOKEN}\n"
    )
    assert parsed.providers == {}
    assert parsed.properties["A.token"] == "${env:MM2_TOKEN}"
