"""SCRAM's pure core (KIP-554): RFC 7677's test vector, Kafka's ScramControlManager rules as
properties over any request (one answer per user, a refused user writes nothing, the log replays
into the state the answers say), DescribeUserScramCredentials, the records' Kafka twins, their
redaction, and the listener's exchange against any password, salt and iteration count."""

from __future__ import annotations

import base64
import string
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from controlplane.controller.config_schema import redact_record_data
from controlplane.controller.dispatch import run_event
from controlplane.controller.env import ControllerEnv
from controlplane.controller.errors import Errors
from controlplane.controller.image import MetadataDelta, MetadataImage, image_from_records
from controlplane.controller.kraft.frames import decode_metadata_value
from controlplane.controller.kraft.twins import kafka_record
from controlplane.controller.records import FeatureLevelRecord, Record, record_from_data
from controlplane.controller.scram import control
from controlplane.controller.scram.describe import describe_credentials
from controlplane.controller.scram.formatter import (
    MAX_ITERATIONS,
    MIN_ITERATIONS,
    ScramCredential,
    b64,
    client_proof,
    credential_from_password,
    credential_from_salted_password,
    proof_matches,
    salted_password,
    server_signature,
)
from controlplane.controller.scram_records import (
    RemoveUserScramCredentialRecord,
    UserScramCredentialRecord,
)
from wire.sasl import SaslFailed
from wire.scram import ClientFirst, ScramExchange, ScramIdentity, parse_client_first, sasl_name

SHA256, SHA512 = "SCRAM-SHA-256", "SCRAM-SHA-512"
CLUSTER = "cluster-scram"


# --- the arithmetic ----------------------------------------------------------------------------


def test_rfc_7677s_exchange() -> None:
    """RFC 7677, section 3: user "user", password "pencil"."""
    salt = base64.b64decode("W22ZaJ0SNY7soEsUEjb6gQ==")
    nonce = "rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0"
    auth = (
        f"n=user,r=rOprNGfwEbeRWgbNEkqO,r={nonce},s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096,"
        f"c=biws,r={nonce}"
    ).encode()
    salted = salted_password(SHA256, "pencil", salt, 4096)
    proof = client_proof(SHA256, salted, auth)
    assert b64(proof) == "dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ="
    credential = credential_from_salted_password(SHA256, salt, salted, 4096)
    assert proof_matches(SHA256, credential, auth, proof)
    assert b64(server_signature(SHA256, credential, auth)) == (
        "6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4="
    )
    assert not proof_matches(SHA256, credential, auth + b"x", proof)
    assert not proof_matches(SHA256, credential, auth, proof[:-1])


# --- AlterUserScramCredentials as records ------------------------------------------------------


class Cluster:
    def __init__(self, metadata_version: int = 25) -> None:
        self.image = MetadataImage(cluster_id=CLUSTER)
        self.log: list[Record] = []
        self.apply([FeatureLevelRecord("metadata.version", metadata_version)])

    def apply(self, records: list[Record]) -> None:
        delta = MetadataDelta(self.image)
        for record in records:
            delta.replay(record)
        self.log.extend(records)
        self.image.apply(delta)

    def alter(self, **payload: Any) -> dict[str, Any]:
        delta = MetadataDelta(self.image)
        env = ControllerEnv(now_ms=0, activated_ms=0, sessions={})
        body = {
            "deletions": payload.get("deletions", []),
            "upsertions": [control.controller_upsertion(u) for u in payload.get("upsertions", [])],
        }
        response = run_event(delta, "AlterUserScramCredentials", body, env)
        self.log.extend(record for _, record in delta.replayed)
        self.image.apply(delta)
        return response


def upsert(name: str, mechanism: str = SHA256, iterations: int = 4096) -> dict[str, Any]:
    salt = name.encode() + b"-salt"
    return {
        "name": name,
        "mechanism": mechanism,
        "iterations": iterations,
        "salt": b64(salt),
        "salted_password": b64(b"p" * 32),
    }


def codes(response: dict[str, Any]) -> dict[str, str]:
    return {r["user"]: r["error"] for r in response["results"]}


def test_a_credential_keeps_the_keys_kafka_derives_never_the_salted_password() -> None:
    cluster = Cluster()
    assert codes(cluster.alter(upsertions=[upsert("alice", SHA512, 8192)])) == {"alice": "NONE"}
    (record,) = cluster.log[1:]
    assert isinstance(record, UserScramCredentialRecord)
    expected = credential_from_salted_password(SHA512, b"alice-salt", b"p" * 32, 8192)
    assert (record.salt, record.stored_key, record.server_key) == (
        b64(expected.salt),
        b64(expected.stored_key),
        b64(expected.server_key),
    )
    assert b64(b"p" * 32) not in record.to_json()
    assert "(redacted)" in repr(record) and record.stored_key not in repr(record)


def test_below_metadata_version_3_5_iv2_every_user_is_unsupported_version() -> None:
    cluster = Cluster(metadata_version=10)
    answer = cluster.alter(
        upsertions=[upsert("alice")], deletions=[{"name": "b", "mechanism": SHA256}]
    )
    assert codes(answer) == {"b": "UNSUPPORTED_VERSION", "alice": "UNSUPPORTED_VERSION"}
    assert cluster.log[1:] == []


NAMES = st.sampled_from(["alice", "bob", "carol", ""])
MECHANISMS = st.sampled_from([SHA256, SHA512, "SCRAM-SHA-1", "UNKNOWN"])
ITERATIONS = st.sampled_from([MIN_ITERATIONS - 1, MIN_ITERATIONS, 8192, MAX_ITERATIONS, 16385])
DELETIONS = st.lists(st.fixed_dictionaries({"name": NAMES, "mechanism": MECHANISMS}), max_size=4)
UPSERTIONS = st.lists(st.builds(upsert, NAMES, MECHANISMS, ITERATIONS), max_size=4)


def expected_error(
    name: str, item: dict[str, Any], deletion: bool, named: int, present: set[tuple[str, str]]
) -> str:
    """Kafka's ScramControlManager, written out: what one user's entry is answered."""
    if named > 1:
        return "DUPLICATE_RESOURCE"
    if not name:
        return "UNACCEPTABLE_CREDENTIAL"
    if item["mechanism"] not in (SHA256, SHA512):
        return "UNSUPPORTED_SASL_MECHANISM"
    if deletion:
        return "NONE" if (name, item["mechanism"]) in present else "RESOURCE_NOT_FOUND"
    if not MIN_ITERATIONS <= item["iterations"] <= MAX_ITERATIONS:
        return "UNACCEPTABLE_CREDENTIAL"
    return "NONE"


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(DELETIONS, UPSERTIONS), min_size=1, max_size=4))
def test_any_sequence_of_requests_is_answered_as_kafka_and_replays_to_its_answers(
    requests: list[tuple[list[dict[str, Any]], list[dict[str, Any]]]],
) -> None:
    cluster = Cluster()
    state: dict[tuple[str, str], int] = {}
    for deletions, upsertions in requests:
        before = len(cluster.log)
        answer = cluster.alter(deletions=deletions, upsertions=upsertions)
        items = [(d, True) for d in deletions] + [(u, False) for u in upsertions]
        named: dict[str, int] = {}
        for item, _ in items:
            named[item["name"]] = named.get(item["name"], 0) + 1
        firsts: dict[str, tuple[dict[str, Any], bool]] = {}
        for item, deletion in items:
            firsts.setdefault(item["name"], (item, deletion))
        wanted = {
            name: expected_error(name, item, deletion, named[name], set(state))
            for name, (item, deletion) in firsts.items()
        }
        assert codes(answer) == wanted  # one answer per user named, in the order first named
        assert [r["user"] for r in answer["results"]] == list(firsts)
        written = cluster.log[before:]
        assert sorted(r.name for r in written) == sorted(
            n for n, e in wanted.items() if e == "NONE"
        )  # type: ignore[attr-defined]
        for name, error in wanted.items():
            item, deletion = firsts[name]
            if error == "NONE" and deletion:
                del state[(name, item["mechanism"])]
            elif error == "NONE":
                state[(name, item["mechanism"])] = item["iterations"]
        assert {k: v.iterations for k, v in cluster.image.scram_credentials.items()} == state
    # The log replays into the same image, and so does a snapshot of it.
    replayed = MetadataImage(cluster_id=CLUSTER)
    delta = MetadataDelta(replayed)
    for record in cluster.log:
        delta.replay(record_from_data(record.TYPE, record.to_data()))
    replayed.apply(delta)
    assert (
        replayed.as_comparable()["scram_credentials"]
        == (cluster.image.as_comparable()["scram_credentials"])
    )
    snapshot = image_from_records(
        cluster_id=CLUSTER, records=list(cluster.image.snapshot_records()), last_offset=0
    )
    assert snapshot.scram_credentials == cluster.image.scram_credentials


def test_removing_a_credential_that_is_not_there_does_not_replay() -> None:
    delta = MetadataDelta(MetadataImage(cluster_id=CLUSTER))
    with pytest.raises(ValueError, match="has no credential"):
        delta.replay(RemoveUserScramCredentialRecord("alice", SHA256))


# --- DescribeUserScramCredentials ---------------------------------------------------------------


@settings(max_examples=200, deadline=None)
@given(
    users=st.none() | st.lists(NAMES, max_size=5),
    found=st.dictionaries(
        NAMES.filter(bool),
        st.lists(st.tuples(st.sampled_from([SHA256, SHA512]), ITERATIONS), min_size=1, max_size=2),
        max_size=3,
    ),
)
def test_describe_answers_every_user_once_with_kafkas_codes(
    users: list[str] | None, found: dict[str, list[tuple[str, int]]]
) -> None:
    answer = describe_credentials(users, found)
    by_user = {r["user"]: r for r in answer["results"]}
    assert len(by_user) == len(answer["results"])  # once each
    if not users:
        assert list(by_user) == sorted(found)
    else:
        assert list(by_user) == list(dict.fromkeys(users))
    for user, result in by_user.items():
        if users and users.count(user) > 1:
            assert result["error_code"] == Errors.DUPLICATE_RESOURCE
        elif user in found:
            assert result["error_code"] == 0
            infos = [(i["mechanism"], i["iterations"]) for i in result["credential_infos"]]
            assert infos == sorted(found[user])
        else:
            assert result["error_code"] == Errors.RESOURCE_NOT_FOUND
            assert result["credential_infos"] == []


# --- the records' Kafka twins and their redaction ---------------------------------------------


def test_the_twins_carry_kafkas_bytes_from_3_5_iv2_and_are_noops_before() -> None:
    record = UserScramCredentialRecord("alice", SHA512, b64(b"salt"), b64(b"s"), b64(b"k"), 8192)
    decoded = decode_metadata_value(kafka_record(record, 25).value)
    assert (decoded.name, decoded.api_key, decoded.version) == ("UserScramCredentialRecord", 11, 0)
    assert decoded.fields == {
        "Name": "alice",
        "Mechanism": 2,
        "Salt": b"salt",
        "StoredKey": b"s",
        "ServerKey": b"k",
        "Iterations": 8192,
    }
    removed = decode_metadata_value(
        kafka_record(RemoveUserScramCredentialRecord("a", SHA256), 11).value
    )
    assert (removed.api_key, removed.fields) == (22, {"Name": "a", "Mechanism": 1})
    assert decode_metadata_value(kafka_record(record, 10).value).name == "NoOpRecord"


def test_redaction_hides_the_salt_and_keys_and_keeps_the_rest() -> None:
    record = UserScramCredentialRecord("alice", SHA256, b64(b"salt"), b64(b"s"), b64(b"k"), 4096)
    shown = redact_record_data(record.TYPE, record.to_data())
    assert shown == {
        "name": "alice",
        "mechanism": SHA256,
        "salt": "(redacted)",
        "stored_key": "(redacted)",
        "server_key": "(redacted)",
        "iterations": 4096,
    }
    assert redact_record_data("RemoveUserScramCredentialRecord", {"name": "a"}) == {"name": "a"}


# --- the listener's exchange -------------------------------------------------------------------


def run_exchange(
    mechanism: str, stored: ScramCredential | None, user: str, password: str
) -> tuple[ScramExchange, bytes]:
    """A client (RFC 5802, as Kafka's ScramSaslClient) against the exchange; SaslFailed when
    the server refuses the proof."""
    identity = None if stored is None else ScramIdentity(stored, user)
    exchange = ScramExchange(mechanism, lambda *_: identity, unknown_user_key=b"k" * 32)
    escaped = user.replace("=", "=3D").replace(",", "=2C")
    bare = f"n={escaped},r=client-nonce"
    server_first = exchange.first(parse_client_first(f"n,,{bare}".encode()))
    fields = dict(item.split("=", 1) for item in server_first.decode().split(","))
    salted = salted_password(mechanism, password, base64.b64decode(fields["s"]), int(fields["i"]))
    without_proof = f"c=biws,r={fields['r']}"
    auth = f"{bare},{server_first.decode()},{without_proof}".encode()
    proof = b64(client_proof(mechanism, salted, auth))
    answer, principal, _ = exchange.final(f"{without_proof},p={proof}".encode())
    assert principal == user
    expected = server_signature(mechanism, stored, auth) if stored else b""
    assert answer == b"v=" + base64.b64encode(expected)
    return exchange, answer


USERS = st.text(alphabet=string.ascii_letters + string.digits + "=,.-_@", min_size=1, max_size=20)


@settings(max_examples=40, deadline=None)
@given(
    mechanism=st.sampled_from([SHA256, SHA512]),
    user=USERS,
    password=st.text(min_size=1, max_size=30),
    salt=st.binary(min_size=0, max_size=40),
    iterations=st.integers(MIN_ITERATIONS, MIN_ITERATIONS + 50),
)
def test_the_right_password_logs_in_and_a_wrong_one_never_does(
    mechanism: str, user: str, password: str, salt: bytes, iterations: int
) -> None:
    stored = credential_from_password(mechanism, password, salt, iterations)
    run_exchange(mechanism, stored, user, password)
    with pytest.raises(SaslFailed, match="invalid credentials"):
        run_exchange(mechanism, stored, user, password + "x")


def test_an_unknown_user_gets_a_steady_salt_and_fails_like_a_wrong_password() -> None:
    def first_salt() -> str:
        exchange = ScramExchange(SHA256, lambda *_: None, unknown_user_key=b"k" * 32)
        server_first = exchange.first(ClientFirst("n,,", "n=ghost,r=x", "ghost", "x", False))
        return server_first.decode().split(",")[1]

    assert first_salt() == first_salt()
    with pytest.raises(SaslFailed, match="invalid credentials"):
        run_exchange(SHA256, None, "ghost", "anything")


@given(USERS)
def test_sasl_names_round_trip_their_escapes(user: str) -> None:
    assert sasl_name(user.replace("=", "=3D").replace(",", "=2C")) == user


@settings(max_examples=300, deadline=None)
@given(first=st.binary(max_size=120), final=st.binary(max_size=200))
def test_any_bytes_from_a_client_fail_the_login_cleanly_or_parse(
    first: bytes, final: bytes
) -> None:
    """Whatever a peer sends, the exchange answers SaslFailed (the listener's clean refusal),
    never another exception: no traceback, no closed connection without an answer."""
    stored = credential_from_password(SHA256, "p", b"salt", MIN_ITERATIONS)
    exchange = ScramExchange(SHA256, lambda *_: ScramIdentity(stored, "u"), unknown_user_key=b"k")
    try:
        exchange.first(parse_client_first(first))
    except SaslFailed:
        return
    with pytest.raises(SaslFailed):
        exchange.final(final)


@settings(max_examples=300, deadline=None)
@given(
    final=st.one_of(
        st.binary(max_size=200),
        st.builds(
            lambda c, r, p: f"c={c},r={r},p={p}".encode(),
            st.text(alphabet="biwsA=+/", max_size=8),
            st.text(alphabet=string.ascii_letters + "-_,=", max_size=60),
            st.text(alphabet=string.ascii_letters + "+/=", max_size=90),
        ),
    )
)
def test_any_final_message_after_a_good_first_fails_cleanly(final: bytes) -> None:
    stored = credential_from_password(SHA512, "p", b"salt", MIN_ITERATIONS)
    exchange = ScramExchange(SHA512, lambda *_: ScramIdentity(stored, "u"), unknown_user_key=b"k")
    exchange.first(parse_client_first(b"n,,n=u,r=abc"))
    with pytest.raises(SaslFailed):
        exchange.final(final)
