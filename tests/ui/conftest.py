"""Fixtures for the server-rendered UI through Django's test client (no browser)."""

from __future__ import annotations

from typing import Any

import pytest


def ui_login(client: Any, name: str, token: str) -> None:
    """Log a Django test client in through the UI's login form."""
    response = client.post("/ui/login/", {"name": name, "token": token})
    assert response.status_code == 302, response.content[:500]


@pytest.fixture
def admin_client(client: Any, tokens: dict[str, str]) -> Any:
    ui_login(client, "admin", tokens["admin"])
    return client
