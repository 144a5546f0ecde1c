"""Secrets never leave through the public metadata log or the UI: the node's token key is no
record at all, and a sensitive value an older log holds (the token key, before migration 0013
made it a deletion) is shown redacted."""

from __future__ import annotations

from typing import Any

import pytest

from tests.conftest import Api
from tests.legacy_token_key import older_version_sets_the_key

pytestmark = pytest.mark.django_db

SECRET = "s3cr3t-signing-key-value"


def test_sensitive_config_values_are_redacted_in_the_public_log_and_the_ui(
    api: Api, client: Any, tokens: dict[str, str], token_secret_key: str
) -> None:
    older_version_sets_the_key(SECRET)
    status, log = api.get("/api/v1/metadata-log?type=ConfigRecord", token=tokens["admin"])
    assert status == 200
    values = [r["data"]["value"] for r in log["results"]]
    assert values == ["(redacted)"]
    assert SECRET not in str(log) and token_secret_key not in str(log)
    client.post("/ui/login/", {"principal": "admin", "token": tokens["admin"]})
    page = client.get("/ui/brokers/").content.decode() + client.get("/ui/").content.decode()
    page += client.get("/ui/configs/brokers/default/").content.decode()
    assert SECRET not in page and token_secret_key not in page
