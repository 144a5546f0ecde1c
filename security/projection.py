"""The delegation token projection (cp_delegation_token) of DelegationTokenRecord (the HMAC is
never stored), and the SCRAM credentials' (cp_scram_credential) of UserScramCredentialRecord."""

from __future__ import annotations

import functools
import operator
from collections.abc import Iterator

from django.db.models import Q

from controlplane.controller.image import MetadataDelta, MetadataImage
from controlplane.controller.records import DelegationTokenRecord
from controlplane.controller.scram_records import UserScramCredentialRecord
from controlplane.runtime.projections import AppliedWrites, Write
from security.models import DelegationToken, ScramCredential

TOKEN_FIELDS = [
    "token_id",
    "owner",
    "requester",
    "renewers",
    "issue_timestamp",
    "max_timestamp",
    "expiration_timestamp",
]


class TokenProjection:
    """cp_delegation_token: one row per live delegation token (no HMAC)."""

    name = "delegation_tokens"
    tables: tuple[str, ...] = ("cp_delegation_token",)

    def prepare(
        self, delta: MetadataDelta, applied: AppliedWrites, timestamp_ms: int
    ) -> list[Write]:
        if not delta.changed_delegation_tokens:
            return []
        removed = [k for k, v in delta.changed_delegation_tokens.items() if v is None]
        rows = [
            DelegationToken(
                token_id=t.token_id,
                owner=t.owner,
                requester=t.requester,
                renewers=list(t.renewers),
                issue_timestamp=t.issue_timestamp,
                max_timestamp=t.max_timestamp,
                expiration_timestamp=t.expiration_timestamp,
            )
            for t in delta.changed_delegation_tokens.values()
            if t is not None
        ]
        return [functools.partial(_write_tokens, rows, removed)]

    def load(self, image: MetadataImage) -> None:
        for token in delegation_token_rows():
            image.delegation_tokens[token.token_id] = token


def _write_tokens(rows: list[DelegationToken], removed: list[str]) -> None:
    if removed:
        DelegationToken.objects.filter(token_id__in=removed).delete()
    if rows:
        DelegationToken.objects.bulk_create(
            rows,
            update_conflicts=True,
            unique_fields=["token_id"],
            update_fields=TOKEN_FIELDS[1:],
        )


def delegation_token_rows() -> Iterator[DelegationTokenRecord]:
    """Every live token from the projection, as its record."""
    for row in DelegationToken.objects.values(*TOKEN_FIELDS).iterator(chunk_size=2000):
        row["renewers"] = tuple(row["renewers"])
        yield DelegationTokenRecord(**row)


SCRAM_FIELDS = ["name", "mechanism", "salt", "stored_key", "server_key", "iterations"]


class ScramProjection:
    """cp_scram_credential: one row per user and mechanism (what SCRAM logins are checked
    against on the control plane's own Kafka listener)."""

    name = "scram_credentials"
    tables: tuple[str, ...] = ("cp_scram_credential",)

    def prepare(
        self, delta: MetadataDelta, applied: AppliedWrites, timestamp_ms: int
    ) -> list[Write]:
        changed = delta.changed_scram_credentials
        if not changed:
            return []
        removed = [key for key, credential in changed.items() if credential is None]
        rows = [
            ScramCredential(**{field: getattr(c, field) for field in SCRAM_FIELDS})
            for c in changed.values()
            if c is not None
        ]
        return [functools.partial(_write_credentials, rows, removed)]

    def load(self, image: MetadataImage) -> None:
        for credential in scram_credential_rows():
            image.scram_credentials[(credential.name, credential.mechanism)] = credential


def _write_credentials(rows: list[ScramCredential], removed: list[tuple[str, str]]) -> None:
    if removed:  # one statement, whatever the number of pairs
        pairs = [Q(name=name, mechanism=mechanism) for name, mechanism in removed]
        ScramCredential.objects.filter(functools.reduce(operator.or_, pairs)).delete()
    if rows:
        ScramCredential.objects.bulk_create(
            rows,
            update_conflicts=True,
            unique_fields=["name", "mechanism"],
            update_fields=SCRAM_FIELDS[2:],
        )


def scram_credential_rows() -> Iterator[UserScramCredentialRecord]:
    """Every credential from the projection, as its record."""
    rows = ScramCredential.objects.values(*SCRAM_FIELDS).order_by("name", "mechanism")
    for row in rows.iterator(chunk_size=2000):
        yield UserScramCredentialRecord(**row)
