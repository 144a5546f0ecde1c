"""kafkajs's admin client (the npm registry, pinned by tests/wire/kafkajs/package-lock.json),
unmodified, against the listener: topics, partitions, configs, ACLs, the cluster, and Kafka's
error types for a duplicate and an unknown topic."""

from __future__ import annotations

import json
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from audit.models import AuditEvent
from tests.conftest import REQUIRE_SERVICES
from tests.wire.conftest import RunningListener

pytestmark = pytest.mark.django_db(transaction=True)
HERE = Path(__file__).resolve().parent / "kafkajs"


def need_kafkajs() -> str:
    node = shutil.which("node")
    if node and (HERE / "node_modules" / "kafkajs").is_dir():
        return node
    message = "kafkajs is not installed (scripts/install-kafkajs.sh)"
    if REQUIRE_SERVICES:
        pytest.fail(message)
    pytest.skip(message)


def test_kafkajs_admin_client(
    wire_listener_port_per_node: RunningListener,
    register: Callable[..., int],
    tokens: dict[str, str],
) -> None:
    """With a port per node: kafkajs takes every node advertised at its bootstrap address for
    the bootstrap broker itself, and drops its connections whenever their racks differ."""
    wire_listener = wire_listener_port_per_node
    node = need_kafkajs()
    for broker in range(3):
        register(broker, unfence=True)
    done = subprocess.run(
        [node, str(HERE / "admin.mjs"), wire_listener.sasl_bootstrap, "admin", tokens["admin"]],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    out = json.loads(done.stdout.strip().splitlines()[-1])
    assert out["created"] is True
    assert out["duplicate"] is False  # kafkajs answers an existing topic with false
    assert out["too_wide"] == "INVALID_REPLICATION_FACTOR"
    assert "js-orders" in out["listed"]
    assert (out["partitions"], out["partitions_after"]) == (3, 5)
    assert {"retention.ms", "cleanup.policy"} <= set(out["config_names"])
    assert out["acls"] == ["js-orders"]
    assert out["brokers"] == [0, 1, 2] and out["controller"] in (0, 1, 2)
    assert out["unknown"] == "UNKNOWN_TOPIC_OR_PARTITION"
    assert "js-orders" not in out["listed_after"]
    principal_rows = AuditEvent.objects.filter(
        principal="User:admin", client_id="kafkajs-conformance"
    )
    assert set(principal_rows.values_list("api", flat=True)) >= {
        "CreateTopics",
        "CreatePartitions",
        "AlterConfigs",
        "CreateAcls",
        "DeleteAcls",
        "DeleteTopics",
    }
