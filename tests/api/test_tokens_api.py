"""Create, renew, expire and describe delegation tokens over HTTP, and the hourly sweep."""

from __future__ import annotations

import json
import time
from typing import Any

import pytest

from controlplane.models import MetadataRecord
from controlplane.runtime.replay import metadata_verify
from controlplane.token_tasks import expire_delegation_tokens
from security.models import DelegationToken
from tests.conftest import TOKEN_SECRET_KEY

pytestmark = pytest.mark.django_db

CREATE = "/api/v1/create-delegation-token"
RENEW = "/api/v1/renew-delegation-token"
EXPIRE = "/api/v1/expire-delegation-token"
DESCRIBE = "/api/v1/describe-delegation-token"


def user(name: str) -> dict[str, str]:
    return {"principal_type": "User", "principal_name": name}


def post(api: Any, path: str, token: str, **body: Any) -> dict[str, Any]:
    status, answer = api.post(path, body, token=token)
    assert status == 200, answer
    return dict(answer)


def describe(api: Any, token: str, owners: Any = None) -> list[dict[str, Any]]:
    answer = post(api, DESCRIBE, token, owners=owners)
    assert answer["error_code"] == 0, answer
    return list(answer["tokens"])


def test_disabled_without_a_secret(api, tokens):
    assert post(api, CREATE, tokens["alice"])["error_code"] == 61
    assert post(api, RENEW, tokens["alice"], hmac="AAAA")["error_code"] == 61
    assert post(api, EXPIRE, tokens["alice"], hmac="AAAA")["error_code"] == 61
    assert post(api, DESCRIBE, tokens["alice"])["error_code"] == 61
    assert not DelegationToken.objects.exists()


def test_create_renew_expire_describe(api, tokens, token_secret_key):
    created = post(api, CREATE, tokens["alice"], renewers=[user("admin")])
    assert created["error_code"] == 0, created
    assert created["principal_name"] == "alice" and created["hmac"]
    assert created["expiry_timestamp_ms"] - created["issue_timestamp_ms"] == 86_400_000
    row = DelegationToken.objects.get()
    assert row.owner == "User:alice" and row.renewers == ["User:admin"]

    (seen,) = describe(api, tokens["alice"])
    assert seen["token_id"] == created["token_id"] and seen["hmac"] is None
    assert seen["renewers"] == [user("admin")]
    assert describe(api, tokens["admin"], owners=[user("alice")])[0]["token_id"] == seen["token_id"]

    renewed = post(api, RENEW, tokens["admin"], hmac=created["hmac"], renew_period_ms=60_000)
    assert renewed["error_code"] == 0
    assert DelegationToken.objects.get().expiration_timestamp == renewed["expiry_timestamp_ms"]

    expired = post(api, EXPIRE, tokens["alice"], hmac=created["hmac"], expiry_time_period_ms=-1)
    assert expired["error_code"] == 0
    assert not DelegationToken.objects.exists()
    assert describe(api, tokens["alice"]) == []
    assert post(api, RENEW, tokens["alice"], hmac=created["hmac"])["error_code"] == 62
    assert metadata_verify() == []


def test_owner_mismatch_principal_type_and_visibility(api, tokens, token_secret_key):
    created = post(api, CREATE, tokens["admin"])
    mismatch = post(api, RENEW, tokens["alice"], hmac=created["hmac"], renew_period_ms=1)
    assert mismatch["error_code"] == 63
    assert post(api, EXPIRE, tokens["alice"], hmac=created["hmac"])["error_code"] == 63
    assert describe(api, tokens["alice"]) == []
    assert len(describe(api, tokens["admin"])) == 1

    bad = post(
        api, CREATE, tokens["admin"], renewers=[{"principal_type": "Group", "principal_name": "g"}]
    )
    assert bad["error_code"] == 67
    bad = post(api, CREATE, tokens["admin"], owner_principal_type="Group", owner_principal_name="g")
    assert bad["error_code"] == 67
    # Another owner needs CREATE_TOKENS on that user.
    other = post(
        api, CREATE, tokens["alice"], owner_principal_type="User", owner_principal_name="bob"
    )
    assert other["error_code"] == 65
    assert DelegationToken.objects.count() == 1
    # An empty owner (as Kafka's Java admin client sends it) is the requester, as in Kafka.
    own = post(api, CREATE, tokens["alice"], owner_principal_type="", owner_principal_name="")
    assert own["error_code"] == 0 and own["principal_name"] == "alice", own


def test_describe_tokens_of_another_owner_needs_describe_tokens(api, tokens, token_secret_key):
    """KIP-373: DESCRIBE_TOKENS on the USER resource of a token's owner lets a principal
    describe that owner's tokens, as Kafka's brokers filter them."""
    created = post(api, CREATE, tokens["admin"])
    assert describe(api, tokens["alice"]) == []
    granted = post(
        api,
        "/api/v1/create-acls",
        tokens["admin"],
        creations=[
            {
                "resource_type": "USER",
                "resource_name": "User:admin",
                "pattern_type": "LITERAL",
                "principal": "User:alice",
                "host": "*",
                "operation": "DESCRIBE_TOKENS",
                "permission_type": "ALLOW",
            }
        ],
    )
    assert granted["results"] == [{"error_code": 0, "error_message": None}], granted
    (seen,) = describe(api, tokens["alice"], owners=[user("admin")])
    assert seen["token_id"] == created["token_id"] and seen["hmac"] is None


def test_brokers_may_not_write_and_bodies_are_strict(api, tokens, token_secret_key):
    status, body = api.post(CREATE, {}, token=tokens["broker"])
    assert status == 403 and body["error_code"] == 31
    status, _ = api.post(CREATE, {}, token=None)
    assert status == 401
    for path, body in (
        (CREATE, {"max_lifetime_ms": "5"}),
        (RENEW, {}),
        (EXPIRE, {"hmac": 5}),
        (DESCRIBE, {"owners": [{"principal_type": "User"}]}),
        (CREATE, {"surprise": 1}),
    ):
        status, _ = api.post(path, body, token=tokens["alice"])
        assert status == 400, (path, body)


def test_expired_token_then_sweep(api, tokens, token_secret_key):
    short = post(api, CREATE, tokens["alice"], max_lifetime_ms=1)
    post(api, CREATE, tokens["alice"])
    time.sleep(0.01)
    expired = post(api, RENEW, tokens["alice"], hmac=short["hmac"], renew_period_ms=1000)
    assert expired["error_code"] == 66
    answer = expire_delegation_tokens()
    assert answer == {"error_code": 0, "removed": 1}
    assert list(DelegationToken.objects.values_list("token_id", flat=True)) != [short["token_id"]]
    assert DelegationToken.objects.count() == 1
    assert metadata_verify() == []


def test_hmac_never_in_the_metadata_log(api, tokens, token_secret_key):
    created = post(api, CREATE, tokens["alice"])
    post(api, RENEW, tokens["alice"], hmac=created["hmac"])
    assert MetadataRecord.objects.filter(record_type="DelegationTokenRecord").count() == 2
    status, log = api.get("/api/v1/metadata-log?page_size=100", token=tokens["admin"])
    assert status == 200
    text = json.dumps(log)
    assert created["token_id"] in text
    assert created["hmac"] not in text
    assert TOKEN_SECRET_KEY not in text


def test_the_hmac_is_not_kept_for_retries(
    api: Any, tokens: dict[str, str], token_secret_key: str
) -> None:
    """A create's HMAC is answered once: the stored answer that retries replay has none."""
    from controlplane.models import AppliedRequest

    status, created = api.post(
        "/api/v1/create-delegation-token",
        {"renewers": [], "max_lifetime_ms": -1},
        token=tokens["admin"],
        headers={"X-Request-ID": "create-once"},
    )
    assert status == 200 and created["error_code"] == 0 and created["hmac"], created
    stored = AppliedRequest.objects.get(request_id="create-once").response  # the answer's
    assert stored["hmac"] is None
    assert stored["token_id"] == created["token_id"]
    assert created["hmac"] not in str(stored)
