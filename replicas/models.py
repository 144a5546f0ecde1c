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

    class Meta:
        db_table = "cp_partition"
        ordering = ["topic_id", "partition_index"]
        constraints = [
            models.UniqueConstraint(
                fields=["topic", "partition_index"], name="cp_partition_topic_index"
            )
        ]

    @property
    def is_leaderless(self) -> bool:
        return self.leader == -1


class PendingReplicaStateChange(models.Model):
    """An AlterReplicaState that passed validation and waits for the controller (KIP-589 applies
    it asynchronously). The controller takes every waiting one in one batch, in one commit."""

    request_id = models.CharField(max_length=128, unique=True)
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
