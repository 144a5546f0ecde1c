"""Ids the core makes come from ControllerEnv: the same events with the same seeded environment
answer the same records (topic, ACL and delegation token ids included), so property-based runs
replay deterministically."""

from __future__ import annotations

import random
import uuid
from typing import Any

from controlplane.controller.dispatch import run_event
from controlplane.controller.env import ControllerEnv
from controlplane.controller.image import MetadataDelta, MetadataImage

CLUSTER = "cluster-env"
NOW = 1_000_000

EVENTS: list[tuple[str, dict[str, Any]]] = [
    (
        "BrokerRegistration",
        {
            "broker_id": 1,
            "cluster_id": CLUSTER,
            "incarnation_id": "1b5c7a3e-4f7d-4a53-9d0e-6f1d2a3b4c5d",
            "listeners": [
                {"name": "PLAINTEXT", "host": "b1", "port": 9092, "security_protocol": "PLAINTEXT"}
            ],
            "rack": None,
            "log_dirs": [],
        },
    ),
    (
        "BrokerHeartbeat",
        {"broker_id": 1, "broker_epoch": 0, "current_metadata_offset": 0},
    ),
    (
        "CreateTopics",
        {"topics": [{"name": "orders", "num_partitions": 2, "replication_factor": 1}]},
    ),
    (
        "CreateAcls",
        {
            "creations": [
                {
                    "resource_type": "TOPIC",
                    "resource_name": "orders",
                    "pattern_type": "LITERAL",
                    "principal": "User:alice",
                    "host": "*",
                    "operation": "READ",
                    "permission_type": "ALLOW",
                }
            ]
        },
    ),
    (
        "IncrementalAlterConfigs",
        {
            "resources": [
                {
                    "resource_type": "BROKER",
                    "resource_name": "",
                    "configs": [
                        {
                            "name": "auto.leader.rebalance.enable",
                            "config_operation": "SET",
                            "value": "false",
                        }
                    ],
                }
            ]
        },
    ),
    (
        "CreateDelegationToken",
        {
            "requester": "User:alice",
            "owner_principal_type": None,
            "owner_principal_name": None,
            "renewers": [],
            "max_lifetime_ms": -1,
        },
    ),
]


def run(env: ControllerEnv) -> tuple[list[str], list[dict[str, Any]]]:
    """Every event against one delta: the records (as the log stores them) and the answers."""
    delta = MetadataDelta(MetadataImage(cluster_id=CLUSTER))
    answers = [run_event(delta, api, payload, env) for api, payload in EVENTS]
    return [f"{record.TYPE}:{record.to_json()}" for _, record in delta.replayed], answers


def seeded_env(seed: int) -> ControllerEnv:
    return ControllerEnv(
        now_ms=NOW,
        activated_ms=NOW,
        sessions={},
        random_bytes=random.Random(seed).randbytes,
        static_configs={"delegation.token.secret.key": "s3cret"},  # a node setting
    )


def test_the_same_seed_replays_into_the_same_records() -> None:
    records, answers = run(seeded_env(7))
    assert all(answer.get("error_code", 0) == 0 for answer in answers), answers
    made = [record.split(":", 1)[0] for record in records]
    for record_type in ("TopicRecord", "AccessControlEntryRecord", "DelegationTokenRecord"):
        assert record_type in made
    again_records, again_answers = run(seeded_env(7))
    assert again_records == records
    assert again_answers == answers  # the token's HMAC too: it is keyed on the token id


def test_ids_come_from_the_environment() -> None:
    _, seven = run(seeded_env(7))
    _, eight = run(seeded_env(8))
    assert seven[2]["topics"][0]["topic_id"] != eight[2]["topics"][0]["topic_id"]
    assert seven[5]["token_id"] != eight[5]["token_id"]


def test_the_default_environment_makes_random_version_4_uuids() -> None:
    env = ControllerEnv(now_ms=NOW, activated_ms=NOW, sessions={})
    made = {env.new_uuid() for _ in range(100)}
    assert len(made) == 100
    assert all(uuid.UUID(value).version == 4 and str(uuid.UUID(value)) == value for value in made)
