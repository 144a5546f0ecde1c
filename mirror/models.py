"""MirrorMaker 2's state tables: projections of the mirror records (KIP-710). Heartbeats and
status reports are not here (mirror.members)."""

from __future__ import annotations

from django.db import models


class MirrorMakerConfig(models.Model):
    """Projection of MirrorMakerConfigRecord: the one configuration text, as it was sent."""

    id = models.PositiveSmallIntegerField(primary_key=True, default=1)
    text = models.TextField()
    offset = models.BigIntegerField()

    class Meta:
        db_table = "cp_mirror_config"


class MirrorFlowGroup(models.Model):
    """Projection of a flow's group records: generation, leader, members, the leader's
    assignment, task configs (references unresolved) and connectors' target states."""

    source = models.CharField(max_length=255)
    target = models.CharField(max_length=255)
    generation = models.IntegerField()
    leader = models.CharField(max_length=255, blank=True, default="")
    members = models.JSONField(default=list)
    assignment_generation = models.IntegerField(default=0)
    assignments = models.JSONField(default=list)
    task_configs = models.JSONField(default=dict)
    target_states = models.JSONField(default=dict)
    offset = models.BigIntegerField()

    class Meta:
        db_table = "cp_mirror_flow"
        ordering = ["source", "target"]
        constraints = [
            models.UniqueConstraint(fields=["source", "target"], name="cp_mirror_flow_key")
        ]
