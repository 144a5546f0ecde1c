"""Every page of the UI checked with axe-core in Debian's Chromium, in the light and the dark
colour scheme: no serious or critical violation of WCAG 2.1 A and AA (contrast included), and
none wider than a 1440 px window.
axe-core comes from the axe-playwright-python package (the project's test dependencies) and is
injected from that file: nothing is fetched."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import pytest

from tests.browser.fixtures import (
    TIMEOUT_MS,
    LiveCluster,
    chromium_page,
    require_chromium,
    submit_login,
)

pytestmark = pytest.mark.browser

WCAG = ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa"]
SERIOUS = ("serious", "critical")
SCHEMES = ("light", "dark")
# The page drawn dark: the scheme asked for, and the body's background dark (each channel
# under 64 of 255), not only asked for.
DARK = """
() => matchMedia('(prefers-color-scheme: dark)').matches
  && getComputedStyle(document.body).backgroundColor
       .match(/\\d+/g).slice(0, 3).every(v => Number(v) < 64)
"""


def axe_script() -> Path:
    import axe_playwright_python

    path = Path(axe_playwright_python.__file__).parent / "axe.min.js"
    assert path.is_file(), path
    return path


def violations(page: Any) -> list[dict[str, Any]]:
    # Through DevTools, not a <script>: the pages' CSP (script-src 'self') refuses inline ones.
    page.evaluate(axe_script().read_text())
    result = page.evaluate(
        "tags => axe.run(document, "
        "{runOnly: {type: 'tag', values: tags}, resultTypes: ['violations']})",
        WCAG,
    )
    return [v for v in result["violations"] if v.get("impact") in SERIOUS]


def describe(found: list[dict[str, Any]]) -> str:
    return "\n".join(
        f"{v['id']} ({v['impact']}): {v['help']} at "
        + "; ".join(n["target"][0] if n["target"] else "?" for n in v["nodes"][:5])
        for v in found
    )


def build_cluster(cluster: LiveCluster) -> dict[str, str]:
    """Brokers, topics, a failed log dir, a fenced broker, an ACL, a quota and a token: every
    page has something to show. Answers ids the pages need."""
    from security.models import DelegationToken

    brokers, api = cluster.brokers, cluster.api
    dirs = {}
    for broker_id in (1, 2, 3):
        dirs[broker_id] = str(uuid.uuid4())
        brokers.register(
            broker_id, heartbeat=False, rack=f"rack-{broker_id}", log_dirs=[dirs[broker_id]]
        )
    for broker_id in (1, 2, 3):
        brokers.heartbeat(broker_id)
    cluster.create_topics(
        {
            "name": "orders",
            "num_partitions": 6,
            "replication_factor": 3,
            "configs": [
                {"name": "min.insync.replicas", "value": "2"},
                {"name": "retention.ms", "value": "604800000"},
            ],
        },
        {"name": "events", "num_partitions": 3, "replication_factor": 1},
    )
    brokers.fail_replicas(2, "orders", [0, 1, 2])
    brokers.heartbeat(2, offline_log_dirs=[dirs[2]])
    brokers.heartbeat(3, want_fence=True)
    cluster.create_acls(
        {
            "resource_type": "TOPIC",
            "resource_name": "orders",
            "pattern_type": "LITERAL",
            "principal": "User:bob",
            "host": "*",
            "operation": "READ",
            "permission_type": "ALLOW",
        }
    )
    api.post(
        "/api/v1/alter-client-quotas",
        json={
            "entries": [
                {
                    "entity": [{"entity_type": "user", "entity_name": "bob"}],
                    "ops": [{"key": "producer_byte_rate", "value": 1048576.0}],
                }
            ]
        },
    )
    assert api.post("/api/v1/create-delegation-token", json={}).json()["error_code"] == 0

    from controlplane.models import Acl
    from timeline.models import TimelineEvent

    return {
        "acl_id": Acl.objects.get().id,
        "token_id": DelegationToken.objects.get().token_id,
        "event": str(
            TimelineEvent.objects.filter(kind="LOG_DIR_FAILURE", api="AlterReplicaState")
            .get()
            .offset
        ),
    }


@pytest.mark.django_db(transaction=True)
def test_every_page_has_no_serious_or_critical_violation(
    live_cluster: LiveCluster,
    token_secret_key: str,  # the node's key: the token page lists a token
) -> None:
    executable = require_chromium()
    base = live_cluster.base
    ids = build_cluster(live_cluster)
    pages = [
        "/ui/",
        "/ui/brokers/",
        "/ui/brokers/2/",
        "/ui/brokers/2/unregister/",
        "/ui/topics/",
        "/ui/topics/new/",
        "/ui/topics/orders/",
        "/ui/topics/orders/delete/",
        "/ui/topics/orders/partitions/",
        "/ui/topics/orders/elect/?type=PREFERRED",
        "/ui/topics/orders/elect/?type=UNCLEAN",
        "/ui/partitions/?under_replicated=true",
        "/ui/timeline/",
        f"/ui/timeline/{ids['event']}/",
        "/ui/charts/",
        "/ui/search/?q=orders",
        "/ui/configs/",
        "/ui/configs/topics/orders/",
        "/ui/configs/topics/orders/edit/",
        "/ui/configs/brokers/default/",
        "/ui/acls/",
        "/ui/acls/new/",
        "/ui/acls/new-client/",
        f"/ui/acls/{ids['acl_id']}/delete/",
        "/ui/quotas/",
        "/ui/quotas/set/",
        "/ui/tokens/",
        "/ui/tokens/new/",
        "/ui/tokens/renew/",
        f"/ui/tokens/expire/?token_id={ids['token_id']}",
        "/ui/audit/",
    ]
    found: dict[str, str] = {}
    with chromium_page(executable, height=900) as page:
        page.set_viewport_size({"width": 1440, "height": 900})
        page.goto(f"{base}/ui/login/")
        login = violations(page)
        if login:
            found["/ui/login/"] = describe(login)
        submit_login(page, live_cluster.admin_token)
        page.wait_for_url(f"{base}/ui/")
        # Both colour schemes (ui.css's prefers-color-scheme: dark), contrast included.
        for scheme in SCHEMES:
            page.emulate_media(color_scheme=scheme)
            for path in pages:
                response = page.goto(f"{base}{path}")
                assert response is not None and response.status == 200, path
                page.wait_for_load_state("load")
                page.wait_for_timeout(100)  # charts drawn
                where = f"{path} ({scheme})"
                assert page.evaluate(DARK) == (scheme == "dark"), where
                serious = violations(page)
                if serious:
                    found[where] = describe(serious)
                # At 1440 px nothing makes the page scroll sideways (wide tables scroll in
                # their card): the audit trail overflowed before.
                overflow = page.evaluate(
                    "document.documentElement.scrollWidth - document.documentElement.clientWidth"
                )
                if overflow > 0:
                    found[where] = (
                        f"{found.get(where, '')}\nthe page is {overflow} px too wide".strip()
                    )
        page.set_default_timeout(TIMEOUT_MS)
    assert not found, "\n\n".join(f"{path}:\n{text}" for path, text in found.items())
