"""Delegation tokens' pure core: Kafka's DelegationTokenControlManager semantics (create, renew,
expire, sweep), describe's visibility, and replay of the token records."""

from __future__ import annotations

import base64
import hashlib
import hmac
from typing import Any

from controlplane.controller.dispatch import run_event
from controlplane.controller.env import ControllerEnv
from controlplane.controller.errors import Errors
from controlplane.controller.image import MetadataDelta, MetadataImage, replay_log
from controlplane.controller.records import (
    ConfigRecord,
    DelegationTokenRecord,
    Record,
    RemoveDelegationTokenRecord,
    record_from_data,
)
from controlplane.controller.tokens import control as tokens
from controlplane.controller.tokens.describe import describe_tokens

CLUSTER = "cluster-t"
SECRET = "s3cret"
DAY = 86_400_000
WEEK = 7 * DAY


def user(name: str) -> dict[str, str]:
    return {"principal_type": "User", "principal_name": name}


class Cluster:
    """An image, the log that built it, and token events through run_event."""

    def __init__(self, secret: str | None = SECRET) -> None:
        self.image = MetadataImage(cluster_id=CLUSTER)
        self.log: list[Record] = []
        self.now = 1_000_000
        # The key is a node setting (a static broker config), never a record.
        self.static = {} if secret is None else {tokens.SECRET_KEY: secret}

    def apply_records(self, records: list[Record]) -> None:
        delta = MetadataDelta(self.image)
        for record in records:
            delta.replay(record)
        self.log.extend(records)
        self.image.apply(delta)

    def call(self, api: str, requester: str = "User:alice", **payload: Any) -> dict[str, Any]:
        delta = MetadataDelta(self.image)
        response = run_event(delta, api, {"requester": requester, **payload}, self.env())
        self.log.extend(record for _, record in delta.replayed)
        self.image.apply(delta)
        return response

    def env(self) -> ControllerEnv:
        return ControllerEnv(
            now_ms=self.now, activated_ms=0, sessions={}, static_configs=self.static
        )

    def create(self, requester: str = "User:alice", **payload: Any) -> dict[str, Any]:
        payload.setdefault("owner_principal_type", None)
        payload.setdefault("owner_principal_name", None)
        payload.setdefault("renewers", [])
        payload.setdefault("max_lifetime_ms", -1)
        return self.call("CreateDelegationToken", requester, **payload)

    def replayed_equal(self) -> bool:
        round_tripped = [record_from_data(r.TYPE, r.to_data()) for r in self.log]
        assert round_tripped == self.log
        return replay_log(CLUSTER, round_tripped).as_comparable() == self.image.as_comparable()


def test_every_rpc_is_disabled_without_a_secret():
    cluster = Cluster(secret=None)
    assert cluster.create()["error_code"] == Errors.DELEGATION_TOKEN_AUTH_DISABLED
    for api in ("RenewDelegationToken", "ExpireDelegationToken"):
        answer = cluster.call(api, hmac="AAAA")
        assert answer["error_code"] == Errors.DELEGATION_TOKEN_AUTH_DISABLED
    assert cluster.log == []


def test_a_key_an_older_log_set_as_a_record_signs_nothing():
    """The key a record of an older log holds is never read (a read-only config is static
    alone): without the node's setting tokens stay disabled; with it, the setting signs."""
    old = Cluster(secret=None)
    old.apply_records([ConfigRecord("BROKER", "", tokens.SECRET_KEY, "from-the-log")])
    assert old.create()["error_code"] == Errors.DELEGATION_TOKEN_AUTH_DISABLED
    old.static = {tokens.SECRET_KEY: SECRET}
    created = old.create()
    assert created["error_code"] == Errors.NONE
    signed = hmac.new(SECRET.encode(), created["token_id"].encode(), hashlib.sha512).digest()
    assert base64.b64decode(created["hmac"]) == signed


def test_create_defaults_and_hmac():
    cluster = Cluster()
    answer = cluster.create(renewers=[user("bob")])
    assert answer["error_code"] == 0
    assert (answer["principal_type"], answer["principal_name"]) == ("User", "alice")
    assert answer["token_requester_principal_name"] == "alice"
    assert answer["issue_timestamp_ms"] == cluster.now
    assert answer["expiry_timestamp_ms"] == cluster.now + DAY
    assert answer["max_timestamp_ms"] == cluster.now + WEEK
    expected = hmac.new(SECRET.encode(), answer["token_id"].encode(), hashlib.sha512).digest()
    assert base64.b64decode(answer["hmac"]) == expected
    (token,) = cluster.image.delegation_tokens.values()
    assert token.owner == "User:alice" and token.renewers == ("User:bob",)
    assert answer["hmac"] not in repr(cluster.log)
    assert cluster.replayed_equal()


def test_an_empty_owner_is_the_requester_as_kafkas_java_admin_sends_it():
    """Kafka's admin client (kafka-delegation-tokens.sh) sends an empty owner, not a null one;
    Kafka takes a null or empty owner name for the requester."""
    cluster = Cluster()
    answer = cluster.create(owner_principal_type="", owner_principal_name="")
    assert answer["error_code"] == 0, answer
    assert (answer["principal_type"], answer["principal_name"]) == ("User", "alice")
    (token,) = cluster.image.delegation_tokens.values()
    assert token.owner == "User:alice"


def test_create_for_another_owner_and_short_lifetime():
    cluster = Cluster()
    answer = cluster.create(
        "User:admin",
        owner_principal_type="User",
        owner_principal_name="carol",
        max_lifetime_ms=1000,
    )
    assert (answer["principal_name"], answer["token_requester_principal_name"]) == (
        "carol",
        "admin",
    )
    assert answer["max_timestamp_ms"] == answer["expiry_timestamp_ms"] == cluster.now + 1000


def test_invalid_principal_types():
    cluster = Cluster()
    bad_owner = cluster.create(owner_principal_type="Group", owner_principal_name="ops")
    assert bad_owner["error_code"] == Errors.INVALID_PRINCIPAL_TYPE
    bad_renewer = cluster.create(renewers=[{"principal_type": "Group", "principal_name": "ops"}])
    assert bad_renewer["error_code"] == Errors.INVALID_PRINCIPAL_TYPE
    assert cluster.image.delegation_tokens == {}


def test_renew_rules():
    cluster = Cluster()
    created = cluster.create(renewers=[user("bob")])
    mac = created["hmac"]
    cluster.now += 1000
    answer = cluster.call("RenewDelegationToken", "User:bob", hmac=mac, renew_period_ms=5000)
    assert answer == {
        "error_code": 0,
        "error_message": None,
        "expiry_timestamp_ms": cluster.now + 5000,
        # Kafka's response names no token: its id is a note for the audit trail (see handlers)
    }
    default = cluster.call("RenewDelegationToken", hmac=mac, renew_period_ms=-1)
    assert default["expiry_timestamp_ms"] == cluster.now + DAY
    capped = cluster.call("RenewDelegationToken", hmac=mac, renew_period_ms=10 * WEEK)
    assert capped["expiry_timestamp_ms"] == created["max_timestamp_ms"]
    mismatch = cluster.call("RenewDelegationToken", "User:eve", hmac=mac, renew_period_ms=1)
    assert mismatch["error_code"] == Errors.DELEGATION_TOKEN_OWNER_MISMATCH
    for unknown in ("AAAA", "not base64!", base64.b64encode(b"x" * 64).decode()):
        answer = cluster.call("RenewDelegationToken", hmac=unknown, renew_period_ms=1)
        assert answer["error_code"] == Errors.DELEGATION_TOKEN_NOT_FOUND
    cluster.now = created["max_timestamp_ms"] + 1
    expired = cluster.call("RenewDelegationToken", hmac=mac, renew_period_ms=1)
    assert expired["error_code"] == Errors.DELEGATION_TOKEN_EXPIRED
    assert cluster.replayed_equal()


def test_renew_and_expire_note_the_token_for_the_audit_trail_beside_the_response():
    cluster = Cluster()
    created = cluster.create()
    for api, period in (
        ("RenewDelegationToken", "renew_period_ms"),
        ("ExpireDelegationToken", "expiry_time_period_ms"),
    ):
        notes: dict[str, Any] = {}
        delta = MetadataDelta(cluster.image)
        env = cluster.env()
        payload = {"requester": "User:alice", "hmac": created["hmac"], period: 1000}
        response = run_event(delta, api, payload, env, notes=notes)
        cluster.image.apply(delta)
        assert response["error_code"] == 0 and "token_id" not in response
        assert notes == {"token_id": created["token_id"]}
    refused: dict[str, Any] = {}
    env = cluster.env()
    payload = {"requester": "User:alice", "hmac": "AAAA", "renew_period_ms": 1}
    run_event(MetadataDelta(cluster.image), "RenewDelegationToken", payload, env, notes=refused)
    assert refused == {}


def test_expire_later_and_now():
    cluster = Cluster()
    created = cluster.create()
    mac = created["hmac"]
    later = cluster.call("ExpireDelegationToken", hmac=mac, expiry_time_period_ms=100)
    assert later["expiry_timestamp_ms"] == cluster.now + 100
    assert len(cluster.image.delegation_tokens) == 1
    mismatch = cluster.call("ExpireDelegationToken", "User:eve", hmac=mac, expiry_time_period_ms=-1)
    assert mismatch["error_code"] == Errors.DELEGATION_TOKEN_OWNER_MISMATCH
    now = cluster.call("ExpireDelegationToken", hmac=mac, expiry_time_period_ms=-1)
    assert now == {
        "error_code": 0,
        "error_message": None,
        "expiry_timestamp_ms": cluster.now,
    }
    assert cluster.image.delegation_tokens == {}
    assert isinstance(cluster.log[-1], RemoveDelegationTokenRecord)
    gone = cluster.call("ExpireDelegationToken", hmac=mac, expiry_time_period_ms=-1)
    assert gone["error_code"] == Errors.DELEGATION_TOKEN_NOT_FOUND
    assert cluster.replayed_equal()


def test_expired_token_is_refused_then_swept():
    cluster = Cluster()
    short = cluster.create(max_lifetime_ms=10)
    cluster.create()
    cluster.now += 11
    expired = cluster.call("ExpireDelegationToken", hmac=short["hmac"], expiry_time_period_ms=5)
    assert expired["error_code"] == Errors.DELEGATION_TOKEN_EXPIRED
    assert cluster.call("ExpireDelegationTokens") == {"error_code": 0, "removed": 1}
    assert short["token_id"] not in cluster.image.delegation_tokens
    assert len(cluster.image.delegation_tokens) == 1
    assert cluster.call("ExpireDelegationTokens") == {"error_code": 0, "removed": 0}
    assert cluster.replayed_equal()


def test_describe_visibility():
    cluster = Cluster()
    alice = cluster.create(renewers=[user("bob")])
    carol = cluster.create("User:carol")
    live = list(cluster.image.delegation_tokens.values())

    def ids(requester: str, owners: Any = None, is_super: bool = False) -> list[str]:
        answer = describe_tokens(live, owners=owners, requester=requester, is_super=is_super)
        assert all(t["hmac"] is None for t in answer["tokens"])
        return [t["token_id"] for t in answer["tokens"]]

    assert ids("User:alice") == [alice["token_id"]]
    assert ids("User:bob") == [alice["token_id"]]
    assert ids("User:eve") == []
    assert sorted(ids("User:admin", is_super=True)) == sorted(
        [alice["token_id"], carol["token_id"]]
    )
    assert ids("User:admin", owners=[user("carol")], is_super=True) == [carol["token_id"]]
    assert ids("User:admin", owners=[], is_super=True) == []
    (described,) = describe_tokens(live, owners=None, requester="User:bob", is_super=False)[
        "tokens"
    ]
    assert described["renewers"] == [user("bob")]
    assert described["expiry_timestamp"] == alice["expiry_timestamp_ms"]


def test_describe_filters_as_kafka_filter_token():
    """Kafka's DelegationTokenManager.filterToken: an owner named in the request picks the
    tokens it owns or renews; a requester sees its own and renewed tokens, those it may
    DESCRIBE (by id), and those whose owner's tokens it may DESCRIBE_TOKENS (KIP-373)."""
    cluster = Cluster()
    alice = cluster.create(renewers=[user("bob")])["token_id"]
    carol = cluster.create("User:carol")["token_id"]
    live = list(cluster.image.delegation_tokens.values())

    def ids(requester: str, owners: Any = None, **rights: Any) -> list[str]:
        answer = describe_tokens(live, owners=owners, requester=requester, is_super=False, **rights)
        return [t["token_id"] for t in answer["tokens"]]

    assert ids("User:bob", owners=[user("bob")]) == [alice]  # bob renews it
    assert ids("User:bob", owners=[user("carol")]) == []  # carol's: not bob's to see
    assert ids("User:eve", may_describe=lambda token_id: token_id == carol) == [carol]
    of_carol = ids("User:eve", may_describe_tokens_of=lambda owner: owner == "User:carol")
    assert of_carol == [carol]
    assert ids("User:eve", owners=[user("alice")], may_describe_tokens_of=lambda o: True) == [alice]


def test_replay_rules_refuse_bad_records():
    delta = MetadataDelta(MetadataImage(cluster_id=CLUSTER))
    for record in (
        RemoveDelegationTokenRecord("missing"),
        DelegationTokenRecord("t", "User:a", "User:a", (), 0, 10, 11),
    ):
        try:
            delta.replay(record)
        except ValueError:
            continue
        raise AssertionError(f"{record} replayed")
