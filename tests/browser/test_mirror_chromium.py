"""The mirror pages in a real (Debian) Chromium (issue 13, point 7): the picture of clusters and
flows, a flow's arrow leads to its page, a node joining shows up without a reload, the
configuration's references are marked, and pausing from the page shows on the picture."""

from __future__ import annotations

from typing import Any

import pytest

from tests.browser.fixtures import ControlPlane, chromium_page, require_chromium

pytestmark = pytest.mark.browser

TEXT = """clusters = A, B
A.bootstrap.servers = http://127.0.0.1:18001
A.token = ${env:MM2_A_TOKEN}
B.bootstrap.servers = http://127.0.0.1:18002
config.providers = env
config.providers.env.class = org.apache.kafka.common.config.provider.EnvVarConfigProvider
A->B.enabled = true
A->B.topics = orders.*
mm.rest.host.name = ${env:MM2_REST_HOST}
"""


def join(api: Any, member: str, host: str) -> None:
    body = {
        "member_id": member,
        "worker_id": f"{host}/A__B",
        "rest_url": f"http://{host}:8083",
        "session_timeout_ms": 60000,
    }
    answer = api.post("/api/v1/mirror/groups/A/B/join", json=body).json()
    assert answer["error_code"] == 0, answer


@pytest.mark.django_db(transaction=True)
def test_flows_picture_flow_page_and_pause(control_plane: ControlPlane) -> None:
    from playwright.sync_api import expect

    from mirror.members import local_members

    local_members().clear()
    executable = require_chromium()
    base = control_plane.base
    control_plane.store_mirror_config(TEXT)
    join(control_plane.api, "m1", "127.0.0.2")

    with chromium_page(executable, height=1000) as page:
        control_plane.login(page, "/ui/mirror/")
        picture = page.get_by_test_id("mirror-picture")
        expect(picture).to_be_visible()
        expect(page.locator('[data-testid=cluster][data-alias="A"]')).to_be_visible()
        expect(page.locator('[data-testid=cluster][data-alias="B"]')).to_be_visible()
        arrow = page.locator('[data-testid=flow-arrow][data-flow="A->B"]')
        expect(arrow).to_have_attribute("data-health", "lagging")  # no assignment yet
        expect(page.locator("#flow-A-B [data-testid=node-count]")).to_have_text("1")
        join(control_plane.api, "m2", "127.0.0.3")  # the page follows without a reload
        expect(page.locator("#flow-A-B [data-testid=node-count]")).to_have_text("2")

        arrow.locator("text").click()  # the arrow's label links to its page
        expect(page).to_have_url(f"{base}/ui/mirror/A/B/")
        expect(page.get_by_test_id("leader")).to_have_text("127.0.0.2/A__B")
        expect(page.locator('tr[data-worker-id="127.0.0.3/A__B"]')).to_be_visible()
        source_config = page.get_by_test_id("config-MirrorSourceConnector")
        reference = source_config.locator("code.ref", has_text="${env:MM2_A_TOKEN}")
        expect(reference).to_be_visible()
        background = reference.evaluate("e => getComputedStyle(e).backgroundColor")
        assert background not in ("rgba(0, 0, 0, 0)", "transparent")  # marked as a reference

        page.get_by_test_id("pause").click()
        expect(page.get_by_test_id("messages")).to_contain_text("Flow A->B paused")
        expect(page.get_by_test_id("flow-paused")).to_be_visible()
        page.goto(f"{base}/ui/mirror/")
        expect(page.locator('[data-testid=flow-arrow][data-flow="A->B"]')).to_have_attribute(
            "data-health", "paused"
        )
        expect(page.locator('[data-flow="A->B"] path[stroke-dasharray]')).to_have_attribute(
            "stroke-dasharray", "8 6"
        )
