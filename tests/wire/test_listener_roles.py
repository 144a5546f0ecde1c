"""Listeners have a role (issue 34, point 8): Envelope is served on controller listeners only,
and only to principals holding CLUSTER_ACTION (brokers, super users), as Kafka serves it on the
listeners brokers reach the controller by; client listeners never advertise nor serve it."""

from __future__ import annotations

import datetime

import pytest
from kio.schema.create_topics.v7 import request as create_topics_v7
from kio.schema.envelope.v0 import request as envelope_v0
from kio.schema.errors import ErrorCode

from audit.models import AuditEvent
from controlplane.models import Acl
from controlplane.principals import principal_create
from tests.wire.conftest import RunningListener
from tests.wire.rawclient import RawClient
from tests.wire.test_admin_apis import creation, encode_principal, inner_bytes, inner_response
from tests.wire.test_server import authenticate, served
from wire import metrics
from wire.listeners import CLIENT, CONTROLLER, Listener, parse_listeners

pytestmark = pytest.mark.django_db(transaction=True)

ENVELOPE = 58


def envelope(inner: bytes, principal: str = "User:acl-admin") -> envelope_v0.EnvelopeRequest:
    return envelope_v0.EnvelopeRequest(
        request_data=inner,
        request_principal=encode_principal(principal),
        client_host_address=bytes([10, 1, 2, 3]),
    )


def create_topics(name: str) -> create_topics_v7.CreateTopicsRequest:
    topic = create_topics_v7.CreatableTopic(
        name=name, num_partitions=1, replication_factor=1, assignments=(), configs=()
    )
    return create_topics_v7.CreateTopicsRequest(
        topics=(topic,), timeout=datetime.timedelta(seconds=5), validate_only=False
    )


def forwarded_create_acls(name: str) -> bytes:
    return inner_bytes(30, 3, {"creations": [creation(name)]}, "acl-tool")


def refused(listener: str, reason: str) -> float:
    return float(metrics.CONNECTIONS_REFUSED.labels(listener, reason)._value.get())


def test_envelope_is_served_on_the_controller_listener_to_brokers(
    wire_listener: RunningListener,
) -> None:
    principal_create(name="acl-admin", super_user=True)
    token = principal_create(name="broker-7", broker=True)
    with RawClient(wire_listener.host, wire_listener.controller_port) as client:
        assert authenticate(client, "broker-7", token) == ErrorCode.none
        versions = served(client)
        assert ENVELOPE in versions and 19 in versions  # Envelope; CreateTopics (auto-create)
        # What Kafka's controllers serve (its message specs' "listeners"): the admin writes
        # brokers forward, so a broker's ApiVersions (its intersection with ours) offers them
        # to its clients; Metadata and DescribeClientQuotas are the brokers' alone.
        assert {30, 31, 29, 32, 33, 44, 20, 37, 43, 49, 38, 39, 40, 41} <= set(versions)
        assert 3 not in versions and 48 not in versions
        answer = client.request(envelope(forwarded_create_acls("via-controller")))
    assert answer.error_code == ErrorCode.none
    _, inner = inner_response(30, 3, answer.response_data)
    assert [r.error_code for r in inner.results] == [ErrorCode.none]
    assert Acl.objects.filter(resource_name="via-controller").count() == 1
    event = AuditEvent.objects.filter(api="CreateAcls").latest("pk")
    assert (event.principal, event.forwarding_principal) == ("User:acl-admin", "User:broker-7")


def test_a_client_listener_neither_advertises_nor_serves_envelope(
    wire_listener: RunningListener,
) -> None:
    """A broker principal on the client-facing SASL listener created a topic as User:admin
    (issue 34, point 8): now the Envelope closes that connection unread."""
    principal_create(name="acl-admin", super_user=True)
    token = principal_create(name="broker-8", broker=True)
    before = refused("SASL_PLAINTEXT", "not_served_on_listener")
    with RawClient(wire_listener.host, wire_listener.sasl_port) as client:
        assert authenticate(client, "broker-8", token) == ErrorCode.none
        assert ENVELOPE not in served(client)
        client.send(envelope(forwarded_create_acls("via-client-listener")))
        assert client.read_frame() is None  # closed, as Kafka closes for an API not enabled
    assert refused("SASL_PLAINTEXT", "not_served_on_listener") == before + 1
    assert not Acl.objects.filter(resource_name="via-client-listener").exists()
    assert not AuditEvent.objects.filter(api__in=("CreateAcls", "Envelope")).exists()


def test_the_controller_listener_turns_away_principals_without_cluster_action(
    wire_listener: RunningListener,
) -> None:
    principal_create(name="acl-admin", super_user=True)
    token = principal_create(name="tenant")
    with RawClient(wire_listener.host, wire_listener.controller_port) as client:
        assert authenticate(client, "tenant", token) == ErrorCode.none
        assert ENVELOPE in served(client)  # ApiVersions is the connection's own: answered
        answer = client.request(envelope(forwarded_create_acls("via-tenant")))
        assert answer.error_code == ErrorCode.cluster_authorization_failed
        assert answer.response_data is None
        topics = client.request(create_topics("tenant-topic"))  # the answer names each item
        assert [(t.name, t.error_code) for t in topics.topics] == [
            ("tenant-topic", ErrorCode.cluster_authorization_failed)
        ]
    assert not Acl.objects.filter(resource_name="via-tenant").exists()
    denied = AuditEvent.objects.filter(principal="User:tenant").order_by("pk")
    assert [(e.api, e.outcome, e.error_code) for e in denied] == [
        ("Envelope", "DENIED", 31),
        ("CreateTopics", "DENIED", 31),
    ]
    # a super user may (Kafka's super.users hold every operation)
    admin_token = principal_create(name="operator", super_user=True)
    with RawClient(wire_listener.host, wire_listener.controller_port) as client:
        assert authenticate(client, "operator", admin_token) == ErrorCode.none
        answer = client.request(envelope(forwarded_create_acls("via-operator")))
    assert answer.error_code == ErrorCode.none
    assert Acl.objects.filter(resource_name="via-operator").exists()


def test_a_controller_listener_before_authentication_serves_only_the_session_apis(
    wire_listener: RunningListener,
) -> None:
    with RawClient(wire_listener.host, wire_listener.controller_port) as client:
        assert served(client)
        client.send(envelope(forwarded_create_acls("unauthenticated")))
        assert client.read_frame() is None
    assert not Acl.objects.filter(resource_name="unauthenticated").exists()


@pytest.mark.parametrize(
    ("texts", "protocol_map", "names", "expected"),
    [
        (
            ["PLAINTEXT://:9092", "CONTROLLER://127.0.0.1:9093"],
            None,
            None,
            [("PLAINTEXT", "PLAINTEXT", CLIENT), ("CONTROLLER", "PLAINTEXT", CONTROLLER)],
        ),
        (
            ["CLIENTS://h:1", "BROKERS://h:2"],
            "CLIENTS:SASL_SSL,BROKERS:SASL_PLAINTEXT",
            "BROKERS",
            [("CLIENTS", "SASL_SSL", CLIENT), ("BROKERS", "SASL_PLAINTEXT", CONTROLLER)],
        ),
        (
            ["controller://h:3"],
            "controller:ssl",
            None,
            [("CONTROLLER", "SSL", CONTROLLER)],
        ),
    ],
)
def test_listener_names_map_to_protocols_and_roles(
    texts: list[str],
    protocol_map: str | None,
    names: str | None,
    expected: list[tuple[str, str, str]],
) -> None:
    listeners = parse_listeners(texts, protocol_map, names)
    assert [(x.listener_name, x.protocol, x.role) for x in listeners] == expected


@pytest.mark.parametrize(
    ("texts", "protocol_map", "message"),
    [
        (["CLIENTS://h:1"], None, "no security protocol"),
        (["CLIENTS://h:1"], "CLIENTS:HTTP", "NAME:PROTOCOL"),
        (["CLIENTS://h:1"], "CLIENTS", "NAME:PROTOCOL"),
        (["PLAINTEXT://h:1", "PLAINTEXT://h:2"], None, "named twice"),
    ],
)
def test_listener_configuration_errors_say_what_is_wrong(
    texts: list[str], protocol_map: str | None, message: str
) -> None:
    with pytest.raises(ValueError, match=message):
        parse_listeners(texts, protocol_map)


def test_a_listener_named_by_its_protocol_keeps_its_name_empty() -> None:
    assert Listener.parse("SASL_SSL://h:9") == Listener("SASL_SSL", "h", 9)


def test_a_plaintext_controller_listener_maps_to_a_configured_broker_principal(
    transactional_db: None,
) -> None:
    from wire.runner import ThreadedListener
    from wire.server import Limits, WireServer

    principal_create(name="acl-admin", super_user=True)
    principal_create(name="loopback-brokers", broker=True)
    controller = Listener("PLAINTEXT", "127.0.0.1", 0, name="CONTROLLER", role=CONTROLLER)
    with pytest.raises(ValueError, match="loopback or a private address"):
        WireServer(
            [Listener("PLAINTEXT", "0.0.0.0", 0, name="CONTROLLER", role=CONTROLLER)],
            controller_plaintext_principal="loopback-brokers",
        )
    for mapped, expected in (
        (None, ErrorCode.cluster_authorization_failed),
        ("loopback-brokers", ErrorCode.none),
    ):
        server = WireServer(
            [controller],
            limits=Limits(authentication_timeout_s=5, idle_timeout_s=60, threads=2),
            controller_plaintext_principal=mapped,
        )
        runner = ThreadedListener(server)
        (bound,) = runner.start()
        try:
            with RawClient("127.0.0.1", bound.port) as client:
                answer = client.request(envelope(forwarded_create_acls(f"mapped-{mapped}")))
            assert answer.error_code == expected
        finally:
            runner.stop()
    assert Acl.objects.filter(resource_name="mapped-loopback-brokers").exists()
    assert not Acl.objects.filter(resource_name="mapped-None").exists()
    event = AuditEvent.objects.filter(api="CreateAcls").latest("pk")
    assert event.forwarding_principal == "User:loopback-brokers"
