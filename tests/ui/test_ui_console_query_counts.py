"""Every page of the console reads a fixed number of queries, at 2 topics as at 200 (each with
partitions, a fenced and returned broker, failed log dirs and elections behind them): figures come
from the controller's counts, lists are paged in SQL, the timeline reads a page of events and a
bounded preview of their partitions. Seen by a super user and by a principal whose topics are
partly hidden."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext

from controlplane.authz import acl_cache
from controlplane.models import Cluster
from replicas.models import Partition
from tests.conftest import Api
from tests.ui.conftest import ui_login
from timeline.models import TimelineEvent

pytestmark = pytest.mark.django_db

PAGES = [
    "/ui/",
    "/ui/brokers/",
    "/ui/brokers/?sort=-leaders",
    "/ui/brokers/1/",
    "/ui/topics/",
    "/ui/topics/?sort=-under_replicated",
    "/ui/topics/t000/",
    "/ui/topics/t000/?under_replicated=true",
    "/ui/partitions/",
    "/ui/partitions/?under_min_isr=true",
    "/ui/partitions/?preferred_leader=false&sort=-leader",
    "/ui/timeline/",
    "/ui/timeline/?incidents=on",
    "/ui/timeline/?topic=t001",
    "/ui/timeline/?broker=2&kind=LOG_DIR_FAILURE",
    "/ui/charts/",
    "/ui/search/?q=t0",
    "/ui/topics/new/",
    "/ui/topics/t000/delete/",
    "/ui/topics/t000/elect/?type=UNCLEAN",
    "/ui/brokers/2/unregister/",
]


def count_queries(client: Client, path: str) -> int:
    acl_cache.clear()
    with CaptureQueriesContext(connection) as queries:
        response = client.get(path)
    assert response.status_code == 200, response.content[:500]
    return len(queries.captured_queries)


def post(api: Api, token: str, path: str, body: dict[str, Any]) -> dict[str, Any]:
    status, answer = api.post(path, body, token=token)
    assert status == 200, answer
    return dict(answer)


@pytest.mark.parametrize("who", ["admin", "alice"])
def test_console_pages_read_the_same_number_of_queries_at_2_and_200_topics(
    client: Client, api: Api, tokens: dict[str, str], register: Callable[..., int], who: str
) -> None:
    admin = tokens["admin"]
    epochs = {b: register(b, unfence=True) for b in (1, 2, 3)}

    def heartbeat(broker_id: int, **flags: Any) -> None:
        offset = Cluster.objects.get(pk=1).last_offset
        post(
            api,
            tokens["broker"],
            "/internal/v1/broker-heartbeat",
            {
                "broker_id": broker_id,
                "broker_epoch": epochs[broker_id],
                "current_metadata_offset": offset,
                **flags,
            },
        )

    def add_topics(start: int, count: int) -> None:
        names = [f"t{i:03d}" for i in range(start, start + count)]
        answer = post(
            api,
            admin,
            "/api/v1/create-topics",
            {
                "topics": [
                    {
                        "name": n,
                        "num_partitions": 2,
                        "replication_factor": 3,
                        "configs": [{"name": "min.insync.replicas", "value": "2"}],
                    }
                    for n in names
                ]
            },
        )
        assert [t["error_code"] for t in answer["topics"]] == [0] * count
        # Trouble on every new topic: broker 2's log dir fails for them, broker 3 is fenced
        # and comes back, leaders are elected back to their preferred replicas where they can.
        post(
            api,
            tokens["broker"],
            "/internal/v1/alter-replica-state",
            {
                "broker_id": 2,
                "broker_epoch": epochs[2],
                "new_state": 1,
                "reason": "disk",
                "topics": [{"name": n, "partitions": [0, 1]} for n in names],
            },
        )
        heartbeat(3, want_fence=True)
        heartbeat(3)
        post(api, admin, "/api/v1/elect-leaders", {"election_type": "PREFERRED"})

    if who == "alice":
        grants = [
            ("CLUSTER", "kafka-cluster", "LITERAL"),
            ("TOPIC", "t0", "PREFIXED"),  # t000..t099: half of the 200 topics
        ]
        post(
            api,
            admin,
            "/api/v1/create-acls",
            {
                "creations": [
                    {
                        "resource_type": rt,
                        "resource_name": n,
                        "pattern_type": pt,
                        "principal": "User:alice",
                        "host": "*",
                        "operation": "DESCRIBE",
                        "permission_type": "ALLOW",
                    }
                    for rt, n, pt in grants
                ]
            },
        )
    ui_login(client, who, tokens[who])

    add_topics(0, 2)
    before = {page: count_queries(client, page) for page in PAGES}
    add_topics(2, 198)
    assert Partition.objects.count() == 400
    assert TimelineEvent.objects.count() > 10
    after = {page: count_queries(client, page) for page in PAGES}
    assert after == before
    assert max(after.values()) <= 14, after
