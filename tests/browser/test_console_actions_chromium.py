"""Every action of the console, end to end in Debian's Chromium: create a topic (after a check),
add partitions, a preferred election for one partition, an unclean election for a topic, delete
the topic by typing its name, unregister a broker. Each is the API's own request, made as the
logged-in principal and audited; each destructive one asks first, in the same way."""

from __future__ import annotations

import re

import pytest

from tests.browser.fixtures import LiveCluster, logged_in

pytestmark = pytest.mark.browser


def audited() -> list[tuple[str, str, str, str]]:
    from audit.models import AuditEvent

    return [
        (e.api, e.principal, e.client_id, e.outcome)
        for e in AuditEvent.objects.filter(client_id="ui").order_by("id")
    ]


@pytest.mark.django_db(transaction=True)
def test_every_action_end_to_end(live_cluster: LiveCluster) -> None:
    from playwright.sync_api import expect

    from replicas.models import Partition

    base = live_cluster.base
    api, brokers = live_cluster.api, live_cluster.brokers
    for broker_id in (1, 2, 3):
        brokers.register(broker_id)
    with logged_in(live_cluster, "/ui/topics/", height=900) as page:
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
        expect(page.get_by_test_id("confirmation")).to_contain_text("Partitions are never removed")
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
