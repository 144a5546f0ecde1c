"""The stock broker's configuration as stock_kafka.broker writes it (no JVM started): the
controller listener's properties a KRaft broker reads for its SASL credentials, and a cluster id
that starts with "-" passed so that no option parser takes it for an option."""

from __future__ import annotations

from pathlib import Path

from stock_kafka.broker import KafkaBroker


def broker(tmp_path: Path, cluster_id: str) -> KafkaBroker:
    return KafkaBroker(
        node_id=100,
        cluster_id=cluster_id,
        controller="127.0.0.1:9098",
        principal="kafka-broker-100",
        token="t0ken",
        work_dir=tmp_path,
        port=19100,
    )


def test_the_controller_listener_properties(tmp_path: Path) -> None:
    props = broker(tmp_path, "MkU3OEVBNTcwNTJENDM2Qg").properties()
    assert props["process.roles"] == "broker"
    assert props["controller.listener.names"] == "CONTROLLER"
    assert props["controller.quorum.voters"] == "3000@127.0.0.1:9098"
    assert "CONTROLLER:SASL_PLAINTEXT" in props["listener.security.protocol.map"]
    assert props["sasl.mechanism.controller.protocol"] == "PLAIN"
    jaas = props["listener.name.controller.plain.sasl.jaas.config"]
    assert 'username="kafka-broker-100"' in jaas and 'password="t0ken"' in jaas


def test_a_cluster_id_starting_with_a_dash_is_one_argument(tmp_path: Path) -> None:
    command = broker(tmp_path, "-U3OEVBNTcwNTJENDM2Qg").format_command()
    assert "--cluster-id=-U3OEVBNTcwNTJENDM2Qg" in command
    assert "-U3OEVBNTcwNTJENDM2Qg" not in command  # never a separate argument


def test_a_broker_may_find_the_quorum_by_bootstrap_servers(tmp_path: Path) -> None:
    """KIP-853, as Kafka 4.x's quick start configures a broker: no voter named."""
    props = KafkaBroker(
        node_id=100,
        cluster_id="MkU3OEVBNTcwNTJENDM2Qg",
        controller="127.0.0.1:9098",
        principal="kafka-broker-100",
        token="t0ken",
        work_dir=tmp_path,
        port=19100,
        bootstrap_servers=True,
    ).properties()
    assert props["controller.quorum.bootstrap.servers"] == "127.0.0.1:9098"
    assert "controller.quorum.voters" not in props


def test_the_makefiles_matrix_is_the_launchers() -> None:
    import re

    from stock_kafka import jars

    makefile = (jars.ROOT / "Makefile").read_text()
    matrix = re.search(r"^KAFKA_MATRIX \?= (.*)$", makefile, re.MULTILINE)
    assert matrix is not None
    assert tuple(matrix[1].split()) == jars.MATRIX_VERSIONS
    assert jars.pinned_version() in jars.MATRIX_VERSIONS
