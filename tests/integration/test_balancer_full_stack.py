"""The balancer on real parts: PostgreSQL, Redis, gunicorn, a `run_controller` worker and a
Celery worker running the plans' jobs, with simulated brokers that copy each new replica at a
rate (slower under Kafka's throttle) before their leaders take it into the ISR.

A fourth broker is filled by a plan executed in bounded batches, throttled; the plan completes
and the broker holds its share; a second plan throttled to a crawl stays in progress until it is
cancelled, its moves reverted; the log replays to the tables after each (`verify_metadata`).
"""

from __future__ import annotations

import time
from typing import Any

import pytest

from simulator import BrokerSimulator
from tests.integration.conftest import Stack, wait_for
from tests.integration.test_replicas_full_stack import SimThread, topic_partitions, verify

pytestmark = pytest.mark.integration

WAIT_S = 120
PLANS = "/api/v1/balance/plans"


def plan(stack: Stack, plan_id: int) -> dict[str, Any]:
    assert stack.http is not None
    status, body = stack.http.get(f"{PLANS}/{plan_id}", stack.tokens["admin"])
    assert status == 200, body
    return dict(body)


def test_a_plan_fills_a_broker_through_celery_and_a_second_is_cancelled(stack: Stack) -> None:
    stack.start_controller("controller-a", 3000)
    stack.wait_active("controller-a")
    http = stack.start_web()
    stack.start_worker()
    admin = stack.tokens["admin"]
    sim_thread = SimThread(
        lambda: BrokerSimulator(
            http.base,
            stack.tokens["broker"],
            internal_url=http.internal,
            brokers=4,
            log_dirs=1,
            heartbeat_interval_ms=500,
            metadata_wait_ms=2000,
            connect_timeout_s=30,
            client_id="it-balancer",
            admin_token=admin,
            partition_bytes=256 * 1024,
            catch_up_bytes_per_s=8 * 1024 * 1024,
        )
    )
    sim = sim_thread.sim
    try:
        sim_thread.run(sim.start())
        assert sim_thread.run(sim.wait_for(lambda s: s.status().unfenced == 4, WAIT_S))
        body = {
            "topics": [
                {
                    "name": "orders",
                    "assignments": [
                        {"partition_index": i, "broker_ids": [i % 3, (i + 1) % 3]}
                        for i in range(12)
                    ],
                }
            ]
        }
        status, created = http.post("/api/v1/create-topics", body, admin)
        assert status == 200 and created["topics"][0]["error_code"] == 0, created
        wait_for(
            lambda: all(
                len(p["isr_nodes"]) == 2 for p in topic_partitions(stack, "orders").values()
            ),
            WAIT_S,
            "every ISR whole",
        )

        status, fill = http.post(PLANS, {"goal": "fill", "broker_id": 3}, admin)
        assert status == 200 and fill["skew_after"]["replicas"]["3"] == 6, fill
        status, running = http.post(
            f"{PLANS}/{fill['plan_id']}/execute",
            {"batch_size": 2, "concurrency": 3, "throttle": 4 * 1024 * 1024},
            admin,
        )
        assert status == 200 and running["state"] == "EXECUTING", running
        done = wait_for(
            lambda: (p := plan(stack, fill["plan_id"]))["state"] != "EXECUTING" and p,
            WAIT_S,
            "the fill plan to end (the Celery worker runs it)",
        )
        assert done["state"] == "COMPLETED", done
        assert done["progress"]["done"] == fill["moves_total"], done
        held = [p for p in topic_partitions(stack, "orders").values() if 3 in p["replica_nodes"]]
        assert len(held) == 6 and all(p["adding_replicas"] == [] for p in held)
        throttles = stack.sql("SELECT count(*) FROM cp_config WHERE name LIKE %s", "%throttled%")
        assert int(throttles[0][0]) == 0  # removed when the plan ended
        verify(stack)

        # A rebalance throttled to a crawl: its moves stay in progress until it is cancelled.
        status, drain = http.post(PLANS, {"goal": "drain", "broker_id": 0}, admin)
        assert status == 200 and drain["moves_total"] > 0, drain
        status, _ = http.post(
            f"{PLANS}/{drain['plan_id']}/execute", {"concurrency": 2, "throttle": 1}, admin
        )
        assert status == 200
        wait_for(
            lambda: plan(stack, drain["plan_id"])["progress"].get("in_flight_count") == 2,
            WAIT_S,
            "two moves in flight",
        )
        time.sleep(2)  # throttled: they stay
        moving = http.get("/api/v1/partition-reassignments", admin)[1]["topics"]
        assert moving and len(moving[0]["partitions"]) == 2, moving
        status, refused = http.post(PLANS, {"goal": "rebalance"}, admin)
        status, second = http.post(f"{PLANS}/{refused['plan_id']}/execute", {}, admin)
        assert status == 409 and second["error"] == "REASSIGNMENT_IN_PROGRESS", second
        status, _ = http.post(f"{PLANS}/{drain['plan_id']}/cancel", {}, admin)
        assert status == 200
        ended = wait_for(
            lambda: (p := plan(stack, drain["plan_id"]))["state"] == "CANCELLED" and p,
            WAIT_S,
            "the drain plan cancelled",
        )
        assert "2 in progress went back" in ended["message"], ended
        assert http.get("/api/v1/partition-reassignments", admin)[1]["topics"] == []
        verify(stack)
    finally:
        sim_thread.close()
