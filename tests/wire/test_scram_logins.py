"""SCRAM-SHA-256 and SCRAM-SHA-512 logins on the control plane's own Kafka listener (KIP-554's
credentials, RFC 5802 as Kafka's ScramSaslServer does it): stock clients (kafka-python,
confluent-kafka's librdkafka) set and describe SCRAM users over the wire and log in with them;
wrong passwords and unknown users fail alike, delayed and throttled; SaslHandshake v0's raw
tokens; a delegation token over SCRAM's `tokenauth` extension."""

from __future__ import annotations

import base64
import logging
import secrets
import struct
from typing import Any

import pytest
from kio.schema.errors import ErrorCode
from kio.schema.sasl_authenticate.v2 import request as sasl_authenticate_v2
from kio.schema.sasl_handshake.v0 import request as sasl_handshake_v0
from kio.schema.sasl_handshake.v1 import request as sasl_handshake_v1

from audit.models import AuditEvent
from controlplane.controller.scram.formatter import client_proof, salted_password
from security.models import ScramCredential
from tests.api.test_scram_api import upsertion
from tests.conftest import Api
from tests.wire.conftest import RunningListener
from tests.wire.rawclient import RawClient
from tests.wire.test_admin_apis import set_secret
from tests.wire.test_server import API_VERSIONS

pytestmark = pytest.mark.django_db(transaction=True)

SHA256, SHA512 = "SCRAM-SHA-256", "SCRAM-SHA-512"


def add_user(api: Api, admin: str, name: str, password: str, mechanism: str = SHA256) -> None:
    status, answer = api.post(
        "/api/v1/alter-user-scram-credentials",
        {"upsertions": [upsertion(name, password, mechanism)]},
        token=admin,
    )
    assert status == 200 and answer["results"][0]["error_code"] == 0, answer


def kafka_python_admin(listener: RunningListener, mechanism: str, user: str, password: str) -> Any:
    from kafka import KafkaAdminClient

    return KafkaAdminClient(
        bootstrap_servers=listener.sasl_bootstrap,
        security_protocol="SASL_PLAINTEXT",
        sasl_mechanism=mechanism,
        sasl_plain_username=user,
        sasl_plain_password=password,
        request_timeout_ms=10_000,
    )


def confluent_admin(listener: RunningListener, mechanism: str, user: str, password: str) -> Any:
    from confluent_kafka.admin import AdminClient

    return AdminClient(
        {
            "bootstrap.servers": listener.sasl_bootstrap,
            "security.protocol": "SASL_PLAINTEXT",
            "sasl.mechanisms": mechanism,
            "sasl.username": user,
            "sasl.password": password,
        }
    )


def test_kafka_python_sets_describes_and_logs_in_with_scram_users(
    wire_listener: RunningListener, api: Api, tokens: dict[str, str]
) -> None:
    from kafka.admin import ScramMechanism, UserScramCredentialUpsertion
    from kafka.errors import KafkaError

    admin = kafka_python_admin(wire_listener, "PLAIN", "admin", tokens["admin"])
    try:
        admin.alter_user_scram_credentials(
            [
                UserScramCredentialUpsertion("alice", ScramMechanism.SCRAM_SHA_256, "a-pass", 8192),
                UserScramCredentialUpsertion("alice512", ScramMechanism.SCRAM_SHA_512, "b-pass"),
            ]
        )
        described = admin.describe_user_scram_credentials(["alice", "alice512"])
    finally:
        admin.close()
    assert ScramCredential.objects.filter(name="alice", iterations=8192).exists()
    assert "alice" in str(described) and "8192" in str(described), described
    for mechanism, user, password in ((SHA256, "alice", "a-pass"), (SHA512, "alice512", "b-pass")):
        client = kafka_python_admin(wire_listener, mechanism, user, password)
        try:
            assert client.describe_cluster()["cluster_id"]
        finally:
            client.close()
    with pytest.raises(KafkaError):
        kafka_python_admin(wire_listener, SHA256, "alice", "wrong").close()
    audited = AuditEvent.objects.filter(api="AlterUserScramCredentials").get()
    assert (audited.principal, audited.outcome) == ("User:admin", "SUCCESS")


def test_librdkafka_logs_in_with_both_mechanisms_and_is_its_principal(
    wire_listener: RunningListener, api: Api, tokens: dict[str, str]
) -> None:
    from confluent_kafka import KafkaException
    from confluent_kafka.admin import NewTopic

    add_user(api, tokens["admin"], "carol", "c-pass", SHA256)
    add_user(api, tokens["admin"], "dave", "d-pass", SHA512)
    for mechanism, user, password in ((SHA256, "carol", "c-pass"), (SHA512, "dave", "d-pass")):
        client = confluent_admin(wire_listener, mechanism, user, password)
        assert client.list_topics(timeout=10).cluster_id
        # Logged in as User:<user>, whom no ACL lets create a topic.
        future = client.create_topics([NewTopic(f"{user}-topic", 1, 1)])[f"{user}-topic"]
        with pytest.raises(KafkaException, match="TOPIC_AUTHORIZATION_FAILED"):
            future.result(timeout=10)
    refused = AuditEvent.objects.filter(api="CreateTopics", outcome="DENIED")
    assert {e.principal for e in refused} == {"User:carol", "User:dave"}


class ScramClient:
    """A SCRAM client over RawClient: what a stock client sends, step by step."""

    def __init__(self, client: RawClient, mechanism: str) -> None:
        self.client, self.mechanism = client, mechanism
        self.nonce = secrets.token_urlsafe(18)

    def handshake(self) -> None:
        answer = self.client.request(
            sasl_handshake_v1.SaslHandshakeRequest(mechanism=self.mechanism)
        )
        assert answer.error_code == ErrorCode.none

    def authenticate(self, message: bytes) -> Any:
        return self.client.request(sasl_authenticate_v2.SaslAuthenticateRequest(auth_bytes=message))

    def first_message(self, user: str, extensions: str = "") -> bytes:
        self.bare = f"n={user},r={self.nonce}{extensions}"
        return ("n,," + self.bare).encode()

    def final_message(self, server_first: bytes, password: str) -> bytes:
        fields = dict(item.split("=", 1) for item in server_first.decode().split(","))
        salted = salted_password(
            self.mechanism, password, base64.b64decode(fields["s"]), int(fields["i"])
        )
        without_proof = f"c=biws,r={fields['r']}"
        auth = f"{self.bare},{server_first.decode()},{without_proof}".encode()
        proof = base64.b64encode(client_proof(self.mechanism, salted, auth)).decode()
        return f"{without_proof},p={proof}".encode()


def test_wrong_passwords_and_unknown_users_fail_alike_and_are_logged_by_name(
    wire_listener: RunningListener,
    api: Api,
    tokens: dict[str, str],
    caplog: pytest.LogCaptureFixture,
) -> None:
    add_user(api, tokens["admin"], "erin", "e-pass")
    caplog.set_level(logging.WARNING, logger="controlplane.security")
    messages = []
    for user, password in (("erin", "guess"), ("nobody", "guess")):
        with RawClient(wire_listener.host, wire_listener.sasl_port) as raw:
            scram = ScramClient(raw, SHA256)
            scram.handshake()
            first = scram.authenticate(scram.first_message(user))
            assert first.error_code == ErrorCode.none  # an unknown user is not told apart here
            assert first.auth_bytes.startswith(f"r={scram.nonce}".encode())
            final = scram.authenticate(scram.final_message(first.auth_bytes, password))
            assert final.error_code == ErrorCode.sasl_authentication_failed
            messages.append(final.error_message)
            assert raw.closed_by_server()
    assert messages[0] == messages[1] and "SCRAM-SHA-256" in messages[0]
    lines = [r.getMessage() for r in caplog.records if "failed authentication" in r.getMessage()]
    assert ["'erin'" in lines[0], "'nobody'" in lines[1]] == [True, True]
    assert not any("guess" in line for line in lines)


@pytest.mark.parametrize(
    "message",
    [
        b"y,,n=erin,r=abc",  # channel binding asked for: refused
        b"n,a=someone-else,n=erin,r=abc",  # authorizing as another user
        b"n,,n=er=2Xin,r=abc",  # a bad saslname escape
        b"n,,n=erin",  # no nonce
        b"\xff\xfe",
        b"n,,n=erin,r=" + b"a" * 5000,  # too long
    ],
)
def test_a_malformed_first_message_fails_the_login(
    wire_listener: RunningListener, api: Api, tokens: dict[str, str], message: bytes
) -> None:
    add_user(api, tokens["admin"], "erin", "e-pass")
    with RawClient(wire_listener.host, wire_listener.sasl_port) as raw:
        scram = ScramClient(raw, SHA256)
        scram.handshake()
        answer = scram.authenticate(message)
        assert answer.error_code == ErrorCode.sasl_authentication_failed
        assert raw.closed_by_server()


def test_a_final_message_with_another_nonce_or_channel_binding_fails(
    wire_listener: RunningListener, api: Api, tokens: dict[str, str]
) -> None:
    add_user(api, tokens["admin"], "erin", "e-pass")
    for tamper in (lambda m: m.replace(b"r=", b"r=x"), lambda m: m.replace(b"c=biws", b"c=eSws")):
        with RawClient(wire_listener.host, wire_listener.sasl_port) as raw:
            scram = ScramClient(raw, SHA256)
            scram.handshake()
            first = scram.authenticate(scram.first_message("erin"))
            final = scram.authenticate(tamper(scram.final_message(first.auth_bytes, "e-pass")))
            assert final.error_code == ErrorCode.sasl_authentication_failed


def test_the_server_signature_proves_the_server_and_the_principal_is_the_user(
    wire_listener: RunningListener, api: Api, tokens: dict[str, str]
) -> None:
    from controlplane.controller.scram.formatter import hmac_of, server_key

    add_user(api, tokens["admin"], "frank", "f-pass", SHA512)
    with RawClient(wire_listener.host, wire_listener.sasl_port) as raw:
        scram = ScramClient(raw, SHA512)
        scram.handshake()
        first = scram.authenticate(scram.first_message("frank"))
        final_message = scram.final_message(first.auth_bytes, "f-pass")
        final = scram.authenticate(final_message)
        assert final.error_code == ErrorCode.none
        fields = dict(item.split("=", 1) for item in first.auth_bytes.decode().split(","))
        salted = salted_password(SHA512, "f-pass", base64.b64decode(fields["s"]), int(fields["i"]))
        without_proof = final_message.decode().rsplit(",p=", 1)[0]
        auth = f"{scram.bare},{first.auth_bytes.decode()},{without_proof}".encode()
        expected = hmac_of(SHA512, server_key(SHA512, salted), auth)
        assert final.auth_bytes == b"v=" + base64.b64encode(expected)
        assert raw.request(API_VERSIONS).error_code == ErrorCode.none  # authenticated now


def test_sasl_handshake_v0_carries_the_scram_rounds_in_raw_frames(
    wire_listener: RunningListener, api: Api, tokens: dict[str, str]
) -> None:
    add_user(api, tokens["admin"], "gina", "g-pass")
    with RawClient(wire_listener.host, wire_listener.sasl_port) as raw:
        answer = raw.request(sasl_handshake_v0.SaslHandshakeRequest(mechanism=SHA256))
        assert answer.error_code == ErrorCode.none
        scram = ScramClient(raw, SHA256)
        first = scram.first_message("gina")
        raw.sock.sendall(struct.pack(">i", len(first)) + first)
        server_first = raw.read_frame()
        assert server_first is not None and server_first.startswith(b"r=")
        final = scram.final_message(server_first, "g-pass")
        raw.sock.sendall(struct.pack(">i", len(final)) + final)
        server_final = raw.read_frame()
        assert server_final is not None and server_final.startswith(b"v=")
        assert raw.request(API_VERSIONS).error_code == ErrorCode.none


def test_a_delegation_token_logs_in_over_scram_tokenauth_as_its_owner(
    wire_listener: RunningListener, api: Api, tokens: dict[str, str], settings: Any
) -> None:
    set_secret(settings)
    status, created = api.post(
        "/api/v1/create-delegation-token",
        {"owner_principal_type": None, "owner_principal_name": None, "renewers": []},
        token=tokens["alice"],
    )
    assert status == 200 and created["error_code"] == 0, created
    with RawClient(wire_listener.host, wire_listener.sasl_port) as raw:
        scram = ScramClient(raw, SHA512)
        scram.handshake()
        first = scram.authenticate(scram.first_message(created["token_id"], ",tokenauth=true"))
        assert first.error_code == ErrorCode.none
        final = scram.authenticate(scram.final_message(first.auth_bytes, created["hmac"]))
        assert final.error_code == ErrorCode.none
        # The token's owner, token-authenticated: it may not create tokens (Kafka's rule).
        from tests.wire.test_security import create_token_request

        refused = raw.request(create_token_request())
        assert refused.error_code == ErrorCode.delegation_token_request_not_allowed
    with RawClient(wire_listener.host, wire_listener.sasl_port) as raw:
        scram = ScramClient(raw, SHA512)
        scram.handshake()
        first = scram.authenticate(scram.first_message(created["token_id"], ",tokenauth=true"))
        final = scram.authenticate(scram.final_message(first.auth_bytes, "bm90IHRoZSBobWFj"))
        assert final.error_code == ErrorCode.sasl_authentication_failed


def test_refusals_on_the_wire_are_kafkas_per_user_and_top_level_answers(
    api: Api, tokens: dict[str, str]
) -> None:
    from tests.wire.test_admin_apis import wire_call
    from wire.apis import load_all

    load_all()
    upsertions = [
        {"name": n, "mechanism": 1, "iterations": 8192, "salt": b"s", "salted_password": b"p" * 32}
        for n in ("mallory", "trudy")
    ]
    body = {"deletions": [{"name": "mallory", "mechanism": 2}], "upsertions": upsertions}
    refused = wire_call(51, 0, body, tokens["alice"])
    assert [(r.user, int(r.error_code)) for r in refused.results] == [
        ("mallory", 31),
        ("trudy", 31),
    ]
    described = wire_call(50, 0, {"users": None}, tokens["alice"])
    assert int(described.error_code) == 31 and described.results == ()
    answered = wire_call(51, 0, body, tokens["admin"])
    assert [(r.user, int(r.error_code)) for r in answered.results] == [
        ("mallory", 92),  # named twice: DUPLICATE_RESOURCE
        ("trudy", 0),
    ]
    unknown = wire_call(
        51, 0, {"deletions": [{"name": "trudy", "mechanism": 7}], "upsertions": []}, tokens["admin"]
    )
    assert [(r.user, int(r.error_code)) for r in unknown.results] == [("trudy", 33)]
    (trudy,) = wire_call(50, 0, {"users": [{"name": "trudy"}]}, tokens["admin"]).results
    assert [(int(i.mechanism), int(i.iterations)) for i in trudy.credential_infos] == [(1, 8192)]
    assert not ScramCredential.objects.filter(name="mallory").exists()
