"""SCRAM credentials' records (KIP-554): Kafka's UserScramCredentialRecord and
RemoveUserScramCredentialRecord, and Kafka's SCRAM mechanisms.

A credential is what Kafka's ScramControlManager writes: the user, the mechanism, the salt the
client chose, the stored key and the server key derived from the salted password the client
sent, and the iteration count. The salted password itself is never a record (nor the password).
The salt and the two keys are secrets: stock brokers need them (they log SCRAM users in from
their image of the log, as Kafka's brokers do), and nothing that shows records to people or
tools does (`SECRET_FIELDS`: the public log, the UI, exports and the REST metadata fetch show
them as "(redacted)", as Kafka's RecordRedactor does).

Bytes travel as base64 text, the form every house record keeps its data in (JSON).
"""

from __future__ import annotations

import dataclasses
from typing import ClassVar

from controlplane.controller.records import Record, register_record_type

SCRAM_SHA_256 = "SCRAM-SHA-256"
SCRAM_SHA_512 = "SCRAM-SHA-512"
# Kafka's org.apache.kafka.clients.admin.ScramMechanism: its int8 type on the wire.
MECHANISM_TYPES = {"UNKNOWN": 0, SCRAM_SHA_256: 1, SCRAM_SHA_512: 2}
MECHANISMS = (SCRAM_SHA_256, SCRAM_SHA_512)
# Kafka's MetadataVersion.IBP_3_5_IV2 (isScramSupported): the first level with SCRAM records.
SCRAM_METADATA_VERSION = 11
# The fields no reader but a broker and the controller may see.
SECRET_FIELDS = ("salt", "stored_key", "server_key")
USER_SCRAM_CREDENTIAL_RECORD = "UserScramCredentialRecord"


@register_record_type
@dataclasses.dataclass(frozen=True, slots=True)
class UserScramCredentialRecord(Record):
    """One user's credential for one mechanism, created or replaced."""

    TYPE: ClassVar[str] = USER_SCRAM_CREDENTIAL_RECORD
    name: str
    mechanism: str  # SCRAM-SHA-256 or SCRAM-SHA-512
    salt: str  # base64
    stored_key: str  # base64: H(HMAC(salted password, "Client Key"))
    server_key: str  # base64: HMAC(salted password, "Server Key")
    iterations: int

    def __repr__(self) -> str:  # a record in a log line or a traceback shows no secret
        return (
            f"UserScramCredentialRecord(name={self.name!r}, mechanism={self.mechanism!r}, "
            f"salt=(redacted), stored_key=(redacted), server_key=(redacted), "
            f"iterations={self.iterations})"
        )


@register_record_type
@dataclasses.dataclass(frozen=True, slots=True)
class RemoveUserScramCredentialRecord(Record):
    """One user's credential for one mechanism, deleted."""

    TYPE: ClassVar[str] = "RemoveUserScramCredentialRecord"
    name: str
    mechanism: str
