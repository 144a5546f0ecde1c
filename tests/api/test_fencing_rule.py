"""The fencing rule on the real runtime (issue 20): the controller's timer fences a partial
disruption at once and elects from the surviving ISR, holds off only a full disruption or a
measured overload of its own ingress, and says each decision in the audit trail and the gauge."""

from __future__ import annotations

import time

import pytest

from audit.models import AuditEvent
from brokers.models import Broker
from controlplane.metrics import render
from controlplane.runtime.controller import get_runtime
from controlplane.runtime.conversation import ControllerEvent, RequestContext
from controlplane.runtime.ingress import local_listener_lags
from controlplane.runtime.lease import now_ms
from controlplane.runtime.sessions import local_sessions

pytestmark = pytest.mark.django_db

BROKERS = 6  # racks rack-0, rack-1, rack-2 round robin (tests.conftest.registration_body)


@pytest.fixture
def cluster(api, tokens, register):
    """Six unfenced brokers and a topic of six partitions, RF 3, one replica per rack."""
    for broker_id in range(BROKERS):
        register(broker_id, unfence=True)
    status, body = api.post(
        "/api/v1/create-topics",
        {"topics": [{"name": "orders", "num_partitions": 6, "replication_factor": 3}]},
        token=tokens["admin"],
    )
    assert status == 200 and body["topics"][0]["error_code"] == 0, body
    return api


def silence(brokers, *, ago_ms: int = 60_000) -> None:
    for broker_id in brokers:
        local_sessions().touch(broker_id, now_ms=now_ms() - ago_ms, metadata_offset=0)


def hear(brokers) -> None:
    for broker_id in brokers:
        local_sessions().touch(broker_id, now_ms=now_ms(), metadata_offset=0)


def fenced() -> list[int]:
    return list(
        Broker.objects.filter(fenced=True).order_by("broker_id").values_list("broker_id", flat=True)
    )


def partitions(api, tokens) -> list[dict]:
    status, body = api.get("/api/v1/topics/orders", token=tokens["admin"])
    assert status == 200
    return list(body["partitions"])


def test_losing_two_racks_fences_their_brokers_and_survivors_lead(cluster, tokens):
    runtime = get_runtime()
    survivors = {b for b in range(BROKERS) if b % 3 == 0}  # rack-0: brokers 0 and 3
    lost = sorted(set(range(BROKERS)) - survivors)
    silence(lost)
    hear(survivors)

    runtime.tick()

    assert fenced() == lost
    for partition in partitions(cluster, tokens):
        live_isr = set(partition["isr_nodes"]) & survivors
        assert live_isr, partition  # RF 3 over three racks: rack-0 holds a replica of each
        assert partition["leader_id"] in survivors, partition
    event = AuditEvent.objects.get(api="StaleBrokersFenced")
    assert [r["resource_name"] for r in event.resources] == [str(b) for b in lost]
    assert not AuditEvent.objects.filter(api="FencingHeldOff").exists()
    assert "kafka_controller_fencing_held_off_brokers 0.0" in render().decode()


def test_a_full_disruption_is_held_off_loudly_then_fencing_resumes(cluster):
    runtime = get_runtime()
    silence(range(BROKERS))  # nobody heard for a minute: the controller's ears, not the brokers

    runtime.tick()
    assert fenced() == []
    held = AuditEvent.objects.get(api="FencingHeldOff")
    assert held.principal == "User:controller"
    assert [r["resource_name"] for r in held.resources] == [str(b) for b in range(BROKERS)]
    assert "full disruption" in held.resources[0]["error_message"]
    assert f"kafka_controller_fencing_held_off_brokers {float(BROKERS)}" in render().decode()

    hear(range(5))  # partial recovery: broker 5 really is gone
    runtime.tick()
    assert fenced() == [5]
    resumed = AuditEvent.objects.get(api="FencingResumed")
    assert [r["resource_name"] for r in resumed.resources] == ["5"]
    assert "kafka_controller_fencing_held_off_brokers 0.0" in render().decode()


def test_a_full_disruption_ends_after_the_hold_offs_bound(cluster, settings):
    settings.CP_FENCING_HOLD_OFF_MAX_MS = 1000
    runtime = get_runtime()
    silence(range(BROKERS))
    runtime.tick()
    assert fenced() == []
    runtime.fencing_watch.since_ms -= 1000  # as if the hold-off began a second ago
    runtime.tick()
    assert fenced() == list(range(BROKERS))
    expired = AuditEvent.objects.get(api="FencingHoldOffExpired")
    assert len(expired.resources) == BROKERS


def test_an_event_that_waited_in_the_controllers_queue_holds_off_fencing(cluster, settings):
    """KAFKA-15019: a heartbeat stuck in the controller's queue is not the broker's fault."""
    settings.CP_FENCING_OVERLOAD_LAG_MS = 2000
    runtime = get_runtime()
    waited = ControllerEvent(
        "DescribeCluster", context=RequestContext("User:admin"), queued_ms=now_ms() - 5000
    )
    runtime.handle(waited)  # what the request channel and the batcher stamp on every event
    silence([1])
    hear(b for b in range(BROKERS) if b != 1)

    runtime.tick()

    assert fenced() == []
    held = AuditEvent.objects.get(api="FencingHeldOff")
    message = held.resources[0]["error_message"]
    assert message.startswith("overloaded: the controller's queue lagged")
    assert "(bound 2000 ms)" in message


def test_a_web_node_reporting_listener_lag_holds_off_fencing(cluster, settings):
    settings.CP_FENCING_OVERLOAD_LAG_MS = 2000
    runtime = get_runtime()
    local_listener_lags().report("web-b:42", lag_ms=7000, at_ms=now_ms() - 100)
    silence([2])
    hear(b for b in range(BROKERS) if b != 2)
    runtime.tick()
    assert fenced() == []
    assert (
        "the internal listener of web-b:42 lagged 7000 ms"
        in (AuditEvent.objects.get(api="FencingHeldOff").resources[0]["error_message"])
    )
    # The report ages out of the session: the broker is fenced as usual.
    local_listener_lags().report("web-b:42", lag_ms=7000, at_ms=now_ms() - 60_000)
    runtime.tick()
    assert fenced() == [2]


def test_a_session_store_that_lost_its_sessions_gives_every_broker_a_full_session(cluster):
    """A restarted Redis keeps no session: the brokers were not silent, the store forgot."""
    runtime = get_runtime()
    hear(range(BROKERS))
    runtime.tick()
    runtime.activated_ms -= 60_000  # activated long ago: a missing session would be stale
    local_sessions().clear()
    hear([0])  # one broker's heartbeat lands before the controller looks

    runtime.tick()

    assert fenced() == []
    assert runtime.sessions_lost_ms >= now_ms() - 5000


def test_the_timers_next_round_is_when_the_next_session_lapses(cluster, settings):
    """As Kafka's controller schedules its next fencing check: after a round, the timer waits
    until the next unfenced broker's session lapses (not a whole period when that comes
    sooner), a period at the longest, and at once while moves are left over."""
    runtime = get_runtime()
    timeout = settings.CP_BROKER_SESSION_TIMEOUT_MS
    hear(range(BROKERS))
    heard_ms = now_ms() - (timeout - 200)  # lapses in 200 ms
    local_sessions().touch(2, now_ms=heard_ms, metadata_offset=0)
    runtime.tick()
    assert fenced() == []
    assert runtime.next_session_expiry_ms == heard_ms + timeout + 1
    soon = runtime.next_round_in_s(interval_s=0.5)
    assert soon <= 0.201, soon
    assert runtime.next_round_in_s(interval_s=0.05) == 0.05  # a period at the longest
    time.sleep(soon)
    runtime.tick()
    assert fenced() == [2]  # the round then fences it
    runtime.moves_pending = True
    try:
        assert runtime.next_round_in_s(interval_s=0.5) == 0.0
    finally:
        runtime.moves_pending = False
