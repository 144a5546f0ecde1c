"""Canary isolation (KIP-1095) over HTTP on the real database: the answers that show canary
partitions, GET /api/v1/canary, the metric, software_version at registration, the rollout guard
and bad input."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from brokers.models import Broker
from controlplane.models import Cluster, ConfigEntry, MetadataRecord
from replicas.models import Partition
from tests.api.test_replication_metrics import _metric
from tests.conftest import Api, set_config

pytestmark = pytest.mark.django_db

CANARY = "canary-broker"


def log_end() -> int:
    return Cluster.objects.get(pk=1).last_offset


def fleet(register: Callable[..., int], regular: int = 3, canary: int = 3, **kw: Any) -> dict:
    """Regular brokers 0.., canary brokers 100.., unfenced; broker id -> epoch."""
    epochs = {i: register(i, unfence=True, **kw) for i in range(regular)}
    epochs.update(
        {100 + i: register(100 + i, unfence=True, pod=CANARY, **kw) for i in range(canary)}
    )
    return epochs


def create_topic(
    api: Api, token: str, name: str, partitions: int, rf: int, percent: str | None
) -> dict:
    configs = [] if percent is None else [{"name": "percent.canary.partition", "value": percent}]
    status, body = api.post(
        "/api/v1/create-topics",
        {
            "topics": [
                {
                    "name": name,
                    "num_partitions": partitions,
                    "replication_factor": rf,
                    "configs": configs,
                }
            ]
        },
        token=token,
    )
    assert status == 200, body
    return dict(body["topics"][0])


# --- answers ---------------------------------------------------------------------------------


def test_every_answer_that_shows_partitions_says_which_are_canary_and_isolated(
    api, tokens, register
):
    fleet(register)
    answer = create_topic(api, tokens["admin"], "orders", 8, 3, "25")
    assert answer["error_code"] == 0
    assert answer["canary_partitions"] == [0, 4] and answer["canary_isolated"] is True
    status, detail = api.get("/api/v1/topics/orders", token=tokens["admin"])
    assert status == 200
    flags = [
        (p["partition_index"], p["is_canary"], p["canary_isolated"]) for p in detail["partitions"]
    ]
    assert flags == [(i, i % 4 == 0, i % 4 == 0) for i in range(8)]
    for p in detail["partitions"]:
        assert (
            set(p["replica_nodes"]) <= {100, 101, 102}
            if p["is_canary"]
            else set(p["replica_nodes"]) <= {0, 1, 2}
        )
        if p["is_canary"]:
            assert p["leader_id"] in (100, 101, 102)
    status, page = api.get("/api/v1/partitions?topic=orders&canary=true", token=tokens["admin"])
    assert [p["partition_index"] for p in page["results"]] == [0, 4]
    assert all(p["canary_isolated"] for p in page["results"])
    # The brokers' metadata fetch carries them in the records.
    status, fetched = api.get(
        "/internal/v1/metadata?after_offset=-1&max_records=1000", token=tokens["broker"]
    )
    partitions = [r["data"] for r in fetched["records"] if r["type"] == "PartitionRecord"]
    assert [(p["partition_id"], p["is_canary"], p["canary_isolated"]) for p in partitions] == flags
    pods = {
        r["data"]["broker_id"]: r["data"]["pod"]
        for r in fetched["records"]
        if r["type"] == "RegisterBrokerRecord"
    }
    assert pods == {0: "broker", 1: "broker", 2: "broker", 100: CANARY, 101: CANARY, 102: CANARY}


def test_create_partitions_answers_the_new_canary_partitions(api, tokens, register):
    fleet(register)
    create_topic(api, tokens["admin"], "growing", 16, 3, "3.125")
    status, body = api.post(
        "/api/v1/create-partitions",
        {"topics": [{"name": "growing", "count": 64}]},
        token=tokens["admin"],
    )
    assert status == 200
    assert body["results"] == [
        {
            "name": "growing",
            "error_code": 0,
            "error_message": None,
            "canary_partitions": [32],
            "canary_isolated": True,
        }
    ]
    # A manual assignment of a new canary partition off the canary brokers: created, not isolated.
    status, body = api.post(
        "/api/v1/create-partitions",
        {
            "topics": [
                {"name": "growing", "count": 97, "assignments": [{"broker_ids": [0, 1, 100]}] * 33}
            ]
        },
        token=tokens["admin"],
    )
    assert body["results"][0]["canary_partitions"] == [64, 96]
    assert body["results"][0]["canary_isolated"] is False
    assert Partition.objects.get(topic__name="growing", partition_index=64).canary_isolated is False


def test_too_few_canary_brokers_the_topic_is_created_and_says_so_everywhere(
    api, client, tokens, register
):
    fleet(register, regular=4, canary=2)
    answer = create_topic(api, tokens["admin"], "wide", 8, 3, "50")
    assert answer["error_code"] == 0 and answer["canary_isolated"] is False
    assert _metric(client, "kafka_controller_canary_partitions_not_isolated") == 4
    status, summary = api.get("/api/v1/canary", token=tokens["admin"])
    assert status == 200
    assert summary["canary_brokers"] == {"unfenced": [100, 101], "fenced": []}
    assert summary["max_replication_factor"] == 3 and summary["enough_canary_brokers"] is False
    (topic,) = summary["topics"]
    assert topic["name"] == "wide" and topic["canary_partitions"] == [0, 2, 4, 6]
    assert topic["not_isolated_count"] == 4
    assert [p["partition_index"] for p in topic["not_isolated"]] == [0, 2, 4, 6]
    assert summary["canary_partitions_not_isolated"] == 4
    # A third canary broker: new topics are isolated; the old ones keep their placement.
    register(102, unfence=True, pod=CANARY)
    assert create_topic(api, tokens["admin"], "narrow", 4, 3, "50")["canary_isolated"] is True
    assert _metric(client, "kafka_controller_canary_partitions_not_isolated") == 4


def test_get_canary_reads_in_a_constant_number_of_queries(api, tokens, register):
    fleet(register)
    set_config(api, tokens["admin"], "BROKER", "", "percent.canary.partition", "25")
    create_topic(api, tokens["admin"], "t0", 8, 3, None)

    def queries() -> int:
        with CaptureQueriesContext(connection) as captured:
            status, _ = api.get("/api/v1/canary", token=tokens["admin"])
            assert status == 200
        return len(captured.captured_queries)

    few = queries()
    for i in range(1, 6):
        create_topic(api, tokens["admin"], f"t{i}", 16, 3, None)
    assert queries() == few <= 12
    _, many = api.get("/api/v1/canary", token=tokens["admin"])
    assert many["percent_canary_partition"] == 25.0 and many["canary_stride"] == 4
    assert [t["canary_partitions"] for t in many["topics"]] == [[0, 4]] + [[0, 4, 8, 12]] * 5
    _, only = api.get("/api/v1/canary?topic=t3", token=tokens["admin"])
    assert [t["name"] for t in only["topics"]] == ["t3"]


def test_canary_reads_need_describe_on_the_cluster(api, tokens):
    for path in ("/api/v1/canary", "/api/v1/canary/rollout?version=1"):
        status, body = api.get(path, token=tokens["alice"])
        assert status == 403 and body["error"] == "CLUSTER_AUTHORIZATION_FAILED"
        assert api.get(path, token=None)[0] == 401


# --- brokers ---------------------------------------------------------------------------------


def test_software_version_is_kept_with_the_registration_and_shown_with_the_broker(
    api, tokens, register
):
    register(1, software_version="3.9.1-canary")
    register(2)
    _, listing = api.get("/api/v1/brokers", token=tokens["admin"])
    assert {b["broker_id"]: b["software_version"] for b in listing["results"]} == {
        1: "3.9.1-canary",
        2: None,
    }
    assert (
        api.get("/api/v1/brokers/1", token=tokens["admin"])[1]["software_version"] == "3.9.1-canary"
    )
    _status, cluster = api.get("/api/v1/cluster", token=tokens["admin"])
    assert {b["broker_id"]: (b["pod"], b["software_version"]) for b in cluster["brokers"]} == {
        1: ("broker", "3.9.1-canary"),
        2: ("broker", None),
    }
    record = MetadataRecord.objects.filter(record_type="RegisterBrokerRecord", broker_id=1).get()
    assert record.data["software_version"] == "3.9.1-canary"


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("software_version", 3),
        ("software_version", "x" * 129),
        ("software_version", ""),
        ("pod", "zookeeper"),
        ("pod", ""),
    ],
)
def test_bad_registrations_are_400_naming_the_field(api, tokens, cluster_id, field, value):
    from tests.conftest import registration_body

    status, body = api.post(
        "/internal/v1/broker-registration",
        {**registration_body(1, cluster_id), field: value},
        token=tokens["broker"],
    )
    assert status == 400 and body["error"] == "INVALID_REQUEST" and body["error_code"] == 42
    assert field in body["error_message"]
    assert not Broker.objects.exists()


# --- bad percentages -------------------------------------------------------------------------


@pytest.mark.parametrize("value", ["abc", "NaN", "nan", "Infinity", "100.5", "-1", " "])
@pytest.mark.parametrize(("resource_type", "name"), [("BROKER", ""), ("TOPIC", "orders")])
def test_a_bad_percentage_is_invalid_config_on_that_resource_and_writes_nothing(
    api, tokens, register, value, resource_type, name
):
    fleet(register)
    create_topic(api, tokens["admin"], "orders", 1, 1, None)
    before = log_end()
    answer = set_config(
        api, tokens["admin"], resource_type, name, "percent.canary.partition", value
    )
    assert answer["error_code"] == 40 and answer["resource_name"] == name, answer
    assert "percent.canary.partition" in answer["error_message"]
    assert log_end() == before
    assert not ConfigEntry.objects.filter(name="percent.canary.partition").exists()
    answer = create_topic(api, tokens["admin"], "other", 4, 1, value)
    assert answer["error_code"] == 40 and log_end() == before


def test_bake_time_is_a_dynamic_cluster_config(api, tokens):
    assert (
        set_config(api, tokens["admin"], "BROKER", "", "canary.bake.time.ms", "-5")["error_code"]
        == 40
    )
    assert (
        set_config(api, tokens["admin"], "BROKER", "", "canary.bake.time.ms", "60000")["error_code"]
        == 0
    )
    _status, body = api.post(
        "/api/v1/describe-configs",
        {
            "resources": [
                {
                    "resource_type": "BROKER",
                    "resource_name": "",
                    "configuration_keys": ["canary.bake.time.ms"],
                }
            ]
        },
        token=tokens["admin"],
    )
    (config,) = body["results"][0]["configs"]
    assert config["value"] == "60000" and config["config_source"] == "DYNAMIC_DEFAULT_BROKER_CONFIG"


# --- the rollout guard -----------------------------------------------------------------------


def rollout(api: Api, token: str, version: str) -> dict[str, Any]:
    status, body = api.get(f"/api/v1/canary/rollout?version={version}", token=token)
    assert status == 200, body
    return dict(body)


def test_rollout_verdicts_from_the_log(api, tokens, register):
    for broker_id in range(3):
        register(broker_id, unfence=True, software_version="1.0")
    epochs = {b: register(b, unfence=True, pod=CANARY, software_version="1.1") for b in (100, 101)}
    assert rollout(api, tokens["admin"], "2.0")["verdict"] == "NOT_STARTED"
    # The fleet's current version (every non-canary broker runs it): not a rollout (issue 25).
    assert rollout(api, tokens["admin"], "1.0")["verdict"] == "COMPLETE"
    baking = rollout(api, tokens["admin"], "1.1")
    assert baking["verdict"] == "HOLD" and "still baking" in baking["explanation"]
    assert baking["evidence"]["canary"]["brokers"] == [100, 101]
    set_config(api, tokens["admin"], "BROKER", "", "canary.bake.time.ms", "0")
    healthy = rollout(api, tokens["admin"], "1.1")
    assert healthy["verdict"] == "PROCEED", healthy
    # Canary broker 100 reports three replicas offline (KIP-589): roll back.
    create_topic(api, tokens["admin"], "t", 6, 2, "50")
    status, body = api.post(
        "/internal/v1/alter-replica-state",
        {
            "broker_id": 100,
            "broker_epoch": epochs[100],
            "new_state": 1,
            "reason": "disk",
            "topics": [{"name": "t", "partitions": [0, 2, 4]}],
        },
        token=tokens["broker"],
    )
    assert status == 200 and body["error_code"] == 0
    bad = rollout(api, tokens["admin"], "1.1")
    assert bad["verdict"] == "ROLLBACK", bad
    assert bad["evidence"]["canary"]["offline_replicas"] == 3
    assert bad["evidence"]["non_canary"]["offline_replicas"] == 0


def test_rollout_complete_and_bad_queries(api, tokens, register):
    register(1, unfence=True, software_version="2.0")
    register(2, unfence=True, pod=CANARY, software_version="2.0")
    assert rollout(api, tokens["admin"], "2.0")["verdict"] == "COMPLETE"
    for query in ("", "?version=", "?version=" + "v" * 129, "?version=1&surprise=1"):
        status, body = api.get("/api/v1/canary/rollout" + query, token=tokens["admin"])
        assert status == 400 and body["error"] == "INVALID_REQUEST", (query, body)
    status, body = api.get("/api/v1/canary/rollout?version=1", token=tokens["admin"])
    assert json.loads(json.dumps(body))["verdict"] == "NOT_STARTED"


def test_the_guard_counts_canaries_registered_before_a_retention_cut(
    api, tokens, register, monkeypatch
):
    from controlplane.models import Cluster
    from controlplane.runtime import snapshots
    from tests.api.test_metadata_snapshots import KEEP_ONE

    monkeypatch.setattr(snapshots, "RETENTION_FLOORS", [])  # no audit export holds it back
    for broker_id in range(3):
        register(broker_id, unfence=True, software_version="1.0")
    canaries = [register(b, unfence=True, pod=CANARY, software_version="1.1") for b in (100, 101)]
    baking = rollout(api, tokens["admin"], "1.1")
    assert baking["verdict"] == "HOLD" and "still baking" in baking["explanation"]
    snapshots.metadata_snapshot_create(config=KEEP_ONE)
    set_config(api, tokens["admin"], "BROKER", "", "canary.bake.time.ms", "0")
    snapshots.metadata_snapshot_create(config=KEEP_ONE)  # the older snapshot and its log go
    assert Cluster.objects.get(pk=1).log_start_offset > max(canaries)
    healthy = rollout(api, tokens["admin"], "1.1")
    assert healthy["verdict"] == "PROCEED", healthy
    assert healthy["evidence"]["canary"]["brokers"] == [100, 101]
