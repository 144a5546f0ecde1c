"""Fixtures for the tests that drive a real Chromium (Playwright); every test here is marked
`browser`. The UI through Django's test client is tested in tests/ui."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from typing import Any

import pytest

# Playwright's sync API runs an event loop in the test thread; Django's ORM calls from that
# thread (fixtures, live server setup) must still be allowed.
os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = "true"

CHROMIUM = os.environ.get("CP_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--no-first-run",
    "--disable-sync",
    "--disable-quic",
]


def require_chromium() -> str:
    """Debian's Chromium; missing fails the test under CP_REQUIRE_SERVICES=1, else skips it."""
    if os.path.isfile(CHROMIUM) and os.access(CHROMIUM, os.X_OK):
        return CHROMIUM
    message = f"{CHROMIUM} is missing (apt-get install -y chromium); never `playwright install`"
    if os.environ.get("CP_REQUIRE_SERVICES") == "1":
        pytest.fail(f"{message} and CP_REQUIRE_SERVICES=1")
    pytest.skip(message)


TIMEOUT_MS = 10_000


@contextlib.contextmanager
def chromium_page(executable: str, *, height: int = 800) -> Iterator[Any]:
    """A page in Debian's Chromium (Playwright), closed with the browser afterwards."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=executable, args=CHROMIUM_ARGS)
        try:
            page = browser.new_context(viewport={"width": 1280, "height": height}).new_page()
            page.set_default_timeout(TIMEOUT_MS)
            yield page
        finally:
            browser.close()


@pytest.fixture
def internal_server(live_server: Any, settings: Any) -> Iterator[str]:
    """The internal listener beside `live_server` (the public one), as in production: a second
    live server thread whose port is this test's CP_INTERNAL_PORT, so the brokers' API answers
    there and only there. Yields its URL."""
    from pytest_django.live_server_helper import LiveServer

    server = LiveServer("localhost")
    try:
        settings.CP_INTERNAL_PORT = server.thread.port
        yield server.url
    finally:
        server.stop()
