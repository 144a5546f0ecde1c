"""No configured secret rides the metadata log, on either door, on a stack of real processes.

Every process of the stack (web, run_controller, serve_kafka, the snapshot's) reads one
delegation-token key from a file (CP_DELEGATION_TOKEN_SECRET_KEY_FILE, as a mounted secret):
a token the controller signs logs in on serve_kafka's client listener. After tokens are made
and renewed, configs altered (the key's own change refused) and a snapshot taken, every record
a broker may read is scanned for the configured secrets (the token key, the principals' tokens,
the token's HMAC, the refused value), as they are and in hex or base64: the metadata fetch
(`GET /internal/v1/metadata`, JSON and MessagePack with zstd), the stored snapshot's bytes, and
on the controller listener the Raft Fetch of `__cluster_metadata`-0 and FetchSnapshot. And the
finding itself: a broker principal reading the log finds no key that computes a token's HMAC.
"""

from __future__ import annotations

import base64
import contextlib
import dataclasses
import hashlib
import hmac
import json
import math
import socket
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import msgspec
import pytest
import zstandard
from kio.schema.errors import ErrorCode

from controlplane.controller.kraft import decode_records
from devtools.stack import PYTHON, Stack, free_port, running_stack, wait_for
from tests.conftest import need_postgres, need_redis
from tests.integration.test_controller_full_stack import beat, register
from tests.wire.rawclient import RawClient
from tests.wire.test_raft_fetch import fetch, only, snapshot_request
from tests.wire.test_server import authenticate

pytestmark = pytest.mark.integration

SETTINGS = {"CP_BROKER_SESSION_TIMEOUT_MS": "600000", "CP_REQUEST_TIMEOUT_MS": "20000"}
TOKEN_KEY = "delegation.token.secret.key"
REFUSED_VALUE = "a-key-someone-tried-to-set-7e"
BROKER = "broker"  # the stack's broker principal (CLUSTER_ACTION, bound to no broker id)


@dataclasses.dataclass
class Scene:
    stack: Stack
    secrets: dict[str, str]  # what each secret is -> its value
    token: dict[str, Any]  # alice's, as CreateDelegationToken answered it
    client_port: int
    controller_port: int
    snapshot: dict[str, int]  # the latest snapshot's end offset and epoch


def ok(stack: Stack, path: str, body: dict[str, Any], token: str) -> dict[str, Any]:
    assert stack.http is not None
    status, answer = stack.http.post(path, body, token)
    assert status == 200, answer
    return dict(answer)


def config(rtype: str, name: str, key: str, value: str) -> dict[str, Any]:
    change = {"name": key, "config_operation": "SET", "value": value}
    return {"resources": [{"resource_type": rtype, "resource_name": name, "configs": [change]}]}


def serve_kafka(stack: Stack) -> tuple[int, int]:
    """serve_kafka with a SASL client listener and the controller listener: their ports."""
    client, controller = free_port(), free_port()
    stack.spawn(
        "serve_kafka",
        [
            PYTHON,
            "manage.py",
            "serve_kafka",
            "--listener",
            f"SASL_PLAINTEXT://127.0.0.1:{client}",
            "--listener",
            f"CONTROLLER://127.0.0.1:{controller}",
            "--listener-security-protocol-map",
            "CONTROLLER:SASL_PLAINTEXT",
        ],
    )
    for port in (client, controller):

        def listening(port: int = port) -> bool:
            with contextlib.suppress(OSError):
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                return True
            return False

        wait_for(listening, 60, f"serve_kafka to listen on {port}")
    return client, controller


def a_day_with_tokens(stack: Stack, alice: str) -> dict[str, Any]:
    """Brokers, a topic, configs (the key's own change refused), a token made and renewed."""
    for broker_id in (1, 2, 3):
        beat(stack, broker_id, register(stack, broker_id), 10**9)
    admin = stack.tokens["admin"]
    created = ok(
        stack,
        "/api/v1/create-topics",
        {"topics": [{"name": "orders", "num_partitions": 3, "replication_factor": 3}]},
        admin,
    )
    assert created["topics"][0]["error_code"] == 0, created
    for body in (
        config("TOPIC", "orders", "retention.ms", "3600000"),
        config("BROKER", "", "log.retention.ms", "7200000"),
    ):
        assert (
            ok(stack, "/api/v1/incremental-alter-configs", body, admin)["responses"][0][
                "error_code"
            ]
            == 0
        )
    refused = ok(
        stack,
        "/api/v1/incremental-alter-configs",
        config("BROKER", "", TOKEN_KEY, REFUSED_VALUE),
        admin,
    )
    assert refused["responses"][0]["error"] == "INVALID_CONFIG", refused
    token = ok(stack, "/api/v1/create-delegation-token", {"renewers": []}, alice)
    assert token["error_code"] == 0 and token["hmac"], token
    renewed = ok(stack, "/api/v1/renew-delegation-token", {"hmac": token["hmac"]}, alice)
    assert renewed["error_code"] == 0, renewed
    return token


def take_a_snapshot(stack: Stack) -> dict[str, int]:
    stack.manage(
        "shell",
        "-c",
        "from controlplane.runtime.snapshots import metadata_snapshot_create as create; "
        "assert create() is not None",
    )
    assert stack.http is not None
    status, latest = stack.http.get("/internal/v1/metadata/snapshot", stack.tokens[BROKER])
    assert status == 200, latest
    return {"end_offset": int(latest["end_offset"]), "epoch": int(latest["epoch"])}


@pytest.fixture(scope="module")
def scene(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Scene]:
    need_postgres()
    need_redis()
    with running_stack(tmp_path_factory.mktemp("logs"), settings=SETTINGS) as stack:
        key = stack.token_secret_key
        assert key and "CP_DELEGATION_TOKEN_SECRET_KEY_FILE" in stack.env
        stack.start_controller("controller-a", 3000)
        stack.wait_active("controller-a")
        stack.start_web()
        client_port, controller_port = serve_kafka(stack)
        alice = stack.manage("create_principal", "alice").stdout.split()[-1]
        token = a_day_with_tokens(stack, alice)
        snapshot = take_a_snapshot(stack)
        # A write after the snapshot: the log past it is served too.
        acl = {
            "resource_type": "TOPIC",
            "resource_name": "orders",
            "pattern_type": "LITERAL",
            "principal": "User:alice",
            "host": "*",
            "operation": "READ",
            "permission_type": "ALLOW",
        }
        ok(stack, "/api/v1/create-acls", {"creations": [acl]}, stack.tokens["admin"])
        secrets = {
            "the token key": key,
            "the admin's token": stack.tokens["admin"],
            "the broker's token": stack.tokens[BROKER],
            "alice's token": alice,
            "the delegation token's HMAC": token["hmac"],
            "the refused value": REFUSED_VALUE,
        }
        yield Scene(stack, secrets, token, client_port, controller_port, snapshot)


# --- looking for a secret ---------------------------------------------------------------------


def base64_cores(secret: bytes, encode: Any) -> Iterator[bytes]:
    """What the secret's base64 looks like wherever it starts in a larger text: for each of
    the three alignments, the characters made of the secret's bits alone."""
    for before in range(3):
        text = encode(b"\0" * before + secret).rstrip(b"=")
        yield text[math.ceil(8 * before / 6) : (8 * (before + len(secret))) // 6]


def forms(secret: str) -> dict[str, bytes]:
    raw = secret.encode()
    found = {"as it is": raw, "hex": raw.hex().encode(), "HEX": raw.hex().upper().encode()}
    for name, encode in (("base64", base64.b64encode), ("base64url", base64.urlsafe_b64encode)):
        for index, core in enumerate(base64_cores(raw, encode)):
            found[f"{name} at {index}"] = core
    return found


def leaks(scene: Scene, where: str, data: bytes) -> list[str]:
    """Each configured secret found in `data`, in any of its forms (hex in either case)."""
    lowered = data.lower()
    found = []
    for what, secret in scene.secrets.items():
        for form, needle in forms(secret).items():
            if (needle.lower() in lowered) if form.lower() == "hex" else (needle in data):
                found.append(f"{what} ({form}) in {where}")
    return found


# --- the doors ----------------------------------------------------------------------------------


def metadata_pages(scene: Scene, **headers: str) -> Iterator[tuple[bytes, dict[str, Any]]]:
    """Every page of GET /internal/v1/metadata as a broker reads it: (bytes, decoded)."""
    assert scene.stack.http is not None
    after = -1
    while True:
        request = urllib.request.Request(
            scene.stack.http.url(f"/internal/v1/metadata?after_offset={after}&max_records=7"),
            headers={"Authorization": f"Bearer {scene.stack.tokens[BROKER]}", **headers},
        )
        with urllib.request.urlopen(request, timeout=30) as response:
            body = response.read()
            encoding = response.headers.get("Content-Encoding")
            media = response.headers.get("Content-Type")
        plain = zstandard.ZstdDecompressor().decompressobj().decompress(body) if encoding else body
        answer = msgspec.msgpack.decode(plain) if "msgpack" in media else json.loads(plain)
        yield body + plain, answer
        if not answer["records"]:
            return
        after = answer["records"][-1]["offset"]


def raft_log(client: RawClient) -> Iterator[tuple[bytes, list[Any]]]:
    """The Raft Fetch of `__cluster_metadata`-0 from offset 0 to the high watermark."""
    told = only(client.request(fetch(0, 0, 0)))
    assert told.error_code == ErrorCode.fenced_leader_epoch
    epoch = told.current_leader.leader_epoch
    offset, last_epoch = 0, 0
    while True:
        partition = only(client.request(fetch(offset, last_epoch, epoch)))
        assert partition.error_code == ErrorCode.none, partition
        data = bytes(partition.records)
        if not data:
            assert offset == partition.high_watermark
            return
        records = list(decode_records(data))
        yield data, [record for _, record in records]
        offset, last_epoch = records[-1][0] + 1, epoch


def raft_snapshot(client: RawClient, snapshot: dict[str, int], epoch: int) -> bytes:
    pieces, position, size = [], 0, None
    while size is None or position < size:
        answer = client.request(
            snapshot_request(snapshot["end_offset"], snapshot["epoch"], epoch, position)
        )
        (part,) = answer.topics[0].partitions
        assert part.error_code == ErrorCode.none, part
        size = int(part.size)
        pieces.append(bytes(part.unaligned_records))
        position += len(pieces[-1])
    return b"".join(pieces)


@contextlib.contextmanager
def broker_on_the_controller_listener(scene: Scene) -> Iterator[RawClient]:
    with RawClient("127.0.0.1", scene.controller_port, timeout_s=30) as client:
        assert authenticate(client, BROKER, scene.stack.tokens[BROKER]) == ErrorCode.none
        yield client


def test_every_node_reads_the_one_key_from_its_setting(scene: Scene) -> None:
    """The token run_controller signed logs in on serve_kafka (a process of its own, the same
    key file); a forged HMAC does not."""
    with RawClient("127.0.0.1", scene.client_port) as client:
        assert authenticate(client, scene.token["token_id"], scene.token["hmac"]) == (
            ErrorCode.none
        )
    forged = base64.b64encode(b"x" * 64).decode()
    with RawClient("127.0.0.1", scene.client_port) as client:
        assert authenticate(client, scene.token["token_id"], forged) == (
            ErrorCode.sasl_authentication_failed
        )


def test_no_configured_secret_is_served_on_either_door(scene: Scene) -> None:
    found: list[str] = []
    for headers in ({}, {"Accept": "application/msgpack", "Accept-Encoding": "zstd"}):
        offsets: list[int] = []
        for data, answer in metadata_pages(scene, **headers):
            found += leaks(scene, f"GET /internal/v1/metadata {headers or 'JSON'}", data)
            offsets += [record["offset"] for record in answer["records"]]
        assert offsets == list(range(answer["last_offset"] + 1)) and len(offsets) > 10
    assert scene.stack.http is not None
    end = scene.snapshot["end_offset"]
    stored = scene.stack.http.url(f"/internal/v1/metadata/snapshots/{end}")
    request = urllib.request.Request(
        stored, headers={"Authorization": f"Bearer {scene.stack.tokens[BROKER]}"}
    )
    with urllib.request.urlopen(request, timeout=30) as response:
        snapshot_bytes = response.read()
    payload = zstandard.ZstdDecompressor().decompressobj().decompress(snapshot_bytes)
    assert b"RegisterBrokerRecord" in payload  # what was scanned is the snapshot, decoded
    found += leaks(scene, "the stored snapshot", snapshot_bytes + payload)
    with broker_on_the_controller_listener(scene) as client:
        raft_records = 0
        for data, records in raft_log(client):
            found += leaks(scene, "the Raft Fetch", data + repr(records).encode())
            raft_records += len(records)
        # The whole log: the REST pages' records, and the voter set the listener's first Fetch
        # wrote (KIP-853: kraft.version and the voters, naming this listener), read again.
        pages = [page for _, page in metadata_pages(scene)]
        offsets = [record["offset"] for page in pages for record in page["records"]]
        assert raft_records == len(offsets) == pages[-1]["last_offset"] + 1
        epoch = only(client.request(fetch(0, 0, 0))).current_leader.leader_epoch
        checkpoint = raft_snapshot(client, scene.snapshot, epoch)
        decoded = [record for _, record in decode_records(checkpoint)]
        assert decoded[0].name == "SnapshotHeaderRecord"
        found += leaks(scene, "FetchSnapshot", checkpoint + repr(decoded).encode())
    assert found == []


def strings_in(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from strings_in(item)
    elif isinstance(value, list | tuple):
        for item in value:
            yield from strings_in(item)


def test_a_broker_principal_finds_no_key_that_signs_a_token(scene: Scene) -> None:
    """The finding, tried again: a broker principal reads every record it may and tries every
    text in them as the key of alice's token; none computes its HMAC."""
    wanted = base64.b64decode(scene.token["hmac"])
    token_id = scene.token["token_id"].encode()
    candidates: set[str] = set()
    for _, answer in metadata_pages(scene):
        for record in answer["records"]:
            if record["type"] == "ConfigRecord":
                assert record["data"]["name"] != TOKEN_KEY, record
            candidates.update(strings_in(record["data"]))
    with broker_on_the_controller_listener(scene) as client:
        for _, records in raft_log(client):
            for record in records:
                if record.name == "ConfigRecord":
                    assert record.fields.get("name") != TOKEN_KEY, record
                candidates.update(strings_in(record.fields))
    assert scene.token["token_id"] in candidates  # the token is in the log, its key is not
    signing = [
        c
        for c in candidates
        if hmac.compare_digest(hmac.new(c.encode(), token_id, hashlib.sha512).digest(), wanted)
    ]
    assert signing == []


def test_the_key_file_is_the_stacks_own(scene: Scene) -> None:
    path = Path(scene.stack.env["CP_DELEGATION_TOKEN_SECRET_KEY_FILE"])
    assert path.stat().st_mode & 0o777 == 0o600
    assert path.read_text().strip() == scene.secrets["the token key"]
