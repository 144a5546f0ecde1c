"""Every action of the console, end to end in Debian's Chromium: create a topic (after a check),
add partitions, a preferred election for one partition, an unclean election for a topic, delete
the topic by typing its name, unregister a broker. Each is the API's own request, made as the
logged-in principal and audited; each destructive one asks first, in the same way."""

from __future__ import annotations

import re
import uuid
from typing import Any

import pytest

from tests.browser.conftest import TIMEOUT_MS, chromium_page, require_chromium

pytestmark = pytest.mark.browser


class Brokers:
    """Brokers registered and heartbeating over the internal listener."""

    def __init__(self, internal: Any, cluster_id: str) -> None:
        self.internal = internal
        self.cluster_id = cluster_id
        self.epochs: dict[int, int] = {}

    def offset(self) -> int:
        from controlplane.models import Cluster

        return int(Cluster.objects.get(pk=1).last_offset)

    def register(self, broker_id: int) -> None:
        body = {
            "broker_id": broker_id,
            "cluster_id": self.cluster_id,
            "incarnation_id": str(uuid.uuid4()),
            "listeners": [
                {
                    "name": "PLAINTEXT",
                    "host": f"b{broker_id}",
                    "port": 9092,
                    "security_protocol": "PLAINTEXT",
                }
            ],
            "rack": None,
            "pod": "broker",
            "log_dirs": [str(uuid.uuid4())],
        }
        answer = self.internal.post("/internal/v1/broker-registration", json=body).json()
        assert answer["error_code"] == 0, answer
        self.epochs[broker_id] = answer["broker_epoch"]
        self.heartbeat(broker_id)

    def heartbeat(self, broker_id: int, **flags: Any) -> None:
        body = {
            "broker_id": broker_id,
            "broker_epoch": self.epochs[broker_id],
            "current_metadata_offset": self.offset(),
            **flags,
        }
        answer = self.internal.post("/internal/v1/broker-heartbeat", json=body).json()
        assert answer["error_code"] == 0, answer

    def rejoin(self, topic: str, broker_id: int) -> None:
        """Each leader takes the broker back into its partition's ISR."""
        from replicas.models import Partition

        for p in Partition.objects.filter(topic__name=topic):
            if broker_id in p.isr:
                continue
            body = {
                "broker_id": p.leader,
                "broker_epoch": self.epochs[p.leader],
                "topics": [
                    {
                        "topic_name": topic,
                        "partitions": [
                            {
                                "partition_index": p.partition_index,
                                "leader_epoch": p.leader_epoch,
                                "partition_epoch": p.partition_epoch,
                                "new_isr": [*p.isr, broker_id],
                            }
                        ],
                    }
                ],
            }
            answer = self.internal.post("/internal/v1/alter-partition", json=body).json()
            assert answer["topics"][0]["partitions"][0]["error_code"] == 0, answer


def audited() -> list[tuple[str, str, str, str]]:
    from audit.models import AuditEvent

    return [
        (e.api, e.principal, e.client_id, e.outcome)
        for e in AuditEvent.objects.filter(client_id="ui").order_by("id")
    ]


@pytest.mark.django_db(transaction=True)
def test_every_action_end_to_end(live_server: Any, internal_server: str) -> None:
    import httpx
    from playwright.sync_api import expect

    from controlplane.principals import principal_create
    from controlplane.runtime.controller import reset_runtime
    from controlplane.runtime.lease import cluster_get_or_create
    from replicas.models import Partition

    reset_runtime()
    executable = require_chromium()
    base = live_server.url
    admin_token = principal_create(name="admin", super_user=True)
    broker_token = principal_create(name="broker-a", broker=True)
    internal = httpx.Client(
        base_url=internal_server, headers={"Authorization": f"Bearer {broker_token}"}, timeout=30
    )
    api = httpx.Client(
        base_url=base, headers={"Authorization": f"Bearer {admin_token}"}, timeout=30
    )
    brokers = Brokers(internal, cluster_get_or_create().cluster_id)
    for broker_id in (1, 2, 3):
        brokers.register(broker_id)
    expect.set_options(timeout=TIMEOUT_MS)
    try:
        with chromium_page(executable, height=900) as page:
            page.goto(f"{base}/ui/topics/")
            page.fill("input[name=name]", "admin")
            page.fill("input[name=token]", admin_token)
            page.click("button[type=submit]")
            expect(page).to_have_url(f"{base}/ui/topics/")

            # Create: checked first (validate_only creates nothing), then created.
            page.get_by_test_id("new-topic").click()
            page.fill("#id_name", "orders")
            page.fill("#id_num_partitions", "6")
            page.fill("#id_replication_factor", "3")
            page.fill("#id_configs", "min.insync.replicas=2")
            page.get_by_test_id("check-topic").click()
            expect(page.get_by_test_id("checked-partitions")).to_have_text("6")
            expect(page.get_by_test_id("checked-rf")).to_have_text("3")
            assert api.get("/api/v1/topics/orders").status_code == 404
            page.get_by_test_id("create-topic").click()
            expect(page).to_have_url(f"{base}/ui/topics/orders/")
            expect(page.get_by_test_id("messages")).to_contain_text("Created topic orders")
            expect(page.get_by_test_id("min-isr")).to_have_text("2")
            assert api.get("/api/v1/topics/orders").json()["partition_count"] == 6

            # Add partitions: the confirmation says what follows, then adds them.
            page.get_by_test_id("add-partitions").click()
            expect(page.get_by_test_id("confirmation")).to_contain_text(
                "Partitions are never removed"
            )
            page.fill("#id_count", "8")
            page.get_by_test_id("confirm").click()
            expect(page.get_by_test_id("messages")).to_contain_text("orders now has 8 partitions.")
            expect(page.get_by_test_id("partition-count")).to_have_text("8")

            # Broker 1 is fenced and comes back: what it led moved and stays moved.
            preferred = {p.partition_index: p.preferred_leader for p in Partition.objects.all()}
            brokers.heartbeat(1, want_fence=True)
            brokers.heartbeat(1)
            brokers.rejoin("orders", 1)
            moved = sorted(
                p.partition_index
                for p in Partition.objects.all()
                if p.leader != preferred[p.partition_index]
            )
            assert moved
            expect(page.get_by_test_id("imbalanced-count")).to_have_text(str(len(moved)))

            # A preferred election for one partition, from its row.
            row = page.locator(f"#partition-{moved[0]}")
            row.get_by_test_id("elect-partition").click()
            expect(page.get_by_test_id("confirmation")).to_contain_text("nothing is lost")
            expect(page.locator("#id_partition")).to_have_value(str(moved[0]))
            page.get_by_test_id("confirm").click()
            expect(page.get_by_test_id("messages")).to_contain_text(
                "Preferred election on orders: 1 partition(s) elected"
            )
            leader = Partition.objects.get(partition_index=moved[0]).leader
            assert leader == preferred[moved[0]]
            expect(page.get_by_test_id("imbalanced-count")).to_have_text(str(len(moved) - 1))

            # An unclean election for the whole topic: typed, loud.
            page.get_by_test_id("elect-unclean").click()
            confirm = page.get_by_test_id("confirm")
            expect(page.get_by_test_id("confirmation")).to_have_class(re.compile("confirm-loud"))
            expect(confirm).to_be_disabled()
            page.fill("#confirm-typed", "order")
            expect(confirm).to_be_disabled()
            page.fill("#confirm-typed", "orders")
            expect(confirm).to_be_enabled()
            confirm.click()
            expect(page.get_by_test_id("messages")).to_contain_text("Unclean election on orders")

            # Delete: only once the name is typed.
            page.get_by_test_id("delete-topic").click()
            expect(page.get_by_test_id("confirmation")).to_contain_text("cannot be undone")
            expect(page.get_by_test_id("confirm")).to_be_disabled()
            page.fill("#confirm-typed", "orders")
            page.get_by_test_id("confirm").click()
            expect(page).to_have_url(f"{base}/ui/topics/")
            expect(page.get_by_test_id("messages")).to_contain_text("Deleted topic orders.")
            assert api.get("/api/v1/topics/orders").status_code == 404

            # Unregister a broker.
            page.goto(f"{base}/ui/brokers/3/")
            page.get_by_test_id("unregister").click()
            expect(page.get_by_test_id("confirmation")).to_contain_text("leaves every ISR")
            # A live broker: a loud warning with what it leads, and its id to type.
            expect(page.get_by_test_id("confirmation")).to_contain_text("Broker 3 is alive")
            expect(page.get_by_test_id("confirmation")).to_have_class(re.compile("confirm-loud"))
            expect(page.get_by_test_id("confirm")).to_be_disabled()
            page.fill("#confirm-typed", "3")
            page.get_by_test_id("confirm").click()
            expect(page).to_have_url(f"{base}/ui/brokers/")
            expect(page.get_by_test_id("messages")).to_contain_text("Unregistered broker 3.")
            expect(page.locator("#broker-3")).to_have_count(0)
            ids = [b["broker_id"] for b in api.get("/api/v1/brokers").json()["results"]]
            assert ids == [1, 2]

            # The timeline tells all of it, the deleted topic by name.
            page.goto(f"{base}/ui/timeline/?topic=orders")
            titles = page.get_by_test_id("event-title").all_inner_texts()
            assert any(t.startswith("Topic orders deleted (8 partitions)") for t in titles)
            assert any(t.startswith("Topic orders created: 6 partitions") for t in titles)
            assert any("2 partitions added" in t for t in titles)
    finally:
        internal.close()
        api.close()

    # Every one the API's own request, as the logged-in principal, audited. The unclean
    # election found every partition led already: Kafka answers ELECTION_NOT_NEEDED for each.
    assert audited() == [
        ("CreateTopics", "User:admin", "ui", "SUCCESS"),  # the check (validate_only)
        ("CreateTopics", "User:admin", "ui", "SUCCESS"),
        ("CreatePartitions", "User:admin", "ui", "SUCCESS"),
        ("ElectLeaders", "User:admin", "ui", "SUCCESS"),
        ("ElectLeaders", "User:admin", "ui", "FAILED"),
        ("DeleteTopics", "User:admin", "ui", "SUCCESS"),
        ("UnregisterBroker", "User:admin", "ui", "SUCCESS"),
    ]
