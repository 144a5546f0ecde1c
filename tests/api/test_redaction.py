"""Secrets written as configs never leave through the public metadata log or the UI."""

from __future__ import annotations

from typing import Any

import pytest

from tests.conftest import Api

pytestmark = pytest.mark.django_db

SECRET = "s3cr3t-signing-key-value"


def test_sensitive_config_values_are_redacted_in_the_public_log_and_the_ui(
    api: Api, client: Any, tokens: dict[str, str]
) -> None:
    status, body = api.post(
        "/api/v1/incremental-alter-configs",
        {
            "resources": [
                {
                    "resource_type": "BROKER",
                    "resource_name": "",
                    "configs": [
                        {
                            "name": "delegation.token.secret.key",
                            "config_operation": "SET",
                            "value": SECRET,
                        }
                    ],
                }
            ]
        },
        token=tokens["admin"],
    )
    assert status == 200 and body["responses"][0]["error_code"] == 0, body
    status, log = api.get("/api/v1/metadata-log?type=ConfigRecord", token=tokens["admin"])
    assert status == 200
    values = [r["data"]["value"] for r in log["results"]]
    assert values == ["(redacted)"]
    assert SECRET not in str(log)
    client.post("/ui/login/", {"principal": "admin", "token": tokens["admin"]})
    page = client.get("/ui/brokers/").content.decode() + client.get("/ui/").content.decode()
    assert SECRET not in page
