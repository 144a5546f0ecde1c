"""What a stock Kafka broker under this control plane is told: its server.properties (a broker-
only KRaft node whose one static voter is this control plane's controller listener, reached with
SASL/PLAIN as a broker principal; light for a small machine), the JAAS lines of its logins, and
its log4j levels. No process here: stock_kafka.broker runs it."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

from stock_kafka import jars as kafka

CONTROLLER_LISTENER = "CONTROLLER"
# Clients log in here: SASL/PLAIN (the broker's own users) and SCRAM-SHA-256/512 (the SCRAM users
# of the metadata log, KIP-554).
SASL_CLIENT_LISTENER = "SASL_CLIENT"
SCRAM_MECHANISMS = ("SCRAM-SHA-256", "SCRAM-SHA-512")
SCRAM_LOGIN = "org.apache.kafka.common.security.scram.ScramLoginModule required;"
DEFAULT_CONTROLLER_ID = 3000  # settings.CP_CONTROLLER_ID's default
# Kafka's test kit (KafkaClusterTestKit) lowers the cleaner's 128 MiB dedupe buffer to 2 MiB.
DEDUPE_BUFFER_BYTES = 2 * 1024 * 1024


def _jaas_quoted(value: str) -> str:
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


def jaas_plain(username: str, password: str) -> str:
    """A PlainLoginModule line: the client side of SASL/PLAIN (the quotes escaped as JAAS reads
    them; tokens are URL-safe base64, names this control plane's principal names)."""
    return (
        "org.apache.kafka.common.security.plain.PlainLoginModule required "
        f"username={_jaas_quoted(username)} password={_jaas_quoted(password)};"
    )


def jaas_plain_users(users: Mapping[str, str]) -> str:
    """The server side of SASL/PLAIN on a broker's client listener: Kafka's PlainLoginModule
    checks each client against its `user_NAME="password"` options."""
    options = " ".join(f"user_{name}={_jaas_quoted(secret)}" for name, secret in users.items())
    return f"org.apache.kafka.common.security.plain.PlainLoginModule required {options};"


def broker_properties(
    *,
    node_id: int,
    controller: str,
    principal: str,
    token: str,
    data_dirs: Sequence[Path],
    port: int,
    host: str = "127.0.0.1",
    controller_id: int = DEFAULT_CONTROLLER_ID,
    overrides: Mapping[str, str] | None = None,
    sasl_port: int | None = None,
    client_users: Mapping[str, str] | None = None,
) -> dict[str, str]:
    """server.properties of a broker-only node under this control plane.

    The broker's Raft client (kafka.raft.KafkaRaftManager) and its channel to the active
    controller (NodeToControllerChannelManager) both build their channel with
    `ChannelBuilders.clientChannelBuilder(protocol, JaasContext.Type.SERVER, config,
    <first controller.listener.names>, sasl.mechanism.controller.protocol, ...)`: the JAAS
    context is the *server* one of the CONTROLLER listener, read from
    `listener.name.controller.<mechanism>.sasl.jaas.config` (JaasContext.loadServerContext,
    after ChannelBuilders.channelBuilderConfigs strips the listener prefix). A plain
    `sasl.jaas.config` is ignored there (Kafka logs a warning)."""
    endpoints = [f"PLAINTEXT://{host}:{port}"]
    protocols = f"PLAINTEXT:PLAINTEXT,{CONTROLLER_LISTENER}:SASL_PLAINTEXT"
    if sasl_port is not None:  # a client listener where clients log in (their principals)
        endpoints.append(f"{SASL_CLIENT_LISTENER}://{host}:{sasl_port}")
        protocols += f",{SASL_CLIENT_LISTENER}:SASL_PLAINTEXT"
    props = {
        "process.roles": "broker",
        "node.id": str(node_id),
        "listeners": ",".join(endpoints),
        "advertised.listeners": ",".join(endpoints),
        "inter.broker.listener.name": "PLAINTEXT",
        "controller.listener.names": CONTROLLER_LISTENER,
        "listener.security.protocol.map": protocols,
        "controller.quorum.voters": f"{controller_id}@{controller}",
        "sasl.mechanism.controller.protocol": "PLAIN",
        f"listener.name.{CONTROLLER_LISTENER.lower()}.plain.sasl.jaas.config": jaas_plain(
            principal, token
        ),
        "log.dirs": ",".join(str(d) for d in data_dirs),
        # One broker: the internal topics at RF 1, one partition each.
        "offsets.topic.replication.factor": "1",
        "offsets.topic.num.partitions": "1",
        "transaction.state.log.replication.factor": "1",
        "transaction.state.log.min.isr": "1",
        "transaction.state.log.num.partitions": "1",
        "share.coordinator.state.topic.replication.factor": "1",
        "share.coordinator.state.topic.min.isr": "1",
        "group.initial.rebalance.delay.ms": "0",
        # Light on a 2-core machine beside everything else.
        "log.cleaner.dedupe.buffer.size": str(DEDUPE_BUFFER_BYTES),
        "log.cleaner.threads": "1",
        "num.network.threads": "1",
        "num.io.threads": "2",
        "background.threads": "2",
        "num.replica.fetchers": "1",
        "num.recovery.threads.per.data.dir": "1",
        "num.partitions": "1",
        "auto.create.topics.enable": "false",
    }
    if sasl_port is not None:
        listener = f"listener.name.{SASL_CLIENT_LISTENER.lower()}"
        props["sasl.enabled.mechanisms"] = ",".join(("PLAIN", *SCRAM_MECHANISMS))
        props[f"{listener}.plain.sasl.jaas.config"] = jaas_plain_users(client_users or {})
        for mechanism in SCRAM_MECHANISMS:  # the credentials: the broker's image of the log
            props[f"{listener}.{mechanism.lower()}.sasl.jaas.config"] = SCRAM_LOGIN
    props.update(overrides or {})
    return props


def properties_text(props: Mapping[str, str]) -> str:
    """Java properties: `key=value` lines (backslashes and line breaks escaped)."""

    def escaped(value: str) -> str:
        return value.replace("\\", "\\\\").replace("\n", "\\n")

    return "".join(f"{key}={escaped(value)}\n" for key, value in props.items())


def log4j_config(levels: Mapping[str, str]) -> str:
    """stock_kafka.jars's log4j2 config (stdout) with these loggers' levels on top."""
    text = kafka.LOG4J_CONFIG.read_text()
    for index, (name, level) in enumerate(sorted(levels.items())):
        text += f"logger.extra{index}.name = {name}\nlogger.extra{index}.level = {level}\n"
    return text
