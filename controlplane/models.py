"""The control plane's own state: the cluster row (lease, epoch, log end), the metadata log,
the writes applied by (principal, request id), principals and the ACL projection."""

from __future__ import annotations

import functools
from typing import Any

from django.db import models
from django.db.models.fields.json import KeyTransformFactory


class Cluster(models.Model):
    """The single cluster row. Commits lock it; it holds the controller lease and the log end."""

    id = models.PositiveSmallIntegerField(primary_key=True, default=1)
    cluster_id = models.CharField(max_length=64)
    last_offset = models.BigIntegerField(default=-1)
    # The log's offset the state tables (the projections) stand at. The log commits first and
    # wakes the brokers; the tables follow in a transaction of their own, so they trail
    # `last_offset` for the span of that transaction, or until the next controller to take
    # over has caught them up from the log (controlplane.runtime.metadata_log).
    projected_offset = models.BigIntegerField(default=-1)
    # Kafka's log start offset: the first record the log still holds (retention deletes the
    # records before the oldest kept snapshot). Moved in the transaction that deletes them, so
    # a fetch that read it knows whether the records it asks for are still there.
    log_start_offset = models.BigIntegerField(default=0)
    controller_id = models.IntegerField(null=True, blank=True)
    controller_epoch = models.IntegerField(default=0)
    lease_holder = models.CharField(max_length=200, blank=True, default="")
    lease_expires_ms = models.BigIntegerField(default=0)
    # Counters for Kafka's LeaderElectionRateAndTimeMs / UncleanLeaderElectionsPerSec.
    leader_elections_total = models.BigIntegerField(default=0)
    unclean_leader_elections_total = models.BigIntegerField(default=0)

    class Meta:
        db_table = "cp_cluster"


class FinalizedFeature(models.Model):
    """A finalized feature's level (FeatureLevelRecord): metadata.version and the others."""

    name = models.CharField(max_length=255, primary_key=True)
    level = models.IntegerField()

    class Meta:
        db_table = "cp_finalized_feature"


class ProducerIdBlock(models.Model):
    """The last producer id block handed out (ProducerIdsRecord): one row, or none yet."""

    id = models.PositiveSmallIntegerField(primary_key=True, default=1)
    broker_id = models.IntegerField()
    broker_epoch = models.BigIntegerField()
    next_producer_id = models.BigIntegerField()

    class Meta:
        db_table = "cp_producer_id_block"


class KRaftQuorum(models.Model):
    """The quorum's kraft.version and voters (KRaftVersionRecord, VotersRecord, KIP-853): one
    row once either was written."""

    id = models.PositiveSmallIntegerField(primary_key=True, default=1)
    kraft_version = models.IntegerField(default=0)
    voters = models.JSONField(default=list)  # VotersRecord's voters, as the record's data

    class Meta:
        db_table = "cp_kraft_quorum"


class JsonAsWritten(models.JSONField):
    """A JSON value stored as PostgreSQL's `json` (the text as written), not `jsonb`.

    For what is appended far more than it is searched by content: the log's record data (every
    commit copies a row per record, 100,000 for a large change; its readers, replay, the
    standby, the Raft door, exports, read the data whole, as text, by offset) and a write's
    stored answer (a CreateTopics of 500 topics answers about 1 MB, read back only by a retry).
    `jsonb` parses each value into its binary form as it is stored and prints it back as it is
    read; `json` keeps the text, checked once (a 4,001-record COPY into the log a third faster,
    a 1 MB answer stored in a fifth of the time). Every connection reads `json` as text, as
    Django has psycopg read `jsonb` (controlplane.apps): the readers decode it themselves. The
    few queries that look inside a value (`data__fenced=1`, `response__broker_id`, a redaction)
    read it as `jsonb`: the field's lookups and key transforms cast it first (`json` has no
    equality, no `?`), so the ORM filters it as any JSONField."""

    def db_type(self, connection: Any) -> str | None:
        if connection.vendor == "postgresql":
            return "json"
        return super().db_type(connection)

    def get_lookup(self, lookup_name: str) -> Any:
        found: Any = super().get_lookup(lookup_name)
        return None if found is None else _on_jsonb(found)

    def get_transform(self, lookup_name: str) -> Any:
        found: Any = super().get_transform(lookup_name)
        if isinstance(found, KeyTransformFactory):
            return _JsonbKey(found.key_name)
        return None if found is None else _on_jsonb(found)


class _AsJsonb(models.Func):
    """A JsonAsWritten value as jsonb on PostgreSQL; as it is on other databases (text)."""

    output_field = models.JSONField()
    template = "%(expressions)s"

    def as_postgresql(self, compiler: Any, connection: Any, **extra_context: Any) -> Any:
        return self.as_sql(compiler, connection, template="(%(expressions)s)::jsonb")


class _JsonbKey(KeyTransformFactory):
    """A key of a JsonAsWritten value, read from its jsonb form."""

    def __call__(self, lhs: Any, *args: Any, **kwargs: Any) -> Any:
        return super().__call__(_AsJsonb(lhs), *args, **kwargs)


@functools.cache
def _on_jsonb(operation: Any) -> Any:
    """JSONField's lookup or transform `operation`, on a JsonAsWritten value read as jsonb."""

    def __init__(self: Any, lhs: Any, *args: Any, **kwargs: Any) -> None:
        operation.__init__(self, _AsJsonb(lhs), *args, **kwargs)

    return type(f"Jsonb{operation.__name__}", (operation,), {"__init__": __init__})


# The record types that make up most of the log (a topic's partitions, every election and ISR
# change): left out of the log's type index (MetadataRecord.Meta).
BULK_RECORD_TYPES = ("PartitionRecord", "PartitionChangeRecord")


class MetadataRecord(models.Model):
    """One entry of the metadata log: gap-free offsets, append-only."""

    offset = models.BigIntegerField(primary_key=True)
    record_type = models.CharField(max_length=64)
    controller_epoch = models.IntegerField()
    timestamp_ms = models.BigIntegerField()
    principal = models.CharField(max_length=255)
    client_id = models.CharField(max_length=255, blank=True, default="")
    client_host = models.CharField(max_length=64, blank=True, default="")
    request_id = models.CharField(max_length=128, blank=True, default="")
    broker_id = models.IntegerField(null=True, blank=True)
    data = JsonAsWritten()

    class Meta:
        db_table = "cp_metadata_record"
        ordering = ["offset"]
        # Plain b-trees only: every index is paid for on each of a large commit's rows, and
        # the log is filtered by equality, never by LIKE (so no varchar_pattern_ops twins).
        # The controller's own records (elections, fencing, a shutdown's moves) carry no
        # request id and most name no broker: those two indexes hold only the rows that do,
        # which is every row a filter on them can find (a 2,000-record commit's COPY 15% faster).
        # The partitions' records are most of the log and of every large commit: the type
        # index leaves them out (a 4,001-record shutdown's COPY 22-24 ms instead of 35-36). A
        # filter on another type implies the index's condition, so the planner uses it; one on
        # a partition type reads the log in offset order, where such records are dense.
        indexes = [
            models.Index(
                fields=["record_type"],
                name="cp_log_type",
                condition=~models.Q(record_type__in=BULK_RECORD_TYPES),
            ),
            models.Index(fields=["principal"], name="cp_log_principal"),
            models.Index(
                fields=["request_id"], name="cp_log_request", condition=~models.Q(request_id="")
            ),
            models.Index(
                fields=["broker_id"],
                name="cp_log_broker",
                condition=models.Q(broker_id__isnull=False),
            ),
        ]


class KafkaBatch(models.Model):
    """One commit's records in Kafka's record-batch format, as the brokers fetch them from
    `__cluster_metadata`: written by the controller in the commit's own transaction (it holds
    the records and the state their encoding needs), so the Kafka protocol listener serves
    these bytes instead of reading the rows back and encoding them again. A range without
    batches (CP_STORE_KAFKA_BATCHES off, or a commit that could not be encoded) is encoded from
    the rows."""

    base_offset = models.BigIntegerField(primary_key=True)
    last_offset = models.BigIntegerField()
    epoch = models.IntegerField()
    data = models.BinaryField()

    class Meta:
        db_table = "cp_kafka_batch"


class AppliedRequest(models.Model):
    """A write the controller applied, by principal and request id: that principal's retry
    answers this instead of reapplying. Request ids belong to their principal (for an Envelope,
    the original client's): another principal's request with the same id is one of its own."""

    # request_id first: the controller looks a batch's ids up for every principal at once (a
    # reuse by another principal is audited), and that lookup is on this key's leading column.
    pk = models.CompositePrimaryKey("request_id", "principal")
    request_id = models.CharField(max_length=128)
    principal = models.CharField(max_length=255)
    api = models.CharField(max_length=64)
    response = JsonAsWritten()  # what the client got (a secret withheld)
    first_offset = models.BigIntegerField()
    last_offset = models.BigIntegerField()
    created_ms = models.BigIntegerField()
    # For a retry's audit trail: whether the write was audited in its commit, and the core's
    # notes of it (a renewed token's id), never answered.
    audited = models.BooleanField(default=False)
    notes = JsonAsWritten(default=dict)
    # What the request asked (controlplane.runtime.conversation.request_fingerprint): the same
    # id with another body is refused, never answered this. Null for writes stored before.
    fingerprint = models.CharField(max_length=64, null=True)

    class Meta:
        db_table = "cp_applied_request"


class Principal(models.Model):
    """An authenticated identity, `User:<name>`. Only a SHA-256 of its token is stored."""

    name = models.CharField(max_length=200, unique=True)
    token_hash = models.CharField(max_length=64, unique=True)
    is_super_user = models.BooleanField(default=False)
    is_broker = models.BooleanField(default=False)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        db_table = "cp_principal"
        ordering = ["name"]

    @property
    def principal(self) -> str:
        return f"User:{self.name}"

    def __str__(self) -> str:
        return self.principal


class Acl(models.Model):
    """Projection of AccessControlEntryRecord."""

    id = models.CharField(max_length=36, primary_key=True)
    resource_type = models.CharField(max_length=32)
    resource_name = models.CharField(max_length=255)
    pattern_type = models.CharField(max_length=16)
    principal = models.CharField(max_length=255, db_index=True)
    host = models.CharField(max_length=255)
    operation = models.CharField(max_length=32)
    permission_type = models.CharField(max_length=8)

    class Meta:
        db_table = "cp_acl"
        ordering = ["resource_type", "resource_name", "principal"]


class ConfigEntry(models.Model):
    """Projection of ConfigRecord: one dynamic config of one resource (TOPIC, BROKER...)."""

    resource_type = models.CharField(max_length=16)
    resource_name = models.CharField(max_length=255)
    name = models.CharField(max_length=255)
    value = models.TextField()

    class Meta:
        db_table = "cp_config"
        ordering = ["resource_type", "resource_name", "name"]
        constraints = [
            models.UniqueConstraint(
                fields=["resource_type", "resource_name", "name"], name="cp_config_key"
            )
        ]


class ControllerNode(models.Model):
    """Where each controller process stands: the offset of the image it holds, reported by a
    standby as it follows the log (`kafka_controller_standby_lag_records` is the log's end
    minus this). Not metadata: no record describes it, and the controllers write it directly."""

    node_id = models.CharField(max_length=200, primary_key=True)
    controller_id = models.IntegerField()
    role = models.CharField(max_length=8)  # "standby" or "active"
    last_offset = models.BigIntegerField()  # -1: no image yet
    updated_ms = models.BigIntegerField()
    # A standby's image checked against the log: the checksum of its image at an offset, which
    # the next snapshot's creation (replaying the log through that offset) judges.
    checkpoint_offset = models.BigIntegerField(default=-1)
    checkpoint_checksum = models.CharField(max_length=64, blank=True, default="")
    checkpoint_verdict = models.CharField(max_length=8, blank=True, default="")

    class Meta:
        db_table = "cp_controller_node"


class MetadataSnapshot(models.Model):
    """A snapshot of the metadata image (Kafka's `.checkpoint` file), its bytes in chunks
    (controlplane.runtime.snapshots). Kafka's SnapshotId: `end_offset` is exclusive (the log
    goes on from it), `epoch` the controller epoch of the record before it. Not metadata: the
    snapshot describes the log, and retention deletes old ones."""

    end_offset = models.BigIntegerField(primary_key=True)
    epoch = models.IntegerField()
    size_bytes = models.BigIntegerField()  # compressed, as stored and fetched
    checksum = models.CharField(max_length=64)  # SHA-256 hex of the uncompressed payload
    record_count = models.BigIntegerField()
    created_ms = models.BigIntegerField()
    # Bytes of the log's records (their JSON) between the snapshot it was built on and it:
    # what retention counts of the log, never scanning it (metadata.max.retention.bytes).
    log_bytes = models.BigIntegerField(default=0)
    # How long building it took: the next one waits a multiple of that (SNAPSHOT_DUTY_CYCLE).
    build_ms = models.BigIntegerField(default=0)
    # Found damaged (a chunk or the checksum does not match): never served nor built on again.
    damaged = models.BooleanField(default=False)

    class Meta:
        db_table = "cp_metadata_snapshot"
        ordering = ["-end_offset"]


class MetadataSnapshotChunk(models.Model):
    """CHUNK_BYTES of a snapshot's compressed bytes from `position`: a fetch of a range reads
    only the chunks it covers, and each is checked by its CRC-32 as it is served."""

    pk = models.CompositePrimaryKey("end_offset", "position")
    end_offset = models.BigIntegerField()
    position = models.BigIntegerField()
    crc32 = models.BigIntegerField()
    data = models.BinaryField()

    class Meta:
        db_table = "cp_metadata_snapshot_chunk"
