from __future__ import annotations

from django.db import models


class Broker(models.Model):
    """Projection of a broker's registration (RegisterBrokerRecord and its changes)."""

    broker_id = models.IntegerField(primary_key=True)
    incarnation_id = models.CharField(max_length=36)
    epoch = models.BigIntegerField()
    rack = models.CharField(max_length=255, null=True, blank=True)
    pod = models.CharField(max_length=32, default="broker", db_index=True)
    listeners = models.JSONField(default=list)
    log_dirs = models.JSONField(default=list)
    fenced = models.BooleanField(default=True)
    in_controlled_shutdown = models.BooleanField(default=False)
    controlled_shutdown_offset = models.BigIntegerField(default=-1)
    # What the broker reported running at registration (KIP-1095's canary rollouts).
    software_version = models.CharField(max_length=128, null=True, blank=True)
    # Reported offline by the broker's heartbeats (BrokerRegistrationChangeRecord).
    offline_log_dirs = models.JSONField(default=list)
    # The feature levels it supports, [name, min, max] each (RegisterBrokerRecord.Features).
    supported_features = models.JSONField(default=list)
    # KIP-1066: the log dirs its heartbeats say are cordoned (null until they say).
    cordoned_log_dirs = models.JSONField(null=True, default=None)

    class Meta:
        db_table = "cp_broker"
        ordering = ["broker_id"]

    @property
    def state(self) -> str:
        if self.fenced:
            return "FENCED"
        if self.in_controlled_shutdown:
            return "CONTROLLED_SHUTDOWN"
        return "UNFENCED"

    def __str__(self) -> str:
        return f"broker {self.broker_id}"
