"""The control plane's own state: the cluster row (lease, epoch, log end), the metadata log,
the writes applied by (principal, request id), principals and the ACL projection."""

from __future__ import annotations

from django.db import models


class Cluster(models.Model):
    """The single cluster row. Commits lock it; it holds the controller lease and the log end."""

    id = models.PositiveSmallIntegerField(primary_key=True, default=1)
    cluster_id = models.CharField(max_length=64)
    last_offset = models.BigIntegerField(default=-1)
    controller_id = models.IntegerField(null=True, blank=True)
    controller_epoch = models.IntegerField(default=0)
    lease_holder = models.CharField(max_length=200, blank=True, default="")
    lease_expires_ms = models.BigIntegerField(default=0)
    # Counters for Kafka's LeaderElectionRateAndTimeMs / UncleanLeaderElectionsPerSec.
    leader_elections_total = models.BigIntegerField(default=0)
    unclean_leader_elections_total = models.BigIntegerField(default=0)

    class Meta:
        db_table = "cp_cluster"


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
    data = models.JSONField()

    class Meta:
        db_table = "cp_metadata_record"
        ordering = ["offset"]
        # Plain b-trees only: every index is paid for on each of a large commit's rows, and
        # the log is filtered by equality, never by LIKE (so no varchar_pattern_ops twins).
        indexes = [
            models.Index(fields=["record_type"], name="cp_log_type"),
            models.Index(fields=["principal"], name="cp_log_principal"),
            models.Index(fields=["request_id"], name="cp_log_request"),
            models.Index(fields=["broker_id"], name="cp_log_broker"),
        ]


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
    response = models.JSONField()  # what the client got (a secret withheld)
    first_offset = models.BigIntegerField()
    last_offset = models.BigIntegerField()
    created_ms = models.BigIntegerField()
    # For a retry's audit trail: whether the write was audited in its commit, and the core's
    # notes of it (a renewed token's id), never answered.
    audited = models.BooleanField(default=False)
    notes = models.JSONField(default=dict)

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
