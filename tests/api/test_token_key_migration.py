"""The delegation-token key leaves a metadata log an older version wrote (migration controlplane
0013, controlplane.runtime.token_key_removal): its records become deletions at the same offsets,
the snapshots holding it are written again without it, the log still replays to the state, and
tokens signed with the old key are refused while the node's new key signs new ones. A node whose
key is one the log held is refused, nothing changed."""

from __future__ import annotations

import importlib
import json
import zlib
from typing import Any

import pytest
import zstandard
from django.apps import apps as django_apps
from django.core.exceptions import ImproperlyConfigured

from controlplane.models import (
    ConfigEntry,
    MetadataRecord,
    MetadataSnapshot,
    MetadataSnapshotChunk,
)
from controlplane.runtime import snapshots
from controlplane.runtime.controller import get_runtime, reset_runtime
from controlplane.runtime.replay import metadata_verify
from controlplane.runtime.snapshot_reads import metadata_snapshot_load
from security.selectors import token_hmac_matches
from tests.api.test_metadata_snapshots import KEEP_ONE, create_topics
from tests.api.test_metadata_snapshots import runtime as runtime  # the fixture
from tests.conftest import with_token_secret_key
from tests.legacy_token_key import (
    TOKEN_KEY,
    older_version_creates_a_token,
    older_version_sets_the_key,
)

pytestmark = pytest.mark.django_db

OLD, OLD_PER_BROKER, OLD_AGAIN = "old-key-in-the-log-1a", "old-key-broker-1-2b", "old-key-later-3c"
NEW = "the-nodes-new-key-4d"
MIGRATION = importlib.import_module(
    "controlplane.migrations.0013_delegation_token_secret_leaves_the_log"
)


@pytest.fixture(autouse=True)
def _no_retention_floor(monkeypatch: pytest.MonkeyPatch) -> None:
    snapshots.snapshot_state_reset()
    monkeypatch.setattr(snapshots, "RETENTION_FLOORS", [])


def node_key(settings: Any, key: str) -> None:
    settings.CP_DELEGATION_TOKEN_SECRET_KEY = key
    settings.CP_STATIC_BROKER_CONFIGS = with_token_secret_key(
        settings.CP_STATIC_BROKER_CONFIGS, key
    )


def migrate() -> None:
    MIGRATION.remove_the_token_key(django_apps, None)


@pytest.fixture
def older_log(runtime: Any) -> dict[str, Any]:
    """The key set as a config (cluster default, then broker 1, then again), a token signed
    with it, a snapshot holding it between them: what an older version left."""
    older_version_sets_the_key(OLD)
    token = older_version_creates_a_token()
    assert snapshots.metadata_snapshot_create() is not None
    older_version_sets_the_key(OLD_PER_BROKER, resource_name="1")
    older_version_sets_the_key(OLD_AGAIN)
    create_topics(runtime, "later")
    assert snapshots.metadata_snapshot_create() is not None
    reset_runtime()  # the older version's processes stop before the migration
    assert ConfigEntry.objects.filter(name=TOKEN_KEY).count() == 2
    return token


def payload_of(end_offset: int) -> tuple[bytes, bytes]:
    chunks = MetadataSnapshotChunk.objects.filter(end_offset=end_offset).order_by("position")
    stored = b"".join(bytes(c.data) for c in chunks)
    return stored, zstandard.ZstdDecompressor().decompressobj().decompress(stored)


def test_the_key_leaves_the_records_and_the_snapshots_and_old_tokens_are_refused(
    older_log: dict[str, Any],
    api: Any,
    tokens: dict[str, str],
    settings: Any,
    capsys: pytest.CaptureFixture[str],
) -> None:
    keyed = list(
        MetadataRecord.objects.filter(record_type="ConfigRecord", data__name=TOKEN_KEY)
        .order_by("offset")
        .values_list("offset", flat=True)
    )
    assert len(keyed) == 3
    node_key(settings, NEW)
    migrate()

    said = capsys.readouterr().out
    assert "3 record(s) now delete it" in said and "2 snapshot(s) rewritten" in said
    assert "no longer accepted" in said and "(1 live)" in said
    # The records keep their offsets, each now a deletion; no byte of the log holds a value.
    after = MetadataRecord.objects.filter(data__name=TOKEN_KEY).order_by("offset")
    assert [(r.offset, r.data["value"]) for r in after] == [(o, None) for o in keyed]
    log_text = json.dumps(list(MetadataRecord.objects.values_list("data", flat=True)))
    assert not [v for v in (OLD, OLD_PER_BROKER, OLD_AGAIN) if v in log_text]
    assert not ConfigEntry.objects.filter(name=TOKEN_KEY).exists()
    # Every snapshot written again: intact (chunks' CRCs, checksum, count), without the key.
    kept = list(MetadataSnapshot.objects.order_by("end_offset"))
    assert len(kept) == 2
    for snapshot in kept:
        stored, payload = payload_of(snapshot.end_offset)
        assert snapshot.size_bytes == len(stored)
        for chunk in MetadataSnapshotChunk.objects.filter(end_offset=snapshot.end_offset):
            assert zlib.crc32(bytes(chunk.data)) == chunk.crc32
        decoded = metadata_snapshot_load(snapshot=snapshot)
        assert len(decoded.records) == snapshot.record_count
        assert TOKEN_KEY.encode() not in payload
        for value in (OLD, OLD_PER_BROKER, OLD_AGAIN):
            assert value.encode() not in payload and value.encode() not in stored
        served = api.client.get(
            f"/internal/v1/metadata/snapshots/{snapshot.end_offset}",
            HTTP_AUTHORIZATION=f"Bearer {tokens['broker']}",
        )
        assert served.status_code == 200 and served.content == stored
    assert metadata_verify() == []

    # The node's new key signs; the token signed with the old one is not found any more.
    assert not token_hmac_matches(token_id=older_log["token_id"], hmac_text=older_log["hmac"])
    status, refused = api.post(
        "/api/v1/renew-delegation-token", {"hmac": older_log["hmac"]}, token=tokens["admin"]
    )
    assert status == 200 and refused["error"] == "DELEGATION_TOKEN_NOT_FOUND", refused
    status, created = api.post("/api/v1/create-delegation-token", {}, token=tokens["alice"])
    assert status == 200 and created["error_code"] == 0, created
    assert token_hmac_matches(token_id=created["token_id"], hmac_text=created["hmac"])
    status, renewed = api.post(
        "/api/v1/renew-delegation-token", {"hmac": created["hmac"]}, token=tokens["alice"]
    )
    assert status == 200 and renewed["error_code"] == 0, renewed

    # A snapshot built on a rewritten one, the log cut behind it: the replay still equals the
    # state (verify_metadata starts from that snapshot now).
    latest = snapshots.metadata_snapshot_create(config=KEEP_ONE)
    create_topics(get_runtime(), "after")
    first = MetadataRecord.objects.order_by("offset").values_list("offset", flat=True).first()
    assert latest is not None and first == latest.end_offset
    assert metadata_verify() == []
    migrate()  # again: nothing left to do, nothing said
    assert capsys.readouterr().out == ""


def test_a_node_whose_key_the_log_held_is_refused_and_nothing_changes(
    older_log: dict[str, Any], settings: Any
) -> None:
    node_key(settings, OLD_PER_BROKER)
    before = list(MetadataRecord.objects.order_by("offset").values_list("data", flat=True))
    checksums = list(MetadataSnapshot.objects.values_list("end_offset", "checksum"))
    with pytest.raises(ImproperlyConfigured, match="Rotate it") as refusal:
        migrate()
    assert OLD_PER_BROKER not in str(refusal.value)
    assert list(MetadataRecord.objects.order_by("offset").values_list("data", flat=True)) == before
    assert list(MetadataSnapshot.objects.values_list("end_offset", "checksum")) == checksums
    assert ConfigEntry.objects.filter(name=TOKEN_KEY).count() == 2


def test_a_log_without_the_key_is_left_alone(
    runtime: Any, settings: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    assert snapshots.metadata_snapshot_create() is not None
    before = list(MetadataSnapshot.objects.values_list("end_offset", "checksum"))
    node_key(settings, NEW)
    migrate()
    assert capsys.readouterr().out == ""
    assert list(MetadataSnapshot.objects.values_list("end_offset", "checksum")) == before
    assert metadata_verify() == []


def test_without_a_key_on_the_node_tokens_are_said_to_be_disabled(
    older_log: dict[str, Any], settings: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    settings.CP_DELEGATION_TOKEN_SECRET_KEY = None
    migrate()
    assert "delegation tokens are disabled" in capsys.readouterr().out
    assert metadata_verify() == []
