"""Client quotas' pure core: Kafka's ClientQuotaControlManager(Test) semantics, describe, the
effective quota's precedence, and replay of ClientQuotaRecords."""

from __future__ import annotations

from typing import Any

import pytest

from controlplane.controller.dispatch import run_event
from controlplane.controller.env import ControllerEnv
from controlplane.controller.errors import ApiError, Errors
from controlplane.controller.image import MetadataDelta, MetadataImage, replay_log
from controlplane.controller.quotas import control as quotas
from controlplane.controller.quotas.describe import (
    describe_client_quotas,
    effective_quotas,
    precedence,
)
from controlplane.controller.records import ClientQuotaRecord, Record, record_from_data

CLUSTER = "cluster-q"
ENV = ControllerEnv(now_ms=0, activated_ms=0, sessions={})


def ent(**names: str | None) -> list[dict[str, Any]]:
    """user=..., client_id=..., ip=... -> the wire entity."""
    return [{"entity_type": t.replace("_", "-"), "entity_name": n} for t, n in names.items()]


def op(key: str, value: float = 0.0, remove: bool = False) -> dict[str, Any]:
    return {"key": key, "value": value, "remove": remove}


class Cluster:
    """An image, the log that built it, and AlterClientQuotas through run_event."""

    def __init__(self) -> None:
        self.image = MetadataImage(cluster_id=CLUSTER)
        self.log: list[Record] = []

    def alter(self, *entries: dict[str, Any], validate_only: bool = False) -> list[dict[str, Any]]:
        delta = MetadataDelta(self.image)
        response = run_event(
            delta,
            "AlterClientQuotas",
            {"entries": list(entries), "validate_only": validate_only},
            ENV,
        )
        self.log.extend(record for _, record in delta.replayed)
        self.image.apply(delta)
        return list(response["entries"])

    def set(self, entity: list[dict[str, Any]], *ops: dict[str, Any]) -> dict[str, Any]:
        (answer,) = self.alter({"entity": entity, "ops": list(ops)})
        return answer

    def quotas(self, **names: str | None) -> dict[str, float]:
        entity = quotas.entity_of((t.replace("_", "-"), n) for t, n in names.items())
        return self.image.client_quotas.get(entity, {})

    def replayed_equal(self) -> bool:
        round_tripped = [record_from_data(r.TYPE, r.to_data()) for r in self.log]
        assert round_tripped == self.log
        return replay_log(CLUSTER, round_tripped).as_comparable() == self.image.as_comparable()


@pytest.fixture
def cluster() -> Cluster:
    return Cluster()


def error_of(answer: dict[str, Any]) -> Errors:
    return Errors(answer["error_code"])


# --- valid entities (ClientQuotaControlManagerTest.testEntityTypes) -------------------------


@pytest.mark.parametrize(
    "entity",
    [
        ent(user="user-1"),
        ent(user=None),
        ent(client_id="client-id-1"),
        ent(client_id=None),
        ent(user="user-1", client_id="client-id-1"),
        ent(user="user-1", client_id=None),
        ent(user=None, client_id="client-id-1"),
        ent(user=None, client_id=None),
        ent(client_id="client-id-1", user="user-1"),  # order does not matter
    ],
)
def test_user_and_client_entities(cluster: Cluster, entity: list[dict[str, Any]]) -> None:
    answer = cluster.set(
        entity,
        op("producer_byte_rate", 10000),
        op("consumer_byte_rate", 20000),
        op("request_percentage", 12.5),
        op("controller_mutation_rate", 0.5),
    )
    assert error_of(answer) is Errors.NONE, answer
    assert answer["entity"] == entity
    names = {e["entity_type"].replace("-", "_"): e["entity_name"] for e in entity}
    assert cluster.quotas(**names) == {
        "producer_byte_rate": 10000.0,
        "consumer_byte_rate": 20000.0,
        "request_percentage": 12.5,
        "controller_mutation_rate": 0.5,
    }
    assert len(cluster.log) == 4
    assert cluster.replayed_equal()


@pytest.mark.parametrize(
    "ip", ["127.0.0.1", "192.168.0.254", "::1", "2001:db8::8a2e:370:7334", None]
)
def test_ip_entities(cluster: Cluster, ip: str | None) -> None:
    answer = cluster.set(ent(ip=ip), op("connection_creation_rate", 100))
    assert error_of(answer) is Errors.NONE, answer
    assert cluster.quotas(ip=ip) == {"connection_creation_rate": 100.0}
    assert cluster.replayed_equal()


# --- invalid entities (testInvalidEntityTypes, configKeysForEntityType) ----------------------


@pytest.mark.parametrize(
    ("entity", "message"),
    [
        ([], "Invalid empty client quota entity"),
        (
            [
                {"entity_type": "user", "entity_name": "a"},
                {"entity_type": "user", "entity_name": "b"},
            ],
            "duplicate entity entry user",
        ),
        ([{"entity_type": "foobar", "entity_name": "a"}], "Unhandled client quota entity type"),
        ([{"entity_type": "", "entity_name": "a"}], "Unhandled client quota entity type"),
        (ent(user=""), "Empty user not supported"),
        (ent(client_id=""), "Empty client-id not supported"),
        (ent(user="u", ip="1.2.3.4"), "IP entity should not be combined"),
        (ent(client_id="c", ip="1.2.3.4"), "IP entity should not be combined"),
        (ent(user=None, client_id=None, ip=None), "IP entity should not be combined"),
        (ent(ip="not-an-ip"), "not a valid IP"),
        (ent(ip="256.1.1.1"), "not a valid IP"),
        (ent(ip="example.com"), "not a valid IP"),
    ],
)
def test_invalid_entities(cluster: Cluster, entity: list[dict[str, Any]], message: str) -> None:
    key = (
        "connection_creation_rate"
        if any(e["entity_type"] == "ip" for e in entity)
        else ("producer_byte_rate")
    )
    answer = cluster.set(entity, op(key, 100))
    assert error_of(answer) is Errors.INVALID_REQUEST
    assert message in answer["error_message"]
    assert answer["entity"] == entity
    assert cluster.log == [] and cluster.image.client_quotas == {}


# --- keys and values (validateQuotaKeyValue) ----------------------------------------------


@pytest.mark.parametrize(
    ("entity", "ops", "message"),
    [
        (ent(user="u"), [op("connection_creation_rate", 10)], "Unknown quota key"),
        (ent(client_id="c"), [op("connection_creation_rate", 10)], "Unknown quota key"),
        (ent(user="u", client_id="c"), [op("foo_bar", 10)], "Unknown quota key"),
        (ent(ip="1.2.3.4"), [op("producer_byte_rate", 10)], "Unknown quota key"),
        (ent(ip=None), [op("request_percentage", 10)], "Unknown quota key"),
        (ent(user="u"), [op("producer_byte_rate", 0)], "must be greater than 0"),
        (ent(user="u"), [op("consumer_byte_rate", -1)], "must be greater than 0"),
        (ent(user="u"), [op("request_percentage", -0.5)], "must be greater than 0"),
        (ent(user="u"), [op("controller_mutation_rate", 0.0)], "must be greater than 0"),
        (ent(ip="::1"), [op("connection_creation_rate", 0)], "must be greater than 0"),
        (ent(user="u"), [op("producer_byte_rate", 1024.5)], "must be an integer"),
        (ent(client_id="c"), [op("consumer_byte_rate", 0.1)], "must be an integer"),
        (ent(ip="1.2.3.4"), [op("connection_creation_rate", 10.25)], "must be an integer"),
        (ent(ip="1.2.3.4"), [op("connection_creation_rate", 2.0**31)], "too large for an INT"),
        (ent(user="u"), [op("producer_byte_rate", 1e19)], "too large for a LONG"),
        (ent(user="u"), [op("producer_byte_rate", float("inf"))], "finite"),
        (
            ent(user="u"),
            [op("producer_byte_rate", 10), op("producer_byte_rate", 20)],
            "Duplicate quota key producer_byte_rate",
        ),
        (
            ent(user="u"),
            [op("producer_byte_rate", 10), op("producer_byte_rate", remove=True)],
            "Duplicate quota key",
        ),
    ],
)
def test_invalid_keys_and_values(
    cluster: Cluster, entity: list[dict[str, Any]], ops: list[dict[str, Any]], message: str
) -> None:
    answer = cluster.set(entity, *ops)
    assert error_of(answer) is Errors.INVALID_REQUEST, answer
    assert message in answer["error_message"]
    assert cluster.log == []


def test_one_invalid_op_refuses_the_whole_entity(cluster: Cluster) -> None:
    answer = cluster.set(
        ent(user="u"), op("producer_byte_rate", 100), op("consumer_byte_rate", 1.5)
    )
    assert error_of(answer) is Errors.INVALID_REQUEST
    assert cluster.log == [] and cluster.quotas(user="u") == {}


def test_fractional_keys_and_integral_floats(cluster: Cluster) -> None:
    answer = cluster.set(
        ent(user="u"),
        op("request_percentage", 0.001),
        op("controller_mutation_rate", 12.75),
        op("producer_byte_rate", 2048.0),  # an integral double is fine
        op("consumer_byte_rate", 2**62),
    )
    assert error_of(answer) is Errors.NONE, answer
    assert cluster.quotas(user="u") == {
        "request_percentage": 0.001,
        "controller_mutation_rate": 12.75,
        "producer_byte_rate": 2048.0,
        "consumer_byte_rate": float(2**62),
    }


def test_entries_answer_independently(cluster: Cluster) -> None:
    answers = cluster.alter(
        {"entity": ent(user="good"), "ops": [op("producer_byte_rate", 100)]},
        {"entity": ent(user="bad"), "ops": [op("producer_byte_rate", -5)]},
        {"entity": ent(ip="10.0.0.1"), "ops": [op("connection_creation_rate", 7)]},
    )
    assert [error_of(a) for a in answers] == [Errors.NONE, Errors.INVALID_REQUEST, Errors.NONE]
    assert [a["entity"] for a in answers] == [ent(user="good"), ent(user="bad"), ent(ip="10.0.0.1")]
    assert cluster.quotas(user="good") == {"producer_byte_rate": 100.0}
    assert cluster.quotas(user="bad") == {}
    assert cluster.quotas(ip="10.0.0.1") == {"connection_creation_rate": 7.0}
    assert cluster.replayed_equal()


# --- alter, remove, no-ops (testAlterAndRemove) ---------------------------------------------


def test_alter_and_remove(cluster: Cluster) -> None:
    user = ent(user="user-1")
    answer = cluster.set(user, op("producer_byte_rate", 10000), op("request_percentage", 50))
    assert error_of(answer) is Errors.NONE
    assert error_of(cluster.set(user, op("producer_byte_rate", 10000))) is Errors.NONE
    assert len(cluster.log) == 2  # the same value again writes nothing
    cluster.set(user, op("producer_byte_rate", 20000))
    assert cluster.quotas(user="user-1") == {
        "producer_byte_rate": 20000.0,
        "request_percentage": 50.0,
    }
    assert cluster.log[-1] == ClientQuotaRecord(
        entity=(("user", "user-1"),), key="producer_byte_rate", value=20000.0
    )
    answer = cluster.set(user, op("producer_byte_rate", remove=True))
    assert error_of(answer) is Errors.NONE
    assert cluster.log[-1] == ClientQuotaRecord(
        entity=(("user", "user-1"),), key="producer_byte_rate", remove=True
    )
    assert cluster.quotas(user="user-1") == {"request_percentage": 50.0}
    cluster.set(user, op("request_percentage", remove=True))
    assert cluster.image.client_quotas == {}  # an entity with no keys left is gone
    assert len(cluster.log) == 5
    assert cluster.replayed_equal()


def test_removes_that_change_nothing_write_nothing(cluster: Cluster) -> None:
    cluster.set(ent(user="u"), op("producer_byte_rate", 100))
    before = len(cluster.log)
    answer = cluster.set(
        ent(user="u"),
        op("consumer_byte_rate", remove=True),  # not set
        op("producer_byte_rate", 100),  # unchanged
    )
    assert error_of(answer) is Errors.NONE
    # As Kafka: a remove op is not checked against the keys; an unknown key removes nothing.
    assert error_of(cluster.set(ent(user="u"), op("no_such_key", remove=True))) is Errors.NONE
    assert error_of(cluster.set(ent(user="nobody"), op("producer_byte_rate", remove=True))) is (
        Errors.NONE
    )
    assert len(cluster.log) == before


def test_remove_ignores_value(cluster: Cluster) -> None:
    cluster.set(ent(client_id=None), op("consumer_byte_rate", 500))
    answer = cluster.set(ent(client_id=None), op("consumer_byte_rate", -3, remove=True))
    assert error_of(answer) is Errors.NONE
    assert cluster.image.client_quotas == {}


def test_validate_only_writes_nothing(cluster: Cluster) -> None:
    answers = cluster.alter(
        {"entity": ent(user="u"), "ops": [op("producer_byte_rate", 100)]},
        {"entity": ent(user="u", ip="1.1.1.1"), "ops": [op("producer_byte_rate", 100)]},
        validate_only=True,
    )
    assert [error_of(a) for a in answers] == [Errors.NONE, Errors.INVALID_REQUEST]
    assert cluster.log == [] and cluster.image.client_quotas == {}


def test_later_entries_see_earlier_ones(cluster: Cluster) -> None:
    answers = cluster.alter(
        {"entity": ent(user="u"), "ops": [op("producer_byte_rate", 100)]},
        {"entity": ent(user="u"), "ops": [op("producer_byte_rate", 100)]},  # no-op now
        {"entity": ent(user="u"), "ops": [op("producer_byte_rate", remove=True)]},
    )
    assert all(error_of(a) is Errors.NONE for a in answers)
    assert [r.remove for r in cluster.log] == [False, True]
    assert cluster.image.client_quotas == {}
    assert cluster.replayed_equal()


# --- records and replay ---------------------------------------------------------------


def test_record_round_trip_through_json() -> None:
    record = ClientQuotaRecord(
        entity=(("client-id", None), ("user", "alice")), key="request_percentage", value=12.5
    )
    data = record.to_data()
    assert data == {
        "entity": [["client-id", None], ["user", "alice"]],
        "key": "request_percentage",
        "value": 12.5,
        "remove": False,
    }
    assert record_from_data("ClientQuotaRecord", data) == record
    # An integral value comes back from JSON as an int; it replays as the same float.
    data["value"] = 12
    assert record_from_data("ClientQuotaRecord", data).value == 12.0


@pytest.mark.parametrize(
    "entity", [(), (("user", "b"), ("user", "a")), (("user", "a"), ("client-id", "c"))]
)
def test_replay_refuses_non_canonical_entities(entity: Any) -> None:
    delta = MetadataDelta(MetadataImage(cluster_id=CLUSTER))
    with pytest.raises(ValueError, match="invalid entity"):
        delta.replay(ClientQuotaRecord(entity=entity, key="producer_byte_rate", value=1.0))


def test_delta_reads_through_its_changes(cluster: Cluster) -> None:
    cluster.set(ent(user="u"), op("producer_byte_rate", 100), op("consumer_byte_rate", 200))
    delta = MetadataDelta(cluster.image)
    entity = (("user", "u"),)
    delta.replay(ClientQuotaRecord(entity=entity, key="producer_byte_rate", remove=True))
    delta.replay(ClientQuotaRecord(entity=entity, key="request_percentage", value=5.0))
    assert delta.client_quotas_of(entity) == {
        "consumer_byte_rate": 200.0,
        "request_percentage": 5.0,
    }
    assert cluster.image.client_quotas[entity] == {
        "producer_byte_rate": 100.0,
        "consumer_byte_rate": 200.0,
    }


def test_random_sequences_replay_to_the_image(cluster: Cluster) -> None:
    import random

    rng = random.Random(7)
    entities = [
        ent(user="a"),
        ent(user=None),
        ent(client_id="c"),
        ent(user="a", client_id=None),
        ent(ip="10.1.1.1"),
        ent(ip=None),
    ]
    for _ in range(300):
        entity = rng.choice(entities)
        keys = (
            ["connection_creation_rate"]
            if entity[0]["entity_type"] == "ip"
            else list(quotas.CLIENT_KEYS)
        )
        key = rng.choice(keys)
        if rng.random() < 0.3:
            cluster.set(entity, op(key, remove=True))
        else:
            cluster.set(entity, op(key, rng.choice([1, 2, 3, 1024])))
    assert cluster.replayed_equal()


# --- describe (ClientQuotasImage.describe) ------------------------------------------------


QUOTAS = {
    (("user", "alice"),): {"producer_byte_rate": 1.0},
    (("user", None),): {"producer_byte_rate": 2.0},
    (("client-id", "app"), ("user", "alice")): {"consumer_byte_rate": 3.0},
    (("client-id", None), ("user", "alice")): {"consumer_byte_rate": 4.0},
    (("client-id", "app"),): {"request_percentage": 5.0},
    (("client-id", None),): {"request_percentage": 6.0},
    (("ip", "1.2.3.4"),): {"connection_creation_rate": 7.0},
    (("ip", None),): {"connection_creation_rate": 8.0},
}


def described(components: list[dict[str, Any]], strict: bool = False) -> list[Any]:
    answer = describe_client_quotas(QUOTAS, components, strict)
    assert answer["error_code"] == 0
    return [
        tuple((e["entity_type"], e["entity_name"]) for e in entry["entity"])
        for entry in answer["entries"]
    ]


def comp(entity_type: str, match_type: str, match: str | None = None) -> dict[str, Any]:
    return {"entity_type": entity_type, "match_type": match_type, "match": match}


def test_describe_exact_default_any() -> None:
    assert described([comp("user", "EXACT", "alice")], strict=True) == [(("user", "alice"),)]
    assert set(described([comp("user", "EXACT", "alice")])) == {
        (("user", "alice"),),
        (("client-id", None), ("user", "alice")),
        (("client-id", "app"), ("user", "alice")),
    }
    assert described([comp("user", "DEFAULT")]) == [(("user", None),)]
    assert len(described([comp("user", "ANY")])) == 4
    assert len(described([comp("user", "ANY")], strict=True)) == 2
    assert set(described([comp("user", "ANY"), comp("client-id", "DEFAULT")], strict=True)) == {
        (("client-id", None), ("user", "alice")),
    }
    assert set(described([comp("client-id", "EXACT", "app")])) == {
        (("client-id", "app"), ("user", "alice")),
        (("client-id", "app"),),
    }
    assert described([comp("ip", "ANY")]) == [(("ip", None),), (("ip", "1.2.3.4"),)]
    assert described([comp("ip", "EXACT", "1.2.3.4")]) == [(("ip", "1.2.3.4"),)]
    assert len(described([])) == len(QUOTAS)  # non-strict, no components: everything
    assert described([], strict=True) == []


def test_describe_values() -> None:
    answer = describe_client_quotas(QUOTAS, [comp("user", "DEFAULT")], True)
    assert answer["entries"] == [
        {
            "entity": [{"entity_type": "user", "entity_name": None}],
            "values": [{"key": "producer_byte_rate", "value": 2.0}],
        }
    ]


@pytest.mark.parametrize(
    ("components", "error", "message"),
    [
        ([comp("user", "EXACT")], Errors.INVALID_REQUEST, "set match string to null"),
        ([comp("user", "DEFAULT", "x")], Errors.INVALID_REQUEST, "also specified a match"),
        ([comp("user", "ANY", "x")], Errors.INVALID_REQUEST, "also specified a match"),
        ([comp("user", "ANY"), comp("user", "DEFAULT")], Errors.INVALID_REQUEST, "more than once"),
        ([comp("", "ANY")], Errors.INVALID_REQUEST, "empty entity type"),
        ([comp("group", "ANY")], Errors.UNSUPPORTED_VERSION, "Unsupported entity type"),
        ([comp("ip", "ANY"), comp("user", "ANY")], Errors.INVALID_REQUEST, "IP filter"),
        ([comp("client-id", "DEFAULT"), comp("ip", "ANY")], Errors.INVALID_REQUEST, "IP filter"),
    ],
)
def test_describe_invalid_filters(
    components: list[dict[str, Any]], error: Errors, message: str
) -> None:
    with pytest.raises(ApiError) as raised:
        describe_client_quotas(QUOTAS, components, False)
    assert raised.value.error is error
    assert message in (raised.value.message or "")


# --- effective quotas (ClientQuotaManager precedence) ---------------------------------------


def _effective(table: dict[Any, dict[str, float]], user: str, client_id: str) -> dict[str, Any]:
    answer = effective_quotas(table, user, client_id)
    return {v["key"]: (v["value"], v["entity"]) for v in answer["values"]}


def test_effective_precedence_order() -> None:
    order = precedence("u", "c")
    assert order == [
        (("client-id", "c"), ("user", "u")),
        (("client-id", None), ("user", "u")),
        (("user", "u"),),
        (("client-id", "c"), ("user", None)),
        (("client-id", None), ("user", None)),
        (("user", None),),
        (("client-id", "c"),),
        (("client-id", None),),
    ]
    # Knock entities out most specific first: each time the next one in order wins.
    table = {entity: {"producer_byte_rate": float(rank)} for rank, entity in enumerate(order)}
    for rank, entity in enumerate(order):
        value, source = _effective(table, "u", "c")["producer_byte_rate"]
        assert value == float(rank)
        assert source == quotas.entity_data(entity)
        del table[entity]
    assert _effective(table, "u", "c") == {}


def test_effective_resolves_each_key_separately() -> None:
    table = {
        (("user", "u"),): {"producer_byte_rate": 1.0},
        (("client-id", None),): {"producer_byte_rate": 9.0, "consumer_byte_rate": 2.0},
        (("client-id", "c"), ("user", None)): {"request_percentage": 3.0},
        (("client-id", "other"), ("user", "u")): {"consumer_byte_rate": 100.0},
        (("ip", None),): {"connection_creation_rate": 5.0},
    }
    assert _effective(table, "u", "c") == {
        "producer_byte_rate": (1.0, [{"entity_type": "user", "entity_name": "u"}]),
        "consumer_byte_rate": (2.0, [{"entity_type": "client-id", "entity_name": None}]),
        "request_percentage": (
            3.0,
            [
                {"entity_type": "client-id", "entity_name": "c"},
                {"entity_type": "user", "entity_name": None},
            ],
        ),
    }
