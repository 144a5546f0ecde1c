"""The incident and event timeline: one row per committed write that says what the controller did
and why (controlplane.controller.timeline), and one row per partition it moved. A projection of
the metadata log, written in the controller's commit."""

from __future__ import annotations

from django.db import models


class TimelineEvent(models.Model):
    offset = models.BigIntegerField(primary_key=True)  # the write's first record
    last_offset = models.BigIntegerField()
    timestamp_ms = models.BigIntegerField()
    kind = models.CharField(max_length=32)
    severity = models.CharField(max_length=16)
    api = models.CharField(max_length=64)
    title = models.TextField()
    principal = models.CharField(max_length=255)
    client_id = models.CharField(max_length=255, blank=True, default="")
    request_id = models.CharField(max_length=128, blank=True, default="")
    # ",1,2,": the brokers it is about; ",orders,payments,": its topics (Kafka's topic names
    # have no commas), kept by name so a deleted topic is still found.
    broker_ids = models.TextField(default=",")
    topic_names = models.TextField(default=",")
    unclean = models.BooleanField(default=False)
    details = models.JSONField(default=dict)

    class Meta:
        db_table = "cp_timeline_event"
        ordering = ["-offset"]
        indexes = [models.Index(fields=["kind"], name="cp_timeline_kind")]

    @property
    def is_incident(self) -> bool:
        return self.severity in ("CRITICAL", "WARNING")


class TimelineMove(models.Model):
    """A partition an event changed: its leader and ISR before and after. For a replica marked
    offline (`failed_broker`), when and how it came back (`resolved_*`)."""

    event_offset = models.BigIntegerField()
    seq = models.IntegerField()  # its place in the event
    topic_id = models.CharField(max_length=36)
    topic_name = models.CharField(max_length=249)
    partition_index = models.IntegerField()
    previous_leader = models.IntegerField()
    leader = models.IntegerField()
    previous_isr = models.CharField(max_length=4000)  # "1,2,3"
    isr = models.CharField(max_length=4000)
    offline_added = models.CharField(max_length=4000, blank=True, default="")
    offline_cleared = models.CharField(max_length=4000, blank=True, default="")
    unclean = models.BooleanField(default=False)
    failed_broker = models.IntegerField(null=True)
    resolved_offset = models.BigIntegerField(null=True)
    resolved_ms = models.BigIntegerField(null=True)
    resolution = models.CharField(max_length=255, blank=True, default="")

    class Meta:
        db_table = "cp_timeline_move"
        ordering = ["event_offset", "seq"]
        constraints = [
            models.UniqueConstraint(fields=["event_offset", "seq"], name="cp_timeline_move_seq")
        ]
        indexes = [
            # Only the rows of replicas marked offline: a leader moving (a shutdown, an
            # election) writes a row with no failed broker, and an entry for it here, never
            # read, would be a third of what writing those rows costs the commit.
            models.Index(
                fields=["topic_id", "partition_index", "failed_broker"],
                name="cp_timeline_move_failed",
                condition=models.Q(failed_broker__isnull=False),
            )
        ]

    @staticmethod
    def ids(text: str) -> list[int]:
        return [int(b) for b in text.split(",") if b]

    @property
    def previous_isr_ids(self) -> list[int]:
        return self.ids(self.previous_isr)

    @property
    def isr_ids(self) -> list[int]:
        return self.ids(self.isr)

    @property
    def leader_changed(self) -> bool:
        return self.leader != self.previous_leader
