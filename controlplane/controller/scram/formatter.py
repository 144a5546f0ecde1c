"""SCRAM's arithmetic (RFC 5802, RFC 7677), as Kafka's ScramFormatter does it.

    SaltedPassword  = Hi(password, salt, iterations)        (PBKDF2 with the mechanism's HMAC)
    ClientKey       = HMAC(SaltedPassword, "Client Key")
    StoredKey       = H(ClientKey)
    ServerKey       = HMAC(SaltedPassword, "Server Key")
    ClientSignature = HMAC(StoredKey, AuthMessage)
    ClientProof     = ClientKey XOR ClientSignature
    ServerSignature = HMAC(ServerKey, AuthMessage)

A password is its UTF-8 bytes, unnormalized (Kafka's ScramFormatter.normalize does no SASLprep:
a password set by Kafka's tools logs in here, and the other way round). Iterations are Kafka's
bounds: at least 4096 (both mechanisms' minIterations), at most 16384 (ScramControlManager).
"""

from __future__ import annotations

import base64
import binascii
import dataclasses
import hashlib
import hmac

from controlplane.controller.scram_records import SCRAM_SHA_256, SCRAM_SHA_512

MIN_ITERATIONS = 4096
MAX_ITERATIONS = 16384
HASHES = {SCRAM_SHA_256: "sha256", SCRAM_SHA_512: "sha512"}


@dataclasses.dataclass(frozen=True, slots=True)
class ScramCredential:
    """What a server keeps of a user's password for one mechanism (Kafka's ScramCredential)."""

    salt: bytes
    stored_key: bytes
    server_key: bytes
    iterations: int

    def __repr__(self) -> str:
        return f"ScramCredential(salt=(redacted), keys=(redacted), iterations={self.iterations})"


def hash_name(mechanism: str) -> str:
    """hashlib's name of the mechanism's hash; KeyError for a mechanism Kafka does not know."""
    return HASHES[mechanism]


def hi(mechanism: str, password: bytes, salt: bytes, iterations: int) -> bytes:
    """RFC 5802's Hi(): PBKDF2 with HMAC of the mechanism's hash, one block."""
    return hashlib.pbkdf2_hmac(hash_name(mechanism), password, salt, iterations)


def hmac_of(mechanism: str, key: bytes, message: bytes) -> bytes:
    return hmac.new(key, message, hash_name(mechanism)).digest()


def digest_of(mechanism: str, data: bytes) -> bytes:
    return hashlib.new(hash_name(mechanism), data).digest()


def client_key(mechanism: str, salted_password: bytes) -> bytes:
    return hmac_of(mechanism, salted_password, b"Client Key")


def stored_key(mechanism: str, salted_password: bytes) -> bytes:
    return digest_of(mechanism, client_key(mechanism, salted_password))


def server_key(mechanism: str, salted_password: bytes) -> bytes:
    return hmac_of(mechanism, salted_password, b"Server Key")


def salted_password(mechanism: str, password: str, salt: bytes, iterations: int) -> bytes:
    """What Kafka's admin client sends for a password (AlterUserScramCredentials' upsertion)."""
    return hi(mechanism, password.encode("utf-8"), salt, iterations)


def credential_from_salted_password(
    mechanism: str, salt: bytes, salted: bytes, iterations: int
) -> ScramCredential:
    """The credential Kafka's ScramControlManager.finishUpsertion keeps of an upsertion."""
    return ScramCredential(
        salt, stored_key(mechanism, salted), server_key(mechanism, salted), iterations
    )


def credential_from_password(
    mechanism: str, password: str, salt: bytes, iterations: int
) -> ScramCredential:
    return credential_from_salted_password(
        mechanism, salt, salted_password(mechanism, password, salt, iterations), iterations
    )


def xor(left: bytes, right: bytes) -> bytes:
    if len(left) != len(right):
        raise ValueError("SCRAM proof of the wrong length")
    return bytes(a ^ b for a, b in zip(left, right, strict=True))


def client_proof(mechanism: str, salted: bytes, auth_message: bytes) -> bytes:
    """The proof a client sends in its final message (what a client computes)."""
    key = client_key(mechanism, salted)
    signature = hmac_of(mechanism, digest_of(mechanism, key), auth_message)
    return xor(key, signature)


def proof_matches(
    mechanism: str, credential: ScramCredential, auth_message: bytes, proof: bytes
) -> bool:
    """The server's check of a client's proof: H(proof XOR ClientSignature) == StoredKey, in
    constant time (Kafka's ScramSaslServer.verifyClientProof)."""
    signature = hmac_of(mechanism, credential.stored_key, auth_message)
    if len(proof) != len(signature):
        return False
    computed = digest_of(mechanism, xor(proof, signature))
    return hmac.compare_digest(computed, credential.stored_key)


def server_signature(mechanism: str, credential: ScramCredential, auth_message: bytes) -> bytes:
    return hmac_of(mechanism, credential.server_key, auth_message)


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def unb64(text: str) -> bytes:
    """Strict base64 (ValueError on anything else)."""
    try:
        return base64.b64decode(text.encode("ascii"), validate=True)
    except (binascii.Error, UnicodeEncodeError) as error:
        raise ValueError(f"not base64: {error}") from None
