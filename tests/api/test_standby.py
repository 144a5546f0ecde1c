"""A hot standby (controlplane.runtime.standby) on the real database: a controller that does
not hold the lease follows the log, its image equal to what the state tables load; on taking
over it applies only the records it has not seen, and commits from there."""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from django.conf import settings

from controlplane.models import Cluster
from controlplane.runtime import controller as controller_module
from controlplane.runtime.controller import ControllerRuntime, get_runtime
from controlplane.runtime.conversation import ControllerEvent, RequestContext
from controlplane.runtime.lease import cluster_get_or_create
from controlplane.runtime.projections import load_image
from controlplane.runtime.sessions import session_store
from controlplane.runtime.standby import StandbyImage
from tests.conftest import registration_body

pytestmark = pytest.mark.django_db


def standby_runtime() -> ControllerRuntime:
    return ControllerRuntime(
        node_id="standby",
        controller_id=3001,
        lease_ms=settings.CP_LEASE_MS,
        session_timeout_ms=settings.CP_BROKER_SESSION_TIMEOUT_MS,
        sessions=session_store(),
    )


def write(runtime: ControllerRuntime, api: str, payload: dict[str, Any]) -> dict[str, Any]:
    context = RequestContext(principal="User:admin", request_id=str(uuid.uuid4()))
    response: dict[str, Any] = runtime.handle(ControllerEvent(api, payload, context)).response
    return response


def some_writes(runtime: ControllerRuntime, first_broker: int, topic: str) -> None:
    cluster_id = cluster_get_or_create().cluster_id
    for broker_id in range(first_broker, first_broker + 3):
        epoch = write(runtime, "BrokerRegistration", registration_body(broker_id, cluster_id))[
            "broker_epoch"
        ]
        beat = {"broker_id": broker_id, "broker_epoch": epoch, "current_metadata_offset": 10**9}
        write(runtime, "BrokerHeartbeat", beat)
    created = write(
        runtime,
        "CreateTopics",
        {"topics": [{"name": topic, "num_partitions": 30, "replication_factor": 3}]},
    )
    assert created["topics"][0]["error_code"] == 0
    altered = write(
        runtime,
        "IncrementalAlterConfigs",
        {
            "resources": [
                {
                    "resource_type": "TOPIC",
                    "resource_name": topic,
                    "configs": [
                        {"name": "retention.ms", "config_operation": "SET", "value": "60000"}
                    ],
                }
            ]
        },
    )
    assert altered["responses"][0]["error_code"] == 0


def tables_image() -> dict[str, Any]:
    cluster = Cluster.objects.get(pk=1)
    comparable: dict[str, Any] = load_image(cluster.cluster_id, cluster.last_offset).as_comparable()
    return comparable


def test_a_standby_follows_the_log_to_the_image_the_tables_hold():
    active = get_runtime()
    some_writes(active, 0, "orders")
    standby = StandbyImage()
    assert standby.follow() == 0  # the first round loads the tables
    assert standby.image is not None and standby.image.as_comparable() == tables_image()
    some_writes(active, 10, "payments")
    replayed = 0
    while standby.follow(max_records=7):  # a few records a round, as many rounds as it takes
        replayed += 7
    assert replayed > 30
    assert standby.image.as_comparable() == tables_image()


def test_taking_over_applies_only_the_records_the_standby_has_not_seen(monkeypatch):
    active = get_runtime()
    some_writes(active, 0, "orders")
    standby = standby_runtime()
    standby.follow_log()  # loads
    some_writes(active, 10, "payments")
    standby.follow_log()  # follows part of the way
    some_writes(active, 20, "refunds")  # ...and these it has not seen when it takes over
    seen = standby.standby.last_offset
    assert seen is not None and seen < Cluster.objects.get(pk=1).last_offset

    def no_load(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("a hot standby does not load the state tables")

    monkeypatch.setattr(controller_module, "load_image", no_load)
    active.resign()
    lease = standby.ensure_active()
    assert lease.node_id == "standby"
    assert standby.image is not None and standby.image.as_comparable() == tables_image()
    # It commits from there, on the image it followed.
    write(standby, "CreateTopics", {"topics": [{"name": "after", "num_partitions": 3}]})
    assert standby.image.as_comparable() == tables_image()
    assert "after" in standby.image.topic_ids


def test_before_any_controller_made_the_cluster_the_standby_holds_nothing_to_take():
    standby = StandbyImage()
    assert not Cluster.objects.exists()
    standby.follow()
    assert standby.image is None  # the cluster's id is not known yet
    cluster = cluster_get_or_create()
    assert standby.take(cluster.cluster_id, cluster.last_offset) is None
    standby.follow()
    assert standby.image is not None
    assert standby.take("another-cluster", cluster.last_offset) is None  # never another's image
