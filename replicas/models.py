"""Topics and partitions: projections of TopicRecord, PartitionRecord, PartitionChangeRecord and
RemoveTopicRecord, written by the controller's commit and read by the API, the UI and metrics;
and AlterReplicaState reports (KIP-589) waiting for the controller."""

from __future__ import annotations

from django.db import models


class Topic(models.Model):
    topic_id = models.CharField(max_length=36, primary_key=True)
    name = models.CharField(max_length=249, unique=True)
    partition_count = models.IntegerField(default=0)

    class Meta:
        db_table = "cp_topic"
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name


class Partition(models.Model):
    topic = models.ForeignKey(
        Topic,
        on_delete=models.CASCADE,
        related_name="partitions",
        db_constraint=False,
        db_index=False,  # the (topic, partition_index) unique index serves topic lookups
    )
    partition_index = models.IntegerField()
    # Deliberately unindexed: a leader change then stays a heap-only update, and filters on
    # these columns scan a table of a few hundred bytes per partition.
    leader = models.IntegerField()
    leader_epoch = models.IntegerField(default=0)
    partition_epoch = models.IntegerField(default=0)
    replicas = models.JSONField(default=list)
    isr = models.JSONField(default=list)
    offline_replicas = models.JSONField(default=list)
    # ",1,2,3,": lets "partitions with a replica on broker 2" be a portable LIKE '%,2,%'.
    replica_ids = models.CharField(max_length=4000, default=",")
    offline_ids = models.CharField(max_length=4000, default=",")
    replica_count = models.IntegerField(default=0)
    offline_replica_count = models.IntegerField(default=0)
    is_canary = models.BooleanField(default=False)
    canary_isolated = models.BooleanField(default=False)  # every replica on a canary broker
    # For the health filters: ISR size (under-replicated: below replica_count; under or at
    # min ISR: against the topic's min.insync.replicas) and the first replica.
    isr_count = models.IntegerField(default=0)
    preferred_leader = models.IntegerField(default=-1)
    # Each replica's log dir id once its broker assigned it (AssignReplicasToDirs), in the
    # replicas' order; [] while every replica is in its broker's default dir.
    directories = models.JSONField(default=list)
    # A reassignment in progress (KIP-455): the replicas being added and removed; [] when none.
    # `reassigning` says there is one, and indexes the few partitions that move (the
    # reassignments list reads that index, never the table).
    adding_replicas = models.JSONField(default=list)
    removing_replicas = models.JSONField(default=list)
    reassigning = models.BooleanField(default=False)

    class Meta:
        db_table = "cp_partition"
        ordering = ["topic_id", "partition_index"]
        constraints = [
            models.UniqueConstraint(
                fields=["topic", "partition_index"], name="cp_partition_topic_index"
            )
        ]
        indexes = [
            models.Index(
                fields=["topic", "partition_index"],
                name="cp_partition_reassigning",
                condition=models.Q(reassigning=True),
            )
        ]


class PendingReplicaStateChange(models.Model):
    """An AlterReplicaState that passed validation and waits for the controller (KIP-589 applies
    it asynchronously). The controller takes every waiting one in one batch, in one commit."""

    request_id = models.CharField(max_length=128)
    broker_id = models.IntegerField()
    broker_epoch = models.BigIntegerField()
    payload = models.JSONField()
    principal = models.CharField(max_length=255)
    client_id = models.CharField(max_length=255, blank=True, default="")
    client_host = models.CharField(max_length=64, blank=True, default="")
    received_ms = models.BigIntegerField()

    class Meta:
        db_table = "cp_pending_replica_state"
        ordering = ["id"]
        constraints = [
            # A broker's retry of a report waits once; request ids belong to their principal,
            # so another principal's report with the same id waits as a report of its own.
            models.UniqueConstraint(
                fields=["principal", "request_id"], name="cp_pending_replica_state_request"
            )
        ]


# --- cluster health: projections of the controller's health index ---------------------------
class HealthCountsFields(models.Model):
    """Partition counts as Kafka's gauges name them (controlplane.controller.health)."""

    partitions = models.IntegerField(default=0)
    under_replicated_partitions = models.IntegerField(default=0)
    under_min_isr_partitions = models.IntegerField(default=0)
    at_min_isr_partitions = models.IntegerField(default=0)
    leaderless_partitions = models.IntegerField(default=0)
    preferred_replica_imbalance = models.IntegerField(default=0)
    offline_replicas = models.IntegerField(default=0)
    offline_partitions = models.IntegerField(default=0)
    canary_not_isolated = models.IntegerField(default=0)  # KIP-1095

    class Meta:
        abstract = True


class TopicHealth(HealthCountsFields):
    """One topic's health, with its effective min.insync.replicas."""

    topic = models.OneToOneField(
        Topic,
        primary_key=True,
        on_delete=models.DO_NOTHING,
        db_constraint=False,
        related_name="health",
    )
    min_insync_replicas = models.IntegerField(default=1)

    class Meta:
        db_table = "cp_topic_health"


class ClusterHealth(HealthCountsFields):
    """The whole cluster's health: one row, written by the controller's commits (absent until
    the first commit of a controller that counted it)."""

    id = models.PositiveSmallIntegerField(primary_key=True, default=1)
    offline_log_dirs = models.IntegerField(default=0)
    updated_ms = models.BigIntegerField(default=0)

    class Meta:
        db_table = "cp_cluster_health"


class BrokerLoad(models.Model):
    """What one broker holds and leads (brokers holding nothing have no row)."""

    broker_id = models.IntegerField(primary_key=True)
    leaders = models.IntegerField(default=0)
    replicas = models.IntegerField(default=0)
    in_sync_replicas = models.IntegerField(default=0)
    offline_replicas = models.IntegerField(default=0)
    preferred_leaders = models.IntegerField(default=0)
    under_replicated_partitions = models.IntegerField(default=0)  # of those it leads
    under_min_isr_partitions = models.IntegerField(default=0)  # of those it leads
    offline_log_dirs = models.IntegerField(default=0)

    class Meta:
        db_table = "cp_broker_load"
        ordering = ["broker_id"]


class HealthSample(models.Model):
    """The cluster's health at the end of each minute a commit changed it, and the leader
    elections committed in that minute: the trends the pages chart. A minute without a row
    changed nothing (the values carry over)."""

    minute_ms = models.BigIntegerField(primary_key=True)  # the minute's start, epoch ms
    under_replicated_partitions = models.IntegerField(default=0)
    under_min_isr_partitions = models.IntegerField(default=0)
    at_min_isr_partitions = models.IntegerField(default=0)
    leaderless_partitions = models.IntegerField(default=0)
    preferred_replica_imbalance = models.IntegerField(default=0)
    offline_log_dirs = models.IntegerField(default=0)
    leader_elections = models.IntegerField(default=0)
    unclean_leader_elections = models.IntegerField(default=0)

    class Meta:
        db_table = "cp_health_sample"
        ordering = ["minute_ms"]
