"""Delegation tokens and SCRAM credentials: the projections of DelegationTokenRecord and
UserScramCredentialRecord (ACLs and principals stay in the runtime, where authorization and
authentication sit below every app)."""

from __future__ import annotations

from django.db import models


class DelegationToken(models.Model):
    """Projection of DelegationTokenRecord: one live delegation token. Principals are
    "Type:name"; the HMAC is never stored (it is recomputable from the secret and the id)."""

    token_id = models.CharField(max_length=64, primary_key=True)
    owner = models.CharField(max_length=255, db_index=True)
    requester = models.CharField(max_length=255)
    renewers = models.JSONField(default=list)
    issue_timestamp = models.BigIntegerField()
    max_timestamp = models.BigIntegerField()
    expiration_timestamp = models.BigIntegerField()

    class Meta:
        db_table = "cp_delegation_token"
        ordering = ["issue_timestamp", "token_id"]


class ScramCredential(models.Model):
    """Projection of UserScramCredentialRecord (KIP-554): one user's credential for one
    mechanism, as the control plane's own Kafka listener checks SCRAM logins against it. The
    salt and the keys are secrets: no page, answer, export or log line shows them."""

    name = models.CharField(max_length=255)
    mechanism = models.CharField(max_length=16)
    salt = models.TextField()
    stored_key = models.TextField()
    server_key = models.TextField()
    iterations = models.IntegerField()

    class Meta:
        db_table = "cp_scram_credential"
        ordering = ["name", "mechanism"]
        constraints = [
            models.UniqueConstraint(fields=["name", "mechanism"], name="cp_scram_credential_key")
        ]
