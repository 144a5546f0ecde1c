"""Client quotas: the projection of ClientQuotaRecord (configs themselves stay in the runtime,
which reads them for its own settings)."""

from __future__ import annotations

from django.db import models


class ClientQuota(models.Model):
    """Projection of ClientQuotaRecord: one quota key of one entity.

    `id` is the canonical JSON of `[entity, key]`; `entity` the sorted `[entity type, name]`
    pairs (name null for the default entity), `entity_key` the canonical JSON of `entity`."""

    id = models.TextField(primary_key=True)
    entity = models.JSONField()
    entity_key = models.TextField(db_index=True)
    key = models.CharField(max_length=64)
    value = models.FloatField()

    class Meta:
        db_table = "cp_client_quota"
        ordering = ["entity_key", "key"]
