"""The console's moving replicas (Django's test client, the real controller): the balance page
(each broker's replicas and preferred leaders, the spreads, the plans), a plan made from a
broker's page (drain, fill) and previewed (its moves as a diff, the skew before and after),
executed (a progress bar, a cancel) and refused with Kafka's error; reassignments in progress
on the topic's page and the partitions' (their adding and removing replicas)."""

from __future__ import annotations

import re
from typing import Any

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from balancer import services
from balancer.models import BalancePlan
from controlplane.authz import acl_cache
from replicas.selectors import REASSIGNMENT_LISTINGS
from tests.api.test_replication_api import Kafka

pytestmark = pytest.mark.django_db


@pytest.fixture
def kafka(api, tokens, register) -> Kafka:
    kafka = Kafka(api, tokens, register)
    kafka.register(1, 2, 3, 4)
    kafka.create_topic("orders", [[1 + i % 3, 1 + (i + 1) % 3] for i in range(6)])
    return kafka


@pytest.fixture
def no_jobs(monkeypatch: pytest.MonkeyPatch) -> list[tuple[Any, ...]]:
    """Executed plans' jobs are noted, not run (the page's part is to start and show them)."""
    sent: list[tuple[Any, ...]] = []
    from controlplane.runtime import executor

    monkeypatch.setattr(
        executor.executor(), "send_task", lambda name, *args, **kwargs: sent.append((name, args))
    )
    return sent


def html(response: Any) -> str:
    assert response.status_code == 200, response.content[:800]
    return str(response.content.decode())


def test_the_balance_page_shows_the_skew_and_plans_a_fill_from_a_brokers_page(
    admin_client: Any, kafka: Kafka, no_jobs: list[tuple[Any, ...]]
) -> None:
    page = html(admin_client.get("/ui/balance/"))
    assert 'data-testid="replica-spread">4<' in page  # 4, 4, 4 and 0 replicas
    assert re.search(r'data-broker="4".*?data-testid="broker-replicas">0<', page, re.S)
    broker = html(admin_client.get("/ui/brokers/4/"))
    assert 'data-testid="fill"' in broker and 'data-testid="drain"' in broker
    made = admin_client.post(
        "/ui/balance/plans/", {"goal": "fill", "broker_id": "4", "back": "/ui/brokers/4/"}
    )
    assert made.status_code == 302
    plan = BalancePlan.objects.get()
    assert made["Location"] == f"/ui/balance/plans/{plan.pk}/"
    preview = html(admin_client.get(made["Location"]))
    assert 'data-testid="plan-state">PROPOSED<' in preview
    assert preview.count('class="badge badge-info">+4<') == 3  # the diff: 4 joins 3 partitions
    assert re.search(r'data-broker="4".*?data-testid="replicas-after">3<', preview, re.S)
    assert 'data-testid="execute-plan"' in preview
    executed = admin_client.post(
        f"/ui/balance/plans/{plan.pk}/execute/", {"batch_size": "2", "throttle": "1000000"}
    )
    assert executed.status_code == 302 and no_jobs == [(services.RUN_TASK, (plan.pk,))]
    running = html(admin_client.get(executed["Location"]))
    assert 'data-testid="plan-state">EXECUTING<' in running
    assert 'data-testid="plan-progress-bar"' in running and 'data-testid="cancel-plan"' in running
    assert BalancePlan.objects.get().options["throttle"] == 1_000_000
    assert 'data-testid="running-plan"' in html(admin_client.get("/ui/balance/"))
    # A second plan may be made, not run while this one runs: Kafka's error, said on the page.
    admin_client.post("/ui/balance/plans/", {"goal": "rebalance"})
    second = BalancePlan.objects.order_by("-pk").first()
    assert second is not None and second.pk != plan.pk
    refused = admin_client.post(f"/ui/balance/plans/{second.pk}/execute/", {}, follow=True)
    assert "REASSIGNMENT_IN_PROGRESS" in html(refused)
    cancelled = admin_client.post(f"/ui/balance/plans/{plan.pk}/cancel/", follow=True)
    assert "cancel asked for" in html(cancelled)
    assert BalancePlan.objects.get(pk=plan.pk).state == "CANCELLING"


def test_a_plan_refused_says_why_on_the_page_it_came_from(admin_client: Any, kafka: Kafka) -> None:
    kafka.register(5)  # holds nothing: nothing to drain
    answer = admin_client.post(
        "/ui/balance/plans/",
        {"goal": "drain", "broker_id": "9", "back": "/ui/brokers/1/"},
        follow=True,
    )
    assert "BROKER_ID_NOT_REGISTERED" in html(answer)
    assert answer.redirect_chain[-1][0] == "/ui/brokers/1/"


def test_reassignments_in_progress_show_on_the_topic_and_the_partitions(
    admin_client: Any, kafka: Kafka
) -> None:
    status, _ = kafka.api.post(
        "/api/v1/alter-partition-reassignments",
        {
            "topics": [
                {"name": "orders", "partitions": [{"partition_index": 0, "replicas": [2, 4]}]}
            ]
        },
        token=kafka.tokens["admin"],
    )
    assert status == 200
    topic = html(admin_client.get("/ui/topics/orders/"))
    assert 'data-testid="reassignments"' in topic and 'data-reassigning="0"' in topic
    assert 'data-testid="adding">+4<' in topic and 'data-testid="removing">-1<' in topic
    moving = html(admin_client.get("/ui/partitions/?reassigning=true"))
    assert moving.count('data-partition="orders-') == 1 and "orders-0" in moving
    acl_cache.clear()  # each measurement loads the ACLs and reads the moves
    REASSIGNMENT_LISTINGS.clear()
    with CaptureQueriesContext(connection) as before:
        admin_client.get("/ui/topics/orders/")
    kafka.api.post(
        "/api/v1/alter-partition-reassignments",
        {
            "topics": [
                {
                    "name": "orders",
                    "partitions": [{"partition_index": i, "replicas": [4, 1]} for i in (1, 2, 4)],
                }
            ]
        },
        token=kafka.tokens["admin"],
    )
    acl_cache.clear()
    REASSIGNMENT_LISTINGS.clear()
    with CaptureQueriesContext(connection) as after:
        assert html(admin_client.get("/ui/topics/orders/")).count("data-reassigning=") >= 3
    assert len(after.captured_queries) == len(before.captured_queries)
