"""The delegation-token key out of a metadata log an older version wrote.

The key that signs delegation tokens (`delegation.token.secret.key`) is a node setting
(CP_DELEGATION_TOKEN_SECRET_KEY), never a record: Kafka keeps it in each broker's static
configuration. An older version took it as a dynamic cluster config, a ConfigRecord every
reader of the log could see (the metadata fetch, the Raft Fetch of `__cluster_metadata`, the
snapshots). `token_key_remove` (the data migration controlplane 0013 runs it) stops serving it:

- every ConfigRecord of the key keeps its offset with its value made null, a deletion, so the
  log still replays to the state, and the state's row of the key goes too;
- every stored snapshot that holds the key is written again without it (its chunks, their
  CRCs, its size, checksum and record count), a damaged one that cannot be read is deleted;
- standbys' checkpoints awaiting a verdict are dropped (their images held the key: the next
  snapshot judges new ones).

The old key stays known to whoever read the log before, so it must be rotated: when the node's
configured key is a value found in the log, nothing is changed and `TokenKeyNotRotated` says so.
Tokens signed with the old key are no longer accepted; they expire by time as usual.

Models are passed in (the migration's historical ones, or the app's).
"""

from __future__ import annotations

import dataclasses
import hmac
import zlib
from collections.abc import Iterable, Iterator
from typing import Any

import zstandard

from controlplane.controller.records import ConfigRecord, Record
from controlplane.runtime.single_writer import commit_scope
from controlplane.runtime.snapshot_format import (
    DecodedSnapshot,
    SnapshotDamaged,
    records_encode,
    snapshot_decode,
)

TOKEN_KEY = "delegation.token.secret.key"
BROKER = "BROKER"
ROWS_PER_UPDATE = 1000
_KEY_BYTES = TOKEN_KEY.encode()


class TokenKeyNotRotated(RuntimeError):
    """The node's configured key is one the log held: every broker principal knows it."""


@dataclasses.dataclass(frozen=True)
class Models:
    record: Any  # MetadataRecord
    entry: Any  # ConfigEntry
    snapshot: Any  # MetadataSnapshot
    chunk: Any  # MetadataSnapshotChunk
    node: Any  # ControllerNode
    token: Any  # security's DelegationToken


@dataclasses.dataclass(frozen=True)
class Removal:
    records: int  # ConfigRecords whose value is now null
    entries: int  # state rows of the key deleted
    snapshots_rewritten: int
    snapshots_deleted: int  # damaged ones that held it, or could not be read
    tokens: int  # live tokens signed with the old key, no longer accepted

    @property
    def changed(self) -> bool:
        return bool(self.records or self.entries or self.snapshots_rewritten)

    def report(self, *, key_configured: bool) -> str:
        """What changed and what it means, for the operator running the migration."""
        if not self.changed and not self.snapshots_deleted:
            return ""
        lines = [
            f"{TOKEN_KEY} left the metadata log: {self.records} record(s) now delete it "
            f"(their offsets kept), {self.snapshots_rewritten} snapshot(s) rewritten without "
            f"it, {self.snapshots_deleted} unreadable snapshot(s) deleted.",
            f"Every delegation token created before ({self.tokens} live) is no longer "
            "accepted: its HMAC was signed with the old key. Their owners create new ones; "
            "the old ones expire by time as usual.",
        ]
        if not key_configured:
            lines.append(
                "No CP_DELEGATION_TOKEN_SECRET_KEY is set on this node: delegation tokens are "
                "disabled until every node of the control plane has the same key."
            )
        return "\n".join(lines)


def token_key_remove(models: Models, *, configured: str | None) -> Removal:
    """Remove the key from the log, its state row and the snapshots (see the module)."""
    records = list(_key_records(models))
    entries = models.entry.objects.filter(resource_type=BROKER, name=TOKEN_KEY)
    snapshots = list(_snapshots_holding_the_key(models))
    found = {r.data.get("value") for r in records} | set(entries.values_list("value", flat=True))
    for _, decoded in snapshots:
        if decoded is not None:
            found |= {_value(r) for r in decoded.records if _is_key(r)}
    _refuse_a_known_key(configured, {v for v in found if v})
    with commit_scope():  # the one rewrite of the log outside the controller's commit
        for start in range(0, len(records), ROWS_PER_UPDATE):
            batch = records[start : start + ROWS_PER_UPDATE]
            for row in batch:
                row.data = {**row.data, "value": None}
            models.record.objects.bulk_update(batch, ["data"])
        removed_entries, _ = entries.delete()
        rewritten = deleted = 0
        for snapshot, decoded in snapshots:
            if decoded is None:
                _snapshot_delete(models, snapshot)
                deleted += 1
            else:
                _snapshot_rewrite(models, snapshot, decoded)
                rewritten += 1
        if records or snapshots:
            models.node.objects.filter(checkpoint_verdict="pending").update(
                checkpoint_offset=-1, checkpoint_checksum="", checkpoint_verdict=""
            )
    return Removal(
        records=len(records),
        entries=removed_entries,
        snapshots_rewritten=rewritten,
        snapshots_deleted=deleted,
        tokens=models.token.objects.count(),
    )


def _refuse_a_known_key(configured: str | None, found: set[str]) -> None:
    if configured is None:
        return
    if any(hmac.compare_digest(configured.encode(), value.encode()) for value in found):
        raise TokenKeyNotRotated(
            f"CP_DELEGATION_TOKEN_SECRET_KEY is the {TOKEN_KEY} the metadata log held: every "
            "broker principal (and every reader of the log and its snapshots) may know it. "
            "Rotate it: set a new key on every node of the control plane (and as every Kafka "
            f"broker's {TOKEN_KEY}), then migrate again. Nothing was changed."
        )


def _key_records(models: Models) -> Iterator[Any]:
    """The ConfigRecords that set the key on any BROKER resource (a deletion is null already)."""
    rows = models.record.objects.filter(
        record_type=ConfigRecord.TYPE, data__resource_type=BROKER, data__name=TOKEN_KEY
    ).order_by("offset")
    for row in rows.iterator(chunk_size=ROWS_PER_UPDATE):
        if row.data.get("value") is not None:
            yield row


def _is_key(record: Record) -> bool:
    return (
        isinstance(record, ConfigRecord)
        and record.resource_type == BROKER
        and record.name == TOKEN_KEY
        and record.value is not None
    )


def _value(record: Record) -> str | None:
    return record.value if isinstance(record, ConfigRecord) else None


def _snapshots_holding_the_key(models: Models) -> Iterator[tuple[Any, DecodedSnapshot | None]]:
    """Each snapshot whose payload names the key, with its records (None when it cannot be
    read: damaged). A payload is searched as it decompresses; only those that name the key
    are decoded."""
    for snapshot in models.snapshot.objects.order_by("end_offset"):
        pieces = _stored_pieces(models, snapshot)
        try:
            if not _names_the_key(pieces()):
                continue
            if snapshot.damaged:
                yield snapshot, None
                continue
            decoded = snapshot_decode(pieces(), checksum=snapshot.checksum)
        except (SnapshotDamaged, zstandard.ZstdError):
            yield snapshot, None
            continue
        if any(_is_key(record) for record in decoded.records):
            yield snapshot, decoded


def _stored_pieces(models: Models, snapshot: Any) -> Any:
    def pieces() -> Iterator[bytes]:
        chunks = models.chunk.objects.filter(end_offset=snapshot.end_offset).order_by("position")
        for data in chunks.values_list("data", flat=True).iterator(chunk_size=8):
            yield bytes(data)

    return pieces


def _names_the_key(pieces: Iterable[bytes]) -> bool:
    """Whether the decompressed payload holds the key's name (a damaged one: assumed so)."""
    decompressor = zstandard.ZstdDecompressor().decompressobj()
    tail = b""
    for piece in pieces:
        window = tail + decompressor.decompress(piece)
        if _KEY_BYTES in window:
            return True
        tail = window[-len(_KEY_BYTES) :]
    return False


def _snapshot_rewrite(models: Models, snapshot: Any, decoded: DecodedSnapshot) -> None:
    """The snapshot written again without the key, as `metadata_snapshot_store` writes one."""
    encoded = records_encode(
        cluster_id=decoded.cluster_id,
        end_offset=decoded.end_offset,
        records=[record for record in decoded.records if not _is_key(record)],
    )
    models.chunk.objects.filter(end_offset=snapshot.end_offset).delete()
    position = 0
    rows = []
    for chunk in encoded.chunks:
        rows.append(
            models.chunk(
                end_offset=snapshot.end_offset,
                position=position,
                crc32=zlib.crc32(chunk),
                data=chunk,
            )
        )
        position += len(chunk)
    models.chunk.objects.bulk_create(rows, batch_size=8)
    models.snapshot.objects.filter(end_offset=snapshot.end_offset).update(
        size_bytes=encoded.size_bytes,
        checksum=encoded.checksum,
        record_count=encoded.record_count,
    )


def _snapshot_delete(models: Models, snapshot: Any) -> None:
    models.chunk.objects.filter(end_offset=snapshot.end_offset).delete()
    models.snapshot.objects.filter(end_offset=snapshot.end_offset).delete()
