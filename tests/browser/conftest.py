"""Fixtures for the tests that drive a real Chromium (Playwright); every test here is marked
`browser`. The UI through Django's test client is tested in tests/ui.

The set-up itself (Chromium, the live server's listeners, logging in, registering brokers) is in
tests/browser/fixtures.py; this file makes its fixtures known to every test here."""

from __future__ import annotations

import os

from tests.browser.fixtures import (
    CHROMIUM,
    CHROMIUM_ARGS,
    TIMEOUT_MS,
    chromium_page,
    control_plane,
    internal_server,
    live_cluster,
    require_chromium,
)

# The fixtures, and what other tests (tests/spark) import from here.
__all__ = [
    "CHROMIUM",
    "CHROMIUM_ARGS",
    "TIMEOUT_MS",
    "chromium_page",
    "control_plane",
    "internal_server",
    "live_cluster",
    "require_chromium",
]

# Playwright's sync API runs an event loop in the test thread; Django's ORM calls from that
# thread (fixtures, live server setup) must still be allowed.
os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = "true"
