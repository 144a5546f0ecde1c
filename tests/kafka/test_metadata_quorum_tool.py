"""Kafka's own `kafka-metadata-quorum.sh` (MetadataQuorumCommand from the pinned jars,
unmodified) describes this control plane's quorum through a controller listener (issue 35):
KIP-919's DescribeCluster for the controllers, then DescribeQuorum."""

from __future__ import annotations

import contextlib
import json
import re
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from django.db import close_old_connections, connection

from brokers.models import Broker
from controlplane.principals import principal_create
from controlplane.runtime.controller import get_runtime
from controlplane.runtime.conversation import ControllerEvent, RequestContext
from controlplane.runtime.lease import cluster_get_or_create, cluster_read
from stock_kafka.jars import ROOT
from tests.conftest import registration_body
from tests.wire.conftest import RunningListener, start_listener

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def listener(kafka_jars: None, transactional_db: None) -> Iterator[RunningListener]:
    runner, running = start_listener()
    try:
        with lease_kept():
            yield running
    finally:
        runner.stop()


@contextlib.contextmanager
def lease_kept() -> Iterator[None]:
    """The in-process controller's lease renewed as its loop renews it (`run_controller`): two
    tools' JVMs started on a loaded machine outlast a lease, and a controller whose lease lapsed
    is no active controller: DescribeCluster then names none, and the tool waits for one."""
    stop = threading.Event()

    def renew() -> None:
        try:
            while not stop.wait(0.5):
                get_runtime().ensure_active()
                close_old_connections()
        finally:
            connection.close()  # this thread's own

    keeper = threading.Thread(target=renew, name="lease-keeper", daemon=True)
    keeper.start()
    try:
        yield
    finally:
        stop.set()
        keeper.join(timeout=10)


def quorum_tool(listener: RunningListener, token: str, tmp_path: Path, *args: str) -> str:
    config = tmp_path / "admin.properties"
    config.write_text(
        "security.protocol=SASL_PLAINTEXT\nsasl.mechanism=PLAIN\n"
        "sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required "
        f'username="operator" password="{token}";\n'
    )
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "stock_kafka",
            "tool",
            "MetadataQuorumCommand",
            "--bootstrap-controller",
            f"{listener.host}:{listener.controller_port}",
            "--command-config",
            str(config),
            "describe",
            *args,
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=90,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


def test_kafka_metadata_quorum_describes_this_quorum(
    listener: RunningListener, tmp_path: Path
) -> None:
    token = principal_create(name="operator", super_user=True)
    runtime = get_runtime()
    for broker_id in (1, 2):
        event = ControllerEvent(
            "BrokerRegistration",
            registration_body(broker_id, cluster_get_or_create().cluster_id),
            RequestContext(principal="User:broker", request_id=f"reg-{broker_id}"),
        )
        assert runtime.handle(event).error_code == 0
    cluster = cluster_read()
    status = quorum_tool(listener, token, tmp_path, "--status")
    fields = dict(re.findall(r"^(\w+):\s+(.*)$", status, re.MULTILINE))
    assert fields["ClusterId"] == cluster.cluster_id
    assert fields["LeaderId"] == str(cluster.controller_id)
    assert fields["LeaderEpoch"] == str(cluster.controller_epoch)
    assert fields["HighWatermark"] == str(cluster.last_offset + 1)
    endpoint = f"CONTROLLER://{listener.host}:{listener.controller_port}"
    assert nodes(fields["CurrentVoters"]) == [
        {"id": cluster.controller_id, "endpoints": [endpoint]}
    ]
    assert nodes(fields["CurrentObservers"]) == [{"id": 1}, {"id": 2}]
    replication = quorum_tool(listener, token, tmp_path, "--replication")
    rows = re.findall(r"^(\d+)\s+\S+\s+(\d+)\s+.*\b(Leader|Follower|Observer)\b", replication, re.M)
    assert {(node, role) for node, _, role in rows} == {
        (str(cluster.controller_id), "Leader"),
        ("1", "Observer"),
        ("2", "Observer"),
    }
    assert Broker.objects.count() == 2


def nodes(printed: str) -> list[dict[str, Any]]:
    """The tool's voters or observers (JSON), less a directory id it prints as null when the
    node has none (4.0's tool prints it; later ones leave it out)."""
    return [
        {key: value for key, value in node.items() if not (key == "directoryId" and value is None)}
        for node in json.loads(printed)
    ]
