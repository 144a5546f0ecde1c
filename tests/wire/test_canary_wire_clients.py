"""The canary clients' wire mode (KIP-1095): canary partitions learnt from the listener's
Metadata v12 (the leaders' Pod tag) over a real socket equal those the REST directory gives."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from kafka.protocol.metadata import MetadataResponse as StockMetadataResponse

from canary.clients import CanaryDirectory, CanaryPartitioner
from canary.clients.wire import (
    CANARY_BROKER_POD,
    PodMetadataResponse,
    WireCanaryDirectory,
    WireConnection,
    WireError,
)
from tests.api.test_canary_api import create_topic
from tests.conftest import Api

pytestmark = pytest.mark.django_db(transaction=True)


def fleet(register: Callable[..., int]) -> None:
    """Regular brokers 0..2, canary brokers 100..102, unfenced."""
    for broker_id in (0, 1, 2):
        register(broker_id, unfence=True)
    for broker_id in (100, 101, 102):
        register(broker_id, unfence=True, pod=CANARY_BROKER_POD)


def rest_directory(api: Api, token: str) -> CanaryDirectory:
    """The REST directory, its GET /api/v1/canary answered by the REST API in this process."""

    def fetch(topic: str) -> Any:
        status, body = api.get(f"/api/v1/canary?topic={topic}", token=token)
        assert status == 200, body
        return body

    return CanaryDirectory("http://controlplane", token, fetch=fetch)


def test_canary_partitions_over_the_wire_equal_the_rest_directorys(
    api, tokens, register, wire_listener
):
    fleet(register)
    assert create_topic(api, tokens["admin"], "orders", 8, 3, "25")["error_code"] == 0
    assert create_topic(api, tokens["admin"], "plain", 4, 2, None)["error_code"] == 0
    rest = rest_directory(api, tokens["admin"])
    wire = WireCanaryDirectory(wire_listener.sasl_bootstrap, sasl_plain=("admin", tokens["admin"]))
    assert rest.canary_partitions("orders", 8) == frozenset({0, 4})
    for topic in ("orders", "plain", "missing"):
        assert wire.canary_partitions(topic) == rest.canary_partitions(topic), topic
    assert wire.fetches == 3  # one Metadata exchange per topic learnt, then the cache

    # The partitioner takes either directory: a canary producer's records stay on 0 and 4.
    partitioner = CanaryPartitioner(wire, canary=True)
    assert partitioner.pool("orders", list(range(8))) == [0, 4]
    assert CanaryPartitioner(wire, canary=False).pool("orders", list(range(8))) == [
        1,
        2,
        3,
        5,
        6,
        7,
    ]


def test_the_pod_tag_reaches_the_socket_and_a_stock_parser_skips_it(
    api, tokens, register, wire_listener
):
    fleet(register)
    create_topic(api, tokens["admin"], "orders", 8, 3, "25")
    with WireConnection(wire_listener.host, wire_listener.sasl_port) as connection:
        connection.sasl_plain("admin", tokens["admin"])
        answer: PodMetadataResponse = connection.metadata(["orders"])
    pods = {b.node_id: b.pod for b in answer.brokers}
    assert pods == {0: "broker", 1: "broker", 2: "broker"} | {
        b: CANARY_BROKER_POD for b in (100, 101, 102)
    }
    assert {(b.host, b.port) for b in answer.brokers} == {
        (wire_listener.host, wire_listener.sasl_port)
    }
    # The same bytes, read by kafka-python's own parser (which knows no Pod).
    from wire.apis.clients.nodes import encode

    stock = StockMetadataResponse.decode(encode(answer), version=12)
    assert sorted(b.node_id for b in stock.brokers) == sorted(pods)


def test_a_principal_that_may_not_describe_learns_nothing(api, tokens, register, wire_listener):
    fleet(register)
    create_topic(api, tokens["admin"], "orders", 8, 3, "25")
    with WireConnection(wire_listener.host, wire_listener.sasl_port) as connection:
        connection.sasl_plain("alice", tokens["alice"])
        answer = connection.metadata(["orders"])
    assert answer.topics[0].error_code.name == "topic_authorization_failed"
    wire = WireCanaryDirectory(wire_listener.sasl_bootstrap, sasl_plain=("alice", tokens["alice"]))
    assert wire.canary_partitions("orders") == frozenset()  # availability over isolation
    with pytest.raises(WireError):
        WireCanaryDirectory(
            wire_listener.sasl_bootstrap, sasl_plain=("alice", "not-the-token")
        )._wire_fetch("orders")
