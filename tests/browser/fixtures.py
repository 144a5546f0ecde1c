"""The browser tests' set-up, in one place: Debian's Chromium (Playwright), the live server's two
listeners, a principal logged in through the login form, brokers registered and heartbeating
over the internal listener, and the admin API requests the tests start from.

conftest.py makes the fixtures here (`internal_server`, `control_plane`, `live_cluster`) known to
every test under tests/browser; the helpers are imported from this module."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import httpx
import pytest

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
TIMEOUT_MS = 10_000
ADMIN = "admin"


def require_chromium() -> str:
    """Debian's Chromium; missing fails the test under CP_REQUIRE_SERVICES=1, else skips it."""
    if os.path.isfile(CHROMIUM) and os.access(CHROMIUM, os.X_OK):
        return CHROMIUM
    message = f"{CHROMIUM} is missing (apt-get install -y chromium); never `playwright install`"
    if os.environ.get("CP_REQUIRE_SERVICES") == "1":
        pytest.fail(f"{message} and CP_REQUIRE_SERVICES=1")
    pytest.skip(message)


@contextlib.contextmanager
def chromium_browser(executable: str) -> Iterator[Any]:
    """Debian's Chromium launched through Playwright, closed afterwards; Playwright's `expect`
    waits up to TIMEOUT_MS (a loaded machine may need more than its 5 s)."""
    from playwright.sync_api import expect, sync_playwright

    expect.set_options(timeout=TIMEOUT_MS)
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=executable, args=CHROMIUM_ARGS)
        try:
            yield browser
        finally:
            browser.close()


def new_page(browser: Any, *, width: int = 1280, height: int = 800, **context: Any) -> Any:
    """A page in a new context of `browser`, its actions waiting up to TIMEOUT_MS."""
    page = browser.new_context(viewport={"width": width, "height": height}, **context).new_page()
    page.set_default_timeout(TIMEOUT_MS)
    return page


@contextlib.contextmanager
def chromium_page(executable: str, *, width: int = 1280, height: int = 800) -> Iterator[Any]:
    """A page in Debian's Chromium (Playwright), closed with the browser afterwards."""
    with chromium_browser(executable) as browser:
        yield new_page(browser, width=width, height=height)


def submit_login(page: Any, token: str, *, name: str = ADMIN) -> None:
    """Fill in the login form the page shows and send it."""
    page.fill("input[name=name]", name)
    page.fill("input[name=token]", token)
    page.click("button[type=submit]")


def login(page: Any, url: str, token: str, *, name: str = ADMIN) -> None:
    """Open `url` (the login form comes first) and log in as `name`."""
    page.goto(url)
    submit_login(page, token, name=name)


@contextlib.contextmanager
def logged_in(plane: ControlPlane, path: str, *, height: int = 800) -> Iterator[Any]:
    """A page in Debian's Chromium, logged in as the admin at `path`, and there."""
    from playwright.sync_api import expect

    with chromium_page(require_chromium(), height=height) as page:
        plane.login(page, path)
        expect(page).to_have_url(f"{plane.base}{path}")
        yield page


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def listeners(host: str) -> list[dict[str, Any]]:
    return [{"name": "PLAINTEXT", "host": host, "port": 9092, "security_protocol": "PLAINTEXT"}]


class Brokers:
    """Brokers registered and heartbeating over the internal listener."""

    def __init__(self, internal: httpx.Client, cluster_id: str) -> None:
        self.internal = internal
        self.cluster_id = cluster_id
        self.epochs: dict[int, int] = {}

    def offset(self) -> int:
        from controlplane.models import Cluster

        return int(Cluster.objects.get(pk=1).last_offset)

    def post(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        """A request of the brokers' API, its 200 asserted; answers its JSON."""
        response = self.internal.post(f"/internal/v1/{path}", json=body)
        assert response.status_code == 200, response.text
        return dict(response.json())

    def register(
        self, broker_id: int, *, host: str | None = None, heartbeat: bool = True, **fields: Any
    ) -> int:
        """Register `broker_id` (listener `b<id>`, no rack, pod `broker`, one log dir unless
        `fields` say otherwise) and, with `heartbeat`, heartbeat it to UNFENCED. Answers its
        epoch."""
        from tests.conftest import registration_body

        body = registration_body(
            broker_id,
            self.cluster_id,
            **{"listeners": listeners(host or f"b{broker_id}"), "rack": None, **fields},
        )
        answer = self.post("broker-registration", body)
        assert answer["error_code"] == 0, answer
        self.epochs[broker_id] = answer["broker_epoch"]
        if heartbeat:
            assert self.heartbeat(broker_id)["is_fenced"] is False
        return self.epochs[broker_id]

    def heartbeat(self, broker_id: int, **flags: Any) -> dict[str, Any]:
        """A heartbeat caught up with the metadata log, `flags` added (want_fence, ...)."""
        from tests.conftest import heartbeat_body

        body = heartbeat_body(broker_id, self.epochs[broker_id], self.offset(), **flags)
        answer = self.post("broker-heartbeat", body)
        assert answer["error_code"] == 0, answer
        return answer

    def fail_replicas(
        self, broker_id: int, topic: str, partitions: list[int], *, reason: str = "disk"
    ) -> None:
        """AlterReplicaState: the broker's replicas of these partitions are offline."""
        body = {
            "broker_id": broker_id,
            "broker_epoch": self.epochs[broker_id],
            "new_state": 1,
            "reason": reason,
            "topics": [{"name": topic, "partitions": partitions}],
        }
        answer = self.post("alter-replica-state", body)
        assert answer["error_code"] == 0, answer

    def take_back(self, topic: str, partition: Any, broker_id: int) -> None:
        """The partition's leader takes the broker back into its ISR (AlterPartition)."""
        item = {
            "partition_index": partition.partition_index,
            "leader_epoch": partition.leader_epoch,
            "partition_epoch": partition.partition_epoch,
            "new_isr": [*partition.isr, broker_id],
        }
        body = {
            "broker_id": partition.leader,
            "broker_epoch": self.epochs[partition.leader],
            "topics": [{"topic_name": topic, "partitions": [item]}],
        }
        answer = self.post("alter-partition", body)
        assert answer["topics"][0]["partitions"][0]["error_code"] == 0, answer

    def rejoin(self, topic: str, broker_id: int) -> None:
        """Each leader takes the broker back into its partition's ISR."""
        from replicas.models import Partition

        for p in Partition.objects.filter(topic__name=topic):
            if broker_id not in p.isr:
                self.take_back(topic, p, broker_id)


@dataclass
class ControlPlane:
    """The live server's public listener, an admin's token and an API client as the admin."""

    base: str
    admin_token: str
    api: httpx.Client

    def login(self, page: Any, path: str = "/ui/", *, name: str = ADMIN, token: str = "") -> None:
        """Open `path` and log in through the form, as the admin unless told otherwise."""
        login(page, f"{self.base}{path}", token or self.admin_token, name=name)

    def create_topics(self, *topics: dict[str, Any], **request: Any) -> list[dict[str, Any]]:
        """CreateTopics; each topic's error code 0 is asserted. Answers the topics' answers."""
        response = self.api.post("/api/v1/create-topics", json={"topics": topics, **request})
        assert response.status_code == 200, response.text
        answers = list(response.json()["topics"])
        assert [t["error_code"] for t in answers] == [0] * len(topics), response.text
        return answers

    def set_cluster_config(self, name: str, value: str) -> dict[str, Any]:
        """IncrementalAlterConfigs: a cluster-wide dynamic broker config SET. Answers the
        resource's answer, refused or not."""
        response = self.api.post(
            "/api/v1/incremental-alter-configs",
            json={
                "resources": [
                    {
                        "resource_type": "BROKER",
                        "resource_name": "",
                        "configs": [{"name": name, "config_operation": "SET", "value": value}],
                    }
                ]
            },
        )
        assert response.status_code == 200, response.text
        return dict(response.json()["responses"][0])

    def alter_cluster_config(self, name: str, value: str) -> None:
        """set_cluster_config, its error code 0 asserted."""
        answer = self.set_cluster_config(name, value)
        assert answer["error_code"] == 0, answer

    def create_acls(self, *acls: dict[str, Any]) -> None:
        """CreateAcls; each creation's error code 0 is asserted."""
        answer = self.api.post("/api/v1/create-acls", json={"creations": acls}).json()
        assert [r["error_code"] for r in answer["results"]] == [0] * len(acls), answer

    def store_mirror_config(self, text: str) -> None:
        """The MirrorMaker configuration, as an operator stores it."""
        stored = self.api.put(
            "/api/v1/mirror/config",
            content=text.encode(),
            headers={"Content-Type": "text/plain"},
        )
        assert stored.status_code == 200, stored.text


@dataclass
class LiveCluster(ControlPlane):
    """ControlPlane, and the internal listener the brokers talk to with a broker's token."""

    internal: httpx.Client = field(kw_only=True)
    cluster_id: str = field(kw_only=True)
    brokers: Brokers = field(kw_only=True)


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


@pytest.fixture
def control_plane(live_server: Any) -> Iterator[ControlPlane]:
    """The live server on a fresh controller runtime, a super user `admin` and its API client."""
    from controlplane.principals import principal_create
    from controlplane.runtime.controller import reset_runtime

    reset_runtime()
    token = principal_create(name=ADMIN, super_user=True)
    with httpx.Client(base_url=live_server.url, headers=bearer(token), timeout=30) as api:
        yield ControlPlane(live_server.url, token, api)


@pytest.fixture
def live_cluster(internal_server: str, control_plane: ControlPlane) -> Iterator[LiveCluster]:
    """`control_plane` and its internal listener, a broker principal `broker-a` and the
    cluster's id: brokers register through `live_cluster.brokers`."""
    from controlplane.principals import principal_create
    from controlplane.runtime.lease import cluster_get_or_create

    broker_token = principal_create(name="broker-a", broker=True)
    cluster_id = cluster_get_or_create().cluster_id
    with httpx.Client(base_url=internal_server, headers=bearer(broker_token), timeout=30) as client:
        yield LiveCluster(
            control_plane.base,
            control_plane.admin_token,
            control_plane.api,
            internal=client,
            cluster_id=cluster_id,
            brokers=Brokers(client, cluster_id),
        )
