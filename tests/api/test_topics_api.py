"""CreateTopics, DeleteTopics, CreatePartitions and the topic / partition reads over HTTP."""

from __future__ import annotations

import uuid
from collections import Counter
from typing import Any

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from controlplane.models import Cluster, MetadataRecord
from replicas.models import Partition, Topic
from tests.conftest import heartbeat_body

pytestmark = pytest.mark.django_db

CREATE = "/api/v1/create-topics"
DELETE = "/api/v1/delete-topics"
PARTITIONS = "/api/v1/create-partitions"


def log_end() -> int:
    return Cluster.objects.get(pk=1).last_offset


def create(api: Any, token: str, *topics: dict[str, Any], **extra: Any) -> list[dict[str, Any]]:
    status, body = api.post(CREATE, {"topics": list(topics), **extra}, token=token)
    assert status == 200, body
    assert body["throttle_time_ms"] == 0
    return list(body["topics"])


def topic_detail(api: Any, token: str, name: str) -> dict[str, Any]:
    status, body = api.get(f"/api/v1/topics/{name}", token=token)
    assert status == 200, body
    return dict(body)


def errors(answers: list[dict[str, Any]]) -> list[str | None]:
    return [a.get("error") or _name(a["error_code"]) for a in answers]


def _name(code: int) -> str:
    from controlplane.controller.errors import Errors

    return Errors(code).name


@pytest.fixture
def brokers(register: Any) -> list[int]:
    """Brokers 0..2 on racks rack-0..rack-2, unfenced."""
    return [register(b, unfence=True) for b in range(3)]


# --- CreateTopics ------------------------------------------------------------------------


def test_create_topics_batch(api, tokens, brokers):
    answers = create(
        api,
        tokens["admin"],
        {"name": "orders", "num_partitions": 3, "replication_factor": 2},
        {"name": "manual", "assignments": [{"partition_index": 0, "broker_ids": [2, 0]}]},
        {"name": "bad/name"},
        {"name": "twice"},
        {"name": "twice"},
    )
    assert [a["name"] for a in answers] == ["orders", "manual", "bad/name", "twice", "twice"]
    assert errors(answers) == [
        "NONE",
        "NONE",
        "INVALID_TOPIC_EXCEPTION",
        "INVALID_REQUEST",
        "INVALID_REQUEST",
    ]
    orders, manual = answers[0], answers[1]
    assert (orders["num_partitions"], orders["replication_factor"]) == (3, 2)
    assert (manual["num_partitions"], manual["replication_factor"]) == (1, 2)
    for answer in (orders, manual):
        assert str(uuid.UUID(answer["topic_id"])) == answer["topic_id"]
    assert answers[2]["topic_id"] is None and answers[2]["num_partitions"] == -1

    status, listing = api.get("/api/v1/topics", token=tokens["admin"])
    assert status == 200 and listing["count"] == 2
    assert [(t["name"], t["topic_id"], t["partition_count"]) for t in listing["results"]] == [
        ("manual", manual["topic_id"], 1),
        ("orders", orders["topic_id"], 3),
    ]
    detail = topic_detail(api, tokens["admin"], "manual")
    assert detail["partitions"] == [
        {
            "partition_index": 0,
            "leader_id": 2,
            "leader_epoch": 0,
            "partition_epoch": 0,
            "replica_nodes": [2, 0],
            "isr_nodes": [2, 0],
            "offline_replicas": [],
            "directories": [],
            "adding_replicas": [],
            "removing_replicas": [],
            "is_canary": False,
            "canary_isolated": False,
        }
    ]
    records = list(
        MetadataRecord.objects.filter(record_type__in=["TopicRecord", "PartitionRecord"])
        .order_by("offset")
        .values_list("record_type", "principal")
    )
    assert records == [("TopicRecord", "User:admin")] + [("PartitionRecord", "User:admin")] * 3 + [
        ("TopicRecord", "User:admin"),
        ("PartitionRecord", "User:admin"),
    ]


def test_a_retried_request_id_creates_the_topic_once(api, tokens, brokers):
    headers = {"X-Request-ID": "create-orders-1"}
    body = {"topics": [{"name": "orders", "num_partitions": 2, "replication_factor": 2}]}
    status, first = api.post(CREATE, body, token=tokens["admin"], headers=headers)
    assert status == 200 and first["topics"][0]["error_code"] == 0
    end = log_end()
    status, again = api.post(CREATE, body, token=tokens["admin"], headers=headers)
    assert status == 200 and again == first  # not TOPIC_ALREADY_EXISTS: the same answer
    assert log_end() == end
    assert MetadataRecord.objects.filter(request_id="create-orders-1").count() == 3
    status, other = api.post(CREATE, body, token=tokens["admin"])
    assert other["topics"][0]["error_code"] == 36


def test_validate_only_answers_but_writes_nothing(api, tokens, brokers):
    end = log_end()
    (answer,) = create(
        api,
        tokens["admin"],
        {"name": "dry", "num_partitions": 4, "replication_factor": 3},
        validate_only=True,
    )
    assert answer["error_code"] == 0 and answer["num_partitions"] == 4
    assert log_end() == end and not Topic.objects.exists()
    (refused,) = create(
        api, tokens["admin"], {"name": "dry", "replication_factor": 4}, validate_only=True
    )
    assert refused["error_code"] == 38 and log_end() == end


def test_defaults_come_from_num_partitions_and_default_replication_factor(
    api, tokens, brokers, settings
):
    settings.CP_STATIC_BROKER_CONFIGS = {
        **settings.CP_STATIC_BROKER_CONFIGS,
        "num.partitions": "5",
        "default.replication.factor": "3",
    }
    (answer,) = create(api, tokens["admin"], {"name": "defaults"})
    assert (answer["num_partitions"], answer["replication_factor"]) == (5, 3)
    (partial,) = create(api, tokens["admin"], {"name": "half", "num_partitions": 2})
    assert (partial["num_partitions"], partial["replication_factor"]) == (2, 3)
    assert Partition.objects.filter(topic__name="defaults").count() == 5


def test_replication_factor_errors_use_kafkas_messages(api, tokens, register):
    (none,) = create(api, tokens["admin"], {"name": "t", "replication_factor": 1})
    assert none["error_code"] == 38
    assert none["error_message"] == "All brokers are currently fenced."
    epochs = [register(broker_id) for broker_id in range(3)]  # registered, still fenced
    (fenced,) = create(api, tokens["admin"], {"name": "t", "replication_factor": 1})
    assert fenced["error_message"] == "All brokers are currently fenced."
    _, beat = api.post(
        "/internal/v1/broker-heartbeat",
        heartbeat_body(0, epochs[0], log_end()),
        token=tokens["broker"],
    )
    assert beat["is_fenced"] is False
    (too_many,) = create(api, tokens["admin"], {"name": "t", "replication_factor": 4})
    assert too_many["error_code"] == 38
    assert too_many["error_message"] == (
        "The target replication factor of 4 cannot be reached because only 3 broker(s) are "
        "registered."
    )
    (bad_rf,) = create(api, tokens["admin"], {"name": "t", "replication_factor": 0})
    assert bad_rf["error_code"] == 38
    assert not Topic.objects.exists()
    (ok,) = create(api, tokens["admin"], {"name": "t", "replication_factor": 3})
    assert ok["error_code"] == 0  # one unfenced leader, two fenced followers
    (p,) = topic_detail(api, tokens["admin"], "t")["partitions"]
    assert p["leader_id"] == 0 and p["isr_nodes"] == [0] and sorted(p["replica_nodes"]) == [0, 1, 2]


@pytest.mark.parametrize(
    ("topic", "error_code"),
    [
        ({"name": ""}, 17),
        ({"name": "."}, 17),
        ({"name": "x" * 250}, 17),
        ({"name": "sp ace"}, 17),
        ({"name": "t", "num_partitions": 0}, 37),
        ({"name": "t", "num_partitions": -3}, 37),
        ({"name": "t", "num_partitions": 1, "replication_factor": -7}, 38),
        ({"name": "t", "assignments": [{"partition_index": 0, "broker_ids": [0, 0]}]}, 39),
        ({"name": "t", "assignments": [{"partition_index": 0, "broker_ids": [0, 42]}]}, 39),
        ({"name": "t", "assignments": [{"partition_index": 3, "broker_ids": [0]}]}, 39),
        ({"name": "t", "assignments": [{"partition_index": 0, "broker_ids": []}]}, 39),
        (
            {
                "name": "t",
                "assignments": [
                    {"partition_index": 0, "broker_ids": [0, 1]},
                    {"partition_index": 1, "broker_ids": [2]},
                ],
            },
            39,
        ),
        (
            {
                "name": "t",
                "replication_factor": 2,
                "assignments": [{"partition_index": 0, "broker_ids": [0, 1]}],
            },
            42,
        ),
        ({"name": "t", "configs": [{"name": "nope.config", "value": "1"}]}, 40),
        ({"name": "t", "configs": [{"name": "min.insync.replicas", "value": "0"}]}, 40),
    ],
)
def test_create_topic_item_errors_write_nothing(api, tokens, brokers, topic, error_code):
    end = log_end()
    (answer,) = create(api, tokens["admin"], topic)
    assert answer["error_code"] == error_code, answer
    assert answer["error_message"]
    assert log_end() == end and not Topic.objects.exists()


def test_an_existing_topic_is_refused(api, tokens, brokers):
    create(api, tokens["admin"], {"name": "dup"})
    end = log_end()
    (again,) = create(api, tokens["admin"], {"name": "dup"})
    assert again["error_code"] == 36 and again["error_message"] == "Topic 'dup' already exists."
    assert log_end() == end


def test_topic_configs_are_stored_with_the_topic(api, tokens, brokers):
    (answer,) = create(
        api,
        tokens["admin"],
        {"name": "cfg", "configs": [{"name": "retention.ms", "value": "1000"}]},
    )
    described = {c["name"]: c for c in answer["configs"]}
    assert described["retention.ms"]["value"] == "1000"
    assert described["retention.ms"]["config_source"] == "DYNAMIC_TOPIC_CONFIG"
    record = MetadataRecord.objects.get(record_type="ConfigRecord")
    assert record.data == {
        "resource_type": "TOPIC",
        "resource_name": "cfg",
        "name": "retention.ms",
        "value": "1000",
    }


# --- placement ----------------------------------------------------------------------------


def test_placement_over_racks_with_balanced_unfenced_leaders(api, tokens, register):
    for broker_id in range(6):  # racks rack-0, rack-1, rack-2, two brokers each
        register(broker_id, unfence=True)
    (answer,) = create(
        api, tokens["admin"], {"name": "wide", "num_partitions": 12, "replication_factor": 3}
    )
    assert answer["error_code"] == 0
    leaders: Counter[int] = Counter()
    for p in topic_detail(api, tokens["admin"], "wide")["partitions"]:
        replicas = p["replica_nodes"]
        assert len(set(replicas)) == 3
        assert len({f"rack-{r % 3}" for r in replicas}) == 3  # one replica per rack
        assert p["leader_id"] == replicas[0] and p["isr_nodes"] == replicas
        leaders[p["leader_id"]] += 1
    assert set(leaders) == set(range(6)) and set(leaders.values()) == {2}


def test_placement_puts_unfenced_brokers_first_and_never_leads_on_a_fenced_one(
    api, tokens, register
):
    for broker_id in range(2):
        register(broker_id, unfence=True)
    for broker_id in range(2, 4):
        register(broker_id)  # fenced
    (answer,) = create(
        api, tokens["admin"], {"name": "mixed", "num_partitions": 6, "replication_factor": 3}
    )
    assert answer["error_code"] == 0
    leaders: Counter[int] = Counter()
    for p in topic_detail(api, tokens["admin"], "mixed")["partitions"]:
        assert p["leader_id"] in (0, 1)
        assert set(p["replica_nodes"][:2]) == {0, 1}  # unfenced first
        assert set(p["isr_nodes"]) == {0, 1}  # fenced replicas are not in sync
        leaders[p["leader_id"]] += 1
    assert leaders == Counter({0: 3, 1: 3})
    (only_unfenced,) = create(
        api, tokens["admin"], {"name": "two", "num_partitions": 4, "replication_factor": 2}
    )
    assert only_unfenced["error_code"] == 0
    for p in topic_detail(api, tokens["admin"], "two")["partitions"]:
        assert set(p["replica_nodes"]) == {0, 1}


# --- DeleteTopics ---------------------------------------------------------------------------


def test_delete_topics_by_name_and_by_id(api, tokens, brokers):
    foo, bar = create(api, tokens["admin"], {"name": "foo"}, {"name": "bar"})
    unknown_id = str(uuid.uuid4())
    status, body = api.post(
        DELETE,
        {
            "topic_names": ["foo", "missing"],
            "topics": [{"topic_id": bar["topic_id"]}, {"topic_id": unknown_id}],
        },
        token=tokens["admin"],
    )
    assert status == 200
    outcome = {(r["name"], r["topic_id"]): r["error_code"] for r in body["responses"]}
    assert outcome == {
        ("foo", foo["topic_id"]): 0,
        ("missing", None): 3,
        ("bar", bar["topic_id"]): 0,
        (None, unknown_id): 100,
    }
    assert not Topic.objects.exists() and not Partition.objects.exists()
    assert api.get("/api/v1/topics/foo", token=tokens["admin"])[0] == 404
    assert MetadataRecord.objects.filter(record_type="RemoveTopicRecord").count() == 2
    (again,) = create(api, tokens["admin"], {"name": "foo"})
    assert again["error_code"] == 0 and again["topic_id"] != foo["topic_id"]


def test_delete_topics_duplicates_are_invalid(api, tokens, brokers):
    create(api, tokens["admin"], {"name": "foo"})
    end = log_end()
    _, body = api.post(DELETE, {"topic_names": ["foo", "foo"]}, token=tokens["admin"])
    assert [r["error_code"] for r in body["responses"]] == [42, 42]
    assert log_end() == end and Topic.objects.filter(name="foo").exists()


def test_a_topic_named_by_name_and_by_id_is_deleted_once(api, tokens, brokers):
    (foo,) = create(api, tokens["admin"], {"name": "foo"})
    status, body = api.post(
        DELETE,
        {"topic_names": ["foo"], "topics": [{"topic_id": foo["topic_id"]}]},
        token=tokens["admin"],
    )
    assert status == 200, body  # was a 500: two RemoveTopicRecords for one topic
    assert [r["error_code"] for r in body["responses"]] == [0, 0]
    assert MetadataRecord.objects.filter(record_type="RemoveTopicRecord").count() == 1
    assert not Topic.objects.exists()


# --- CreatePartitions -----------------------------------------------------------------------


def test_create_partitions_and_its_errors(api, tokens, brokers):
    create(api, tokens["admin"], {"name": "grow", "num_partitions": 2, "replication_factor": 2})
    end = log_end()

    def grow(*topics: dict[str, Any], validate_only: bool = False) -> list[tuple[str, int]]:
        status, body = api.post(
            PARTITIONS,
            {"topics": list(topics), "validate_only": validate_only},
            token=tokens["admin"],
        )
        assert status == 200 and body["throttle_time_ms"] == 0
        return [(r["name"], r["error_code"]) for r in body["results"]]

    assert grow({"name": "grow", "count": 4}, validate_only=True) == [("grow", 0)]
    assert grow({"name": "nope", "count": 4}) == [("nope", 3)]
    assert grow({"name": "grow", "count": 1}) == [("grow", 37)]
    assert grow({"name": "grow", "count": 2}) == [("grow", 37)]
    assert grow({"name": "grow", "count": 3, "assignments": [{"broker_ids": [0]}]}) == [
        ("grow", 39)
    ]
    assert grow({"name": "grow", "count": 4, "assignments": [{"broker_ids": [0, 1]}]}) == [
        ("grow", 39)
    ]
    assert grow({"name": "grow", "count": 3, "assignments": [{"broker_ids": [0, 9]}]}) == [
        ("grow", 39)
    ]
    assert log_end() == end

    assert grow({"name": "grow", "count": 3, "assignments": [{"broker_ids": [2, 1]}]}) == [
        ("grow", 0)
    ]
    assert grow({"name": "grow", "count": 5}) == [("grow", 0)]
    detail = topic_detail(api, tokens["admin"], "grow")
    assert detail["partition_count"] == 5
    assert detail["partitions"][2]["replica_nodes"] == [2, 1]
    for p in detail["partitions"]:
        assert len(set(p["replica_nodes"])) == 2 and p["isr_nodes"] == p["replica_nodes"]


# --- authorization --------------------------------------------------------------------------


def test_topic_writes_need_authorization_per_topic(api, tokens, brokers):
    end = log_end()
    (denied,) = create(api, tokens["alice"], {"name": "alices"})
    assert denied["error_code"] == 29 and denied["topic_id"] is None
    _, body = api.post(DELETE, {"topic_names": ["x"]}, token=tokens["alice"])
    assert body["responses"][0]["error_code"] == 29
    _, body = api.post(PARTITIONS, {"topics": [{"name": "x", "count": 3}]}, token=tokens["alice"])
    assert body["results"][0]["error_code"] == 29
    assert log_end() == end
    for path, payload in (
        (CREATE, {"topics": [{"name": "b"}]}),
        (DELETE, {"topic_names": ["b"]}),
        (PARTITIONS, {"topics": [{"name": "b", "count": 2}]}),
    ):
        status, refused = api.post(path, payload, token=tokens["broker"])
        assert status == 403 and refused["error"] == "CLUSTER_AUTHORIZATION_FAILED"
        status, _ = api.post(path, payload, token=None)
        assert status == 401
    assert log_end() == end


def test_reads_show_only_described_topics(api, tokens, brokers):
    create(api, tokens["admin"], {"name": "secret"})
    status, listing = api.get("/api/v1/topics", token=tokens["alice"])
    assert status == 200 and listing["count"] == 0
    status, body = api.get("/api/v1/topics/secret", token=tokens["alice"])
    assert status == 403 and body["error_code"] == 29


# --- malformed bodies -----------------------------------------------------------------------

HUGE = 2**70

MALFORMED: list[tuple[str, Any]] = [
    (CREATE, {}),
    (CREATE, []),
    (CREATE, "topics"),
    (CREATE, None),
    (CREATE, {"topics": "foo"}),
    (CREATE, {"topics": [{"name": "x"}], "extra": 1}),
    (CREATE, {"topics": [{"name": 5}]}),
    (CREATE, {"topics": [{"name": "x", "num_partitions": "3"}]}),
    (CREATE, {"topics": [{"name": "x", "num_partitions": 1.5}]}),
    (CREATE, {"topics": [{"name": "x", "num_partitions": True}]}),
    (CREATE, {"topics": [{"name": "x", "num_partitions": HUGE}]}),
    (CREATE, {"topics": [{"name": "x", "replication_factor": 40000}]}),
    (CREATE, {"topics": [{"name": "x", "unknown": 1}]}),
    (CREATE, {"topics": [{"name": "x", "assignments": [{"partition_index": 0}]}]}),
    (
        CREATE,
        {"topics": [{"name": "x", "assignments": [{"partition_index": 0, "broker_ids": [-1]}]}]},
    ),
    (
        CREATE,
        {"topics": [{"name": "x", "assignments": [{"partition_index": 0, "broker_ids": ["1"]}]}]},
    ),
    (
        CREATE,
        {"topics": [{"name": "x", "assignments": [{"partition_index": HUGE, "broker_ids": [0]}]}]},
    ),
    (CREATE, {"topics": [{"name": "x", "configs": [{"name": "retention.ms", "value": 5}]}]}),
    (CREATE, {"topics": [{"name": "x", "configs": "retention.ms=5"}]}),
    (CREATE, {"topics": [{"name": "x"}], "validate_only": "yes"}),
    (CREATE, {"topics": [{"name": "x"}], "timeout_ms": -1}),
    (CREATE, {"topics": [None]}),
    (DELETE, {"topic_names": "foo"}),
    (DELETE, {"topic_names": [1]}),
    (DELETE, {"topics": [{}]}),
    (DELETE, {"topics": [{"name": None, "topic_id": None}]}),
    (DELETE, {"topic_names": ["foo"], "bogus": True}),
    (PARTITIONS, {"topics": [{"name": "foo"}]}),
    (PARTITIONS, {"topics": [{"name": "foo", "count": "3"}]}),
    (PARTITIONS, {"topics": [{"name": "foo", "count": HUGE}]}),
    (PARTITIONS, {"topics": [{"name": "foo", "count": 3, "assignments": [{"broker_ids": 1}]}]}),
    (PARTITIONS, {"topics": [{"name": "foo", "count": 3, "extra": []}]}),
    (PARTITIONS, {"topics": {"name": "foo"}}),
]


@pytest.mark.parametrize(("path", "body"), MALFORMED)
def test_malformed_bodies_are_400_and_write_nothing(api, tokens, brokers, path, body):
    create(api, tokens["admin"], {"name": "foo"})
    end = log_end()
    status, answer = api.post(path, body, token=tokens["admin"])
    assert status == 400, answer
    assert answer["error_code"] == 42 and answer["error"] == "INVALID_REQUEST"
    assert answer["error_message"]
    assert log_end() == end


@pytest.mark.parametrize("raw", ["{", "", "[1,", "not json", '{"topics": [}'])
def test_unparseable_json_is_400(api, tokens, raw):
    status, answer = api.post(CREATE, raw, token=tokens["admin"], raw=True)
    assert status == 400 and answer["error_code"] == 42


# --- the reads' query counts ----------------------------------------------------------------


def _queries(api: Any, token: str, path: str) -> int:
    api.get(path, token=token)  # warm caches (ACLs, principal)
    with CaptureQueriesContext(connection) as captured:
        status, _ = api.get(path, token=token)
    assert status == 200
    return len(captured)


@pytest.mark.parametrize(
    "path",
    [
        "/api/v1/topics",
        "/api/v1/partitions",
        "/api/v1/partitions?broker=1",
        "/api/v1/partitions?leaderless=true",
        "/api/v1/topics/t0",
    ],
)
def test_reads_cost_the_same_whatever_the_number_of_topics(api, tokens, brokers, path):
    create(api, tokens["admin"], {"name": "t0", "num_partitions": 2, "replication_factor": 2})
    few = _queries(api, tokens["admin"], path)
    create(
        api,
        tokens["admin"],
        *({"name": f"t{i}", "num_partitions": 4, "replication_factor": 2} for i in range(1, 15)),
    )
    assert Partition.objects.count() == 58
    many = _queries(api, tokens["admin"], path)
    assert many == few, path
    assert many <= 6


def test_partition_filters(api, tokens, brokers):
    create(
        api,
        tokens["admin"],
        {
            "name": "f",
            "assignments": [
                {"partition_index": 0, "broker_ids": [0, 1]},
                {"partition_index": 1, "broker_ids": [1, 2]},
                {"partition_index": 2, "broker_ids": [2, 0]},
            ],
        },
    )

    def indexes(query: str) -> list[int]:
        status, body = api.get(f"/api/v1/partitions?{query}", token=tokens["admin"])
        assert status == 200, body
        return [p["partition_index"] for p in body["results"]]

    assert indexes("broker=0") == [0, 2]
    assert indexes("topic=f&broker=2") == [1, 2]
    assert indexes("leaderless=true") == []
    assert indexes("leaderless=false") == [0, 1, 2]
    assert indexes("offline=true") == []
    assert indexes("leader=1") == [1]
