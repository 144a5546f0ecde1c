"""KIP-589 on real parts: a log directory fails and is repaired, through the broker simulator.

The full-stack tests run PostgreSQL, Redis, gunicorn and a `run_controller` Celery worker (the
`stack` fixture): AlterReplicaState is validated by the web process and applied by the controller
(Celery task on the `controller` queue, or its timer); the repair is the leaders' AlterPartition.
The embedded tests run the simulator (and its CLI) against one gunicorn process that is the
controller (SQLite), as test_simulator_embedded does. Every wait polls with a bound; nothing
asserts on timings.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import re
import signal
import subprocess
import threading
import uuid
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

import httpx
import pytest

from simulator import BrokerSimulator, LogDirResult, PartitionView
from tests.integration.conftest import Stack, wait_for
from tests.integration.test_simulator_embedded import PYTHON, ROOT, EmbeddedServer

# The embedded gunicorn (module-scoped fixture), shared with test_simulator_embedded's setup.
from tests.integration.test_simulator_embedded import server as server

pytestmark = pytest.mark.integration

T = TypeVar("T")
ARS = "/internal/v1/alter-replica-state"
STALE_BROKER_EPOCH = 77
WAIT_S = 30.0


class SimThread:
    """A BrokerSimulator on its own event loop in a thread, so the test can stay synchronous
    (and block on HTTP calls and `manage.py`) while the brokers keep heartbeating."""

    def __init__(self, make: Callable[[], BrokerSimulator]) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()
        self.sim = self.call(make)

    def run(self, coroutine: Coroutine[Any, Any, T], timeout: float = 120) -> T:
        return asyncio.run_coroutine_threadsafe(coroutine, self.loop).result(timeout)

    def submit(self, coroutine: Coroutine[Any, Any, T]) -> concurrent.futures.Future[T]:
        return asyncio.run_coroutine_threadsafe(coroutine, self.loop)

    def call(self, fn: Callable[[], T]) -> T:
        """Run a plain function on the simulator's loop (its state belongs to that loop)."""

        async def on_loop() -> T:
            return fn()

        return self.run(on_loop())

    def close(self) -> None:
        try:
            self.run(self.sim.close(), timeout=60)
        finally:
            self.loop.call_soon_threadsafe(self.loop.stop)
            self.thread.join(timeout=10)
            self.loop.close()


def topic_partitions(stack: Stack, name: str) -> dict[int, dict[str, Any]]:
    assert stack.http is not None
    stack.tables_follow_log()  # the simulator saw the change in the log, a moment before them
    status, topic = stack.http.get(f"/api/v1/topics/{name}", stack.tokens["admin"])
    assert status == 200, topic
    return {p["partition_index"]: p for p in topic["partitions"]}


def pending_reports(stack: Stack) -> int:
    return int(stack.sql("SELECT count(*) FROM cp_pending_replica_state")[0][0])


def verify(stack: Stack) -> None:
    result = stack.manage("verify_metadata", check=False)
    assert result.returncode == 0, result.stdout + result.stderr


FIELDS = (
    "leader_id",
    "leader_epoch",
    "partition_epoch",
    "replica_nodes",
    "isr_nodes",
    "offline_replicas",
)


def as_api(view: PartitionView) -> dict[str, Any]:
    """The follower's view of a partition in the public API's terms."""
    return {
        "leader_id": view.leader,
        "leader_epoch": view.leader_epoch,
        "partition_epoch": view.partition_epoch,
        "replica_nodes": list(view.replicas),
        "isr_nodes": list(view.isr),
        "offline_replicas": list(view.offline_replicas),
    }


def api_fields(partition: dict[str, Any]) -> dict[str, Any]:
    return {key: partition[key] for key in FIELDS}


def replay_change(partition: dict[str, Any], change: dict[str, Any]) -> dict[str, Any]:
    """A PartitionChangeRecord applied to a partition as the API shows it (the core's merge)."""
    leader_changed = change["leader"] != -2
    return {
        "leader_id": change["leader"] if leader_changed else partition["leader_id"],
        "leader_epoch": partition["leader_epoch"] + (1 if leader_changed else 0),
        "partition_epoch": partition["partition_epoch"] + 1,
        "replica_nodes": partition["replica_nodes"]
        if change["replicas"] is None
        else change["replicas"],
        "isr_nodes": partition["isr_nodes"] if change["isr"] is None else change["isr"],
        "offline_replicas": partition["offline_replicas"]
        if change["offline_replicas"] is None
        else change["offline_replicas"],
    }


def start_simulator(stack: Stack, brokers: int, log_dirs: int) -> SimThread:
    assert stack.http is not None
    http = stack.http
    return SimThread(
        lambda: BrokerSimulator(
            http.base,
            stack.tokens["broker"],
            internal_url=http.internal,
            brokers=brokers,
            racks=2,
            log_dirs=log_dirs,
            heartbeat_interval_ms=500,
            metadata_wait_ms=2000,
            connect_timeout_s=30,
            client_id="it-replicas",
            admin_token=stack.tokens["admin"],
        )
    )


def test_a_failed_log_dir_goes_offline_and_rejoins_after_repair(stack: Stack) -> None:
    stack.start_controller("controller-a", 3000)
    stack.wait_active("controller-a")
    http = stack.start_web()
    broker_token = stack.tokens["broker"]
    sim_thread = start_simulator(stack, brokers=4, log_dirs=2)
    sim = sim_thread.sim
    try:
        sim_thread.run(sim.start())
        assert sim_thread.run(sim.wait_for(lambda s: s.status().unfenced == 4, WAIT_S)), (
            sim_thread.call(sim.status)
        )
        created = sim_thread.run(sim.create_topic("orders", 12, 3))
        assert created["error_code"] == 0, created
        topic_id = created["topic_id"]
        before = topic_partitions(stack, "orders")
        assert len(before) == 12

        # The follower replayed the topic exactly as the controller stored it.
        views = sim_thread.call(lambda: sim.partitions("orders"))
        assert {v.partition: as_api(v) for v in views} == {
            i: api_fields(p) for i, p in before.items()
        }

        # The (broker, log dir) holding the most leaderships: the interesting case.
        def in_dir(broker_id: int, dir_index: int) -> list[PartitionView]:
            return sim_thread.call(lambda: sim.replicas_in_log_dir(broker_id, dir_index))

        broker_id, dir_index = max(
            ((b, d) for b in range(4) for d in range(2)),
            key=lambda bd: (
                sum(v.leader == bd[0] for v in in_dir(*bd)),
                len(in_dir(*bd)),
            ),
        )
        failing = {v.partition for v in in_dir(broker_id, dir_index)}
        led = {i for i in failing if before[i]["leader_id"] == broker_id}
        assert failing and led, (broker_id, dir_index, failing)
        mark = int(stack.sql("SELECT last_offset FROM cp_cluster WHERE id = 1")[0][0])

        # The directory fails: ONE AlterReplicaState names every replica in it.
        failed: LogDirResult = sim_thread.run(sim.fail_log_dir(broker_id, dir_index, timeout_s=60))
        assert failed.ok, failed
        assert {p for _, p in failed.done} == failing and failed.refused == {}
        assert failed.request is not None and failed.request_id is not None
        assert failed.request["broker_id"] == broker_id and failed.request["new_state"] == 1
        assert {p for t in failed.request["topics"] for p in t["partitions"]} == failing
        state = sim_thread.call(lambda: sim.broker(broker_id))
        assert state.failed_log_dirs == (dir_index,)
        assert state.offline_log_dirs == (state.log_dirs[dir_index],)

        # The controller applied it: offline, out of the ISR, led by someone in the ISR.
        def applied() -> dict[int, dict[str, Any]] | None:
            parts = topic_partitions(stack, "orders")
            done = all(broker_id in parts[i]["offline_replicas"] for i in failing)
            return parts if done else None

        after = wait_for(applied, WAIT_S, "the replicas in the failed dir to be offline")
        for i, partition in after.items():
            if i in failing:
                assert partition["offline_replicas"] == [broker_id], partition
                assert broker_id not in partition["isr_nodes"], partition
                assert partition["leader_id"] != broker_id, partition
                assert partition["leader_id"] in partition["isr_nodes"], partition
                assert partition["leader_id"] in partition["replica_nodes"], partition
                assert partition["partition_epoch"] == before[i]["partition_epoch"] + 1
                bump = 1 if i in led else 0
                assert partition["leader_epoch"] == before[i]["leader_epoch"] + bump, partition
            else:  # the broker's other directory, and partitions it holds nothing of
                assert partition == before[i], partition

        # Another broker sees the change through the metadata log, and can replay it.
        status, page = http.get(
            f"/internal/v1/metadata?after_offset={mark}&max_records=10000&wait_ms=0", broker_token
        )
        assert status == 200, page
        changes = [
            r["data"]
            for r in page["records"]
            if r["type"] == "PartitionChangeRecord" and r["data"]["topic_id"] == topic_id
        ]
        assert {c["partition_id"] for c in changes} == failing
        replayed = {i: api_fields(p) for i, p in before.items()}
        for change in changes:
            index = change["partition_id"]
            replayed[index] = replay_change(replayed[index], change)
        assert replayed == {i: api_fields(p) for i, p in after.items()}
        assert sim_thread.run(sim.sync_metadata())
        views = sim_thread.call(lambda: sim.partitions("orders"))
        assert {v.partition: as_api(v) for v in views} == replayed

        # Repair: each leader takes the replica back into its ISR (AlterPartition).
        repaired = sim_thread.run(sim.repair_log_dir(broker_id, dir_index, timeout_s=60))
        assert repaired.ok, repaired
        assert {p for _, p in repaired.done} == failing and repaired.pending == {}
        assert sim_thread.call(lambda: sim.broker(broker_id).offline_log_dirs) == ()

        def rejoined() -> dict[int, dict[str, Any]] | None:
            parts = topic_partitions(stack, "orders")
            done = all(
                broker_id in parts[i]["isr_nodes"] and parts[i]["offline_replicas"] == []
                for i in failing
            )
            return parts if done else None

        final = wait_for(rejoined, WAIT_S, "the repaired replicas to rejoin the ISR")
        for partition in final.values():
            assert sorted(partition["isr_nodes"]) == sorted(partition["replica_nodes"]), partition
            assert partition["offline_replicas"] == []
            assert partition["leader_id"] in partition["isr_nodes"]
        alters = stack.sql(
            "SELECT count(*) FROM cp_metadata_record WHERE record_type = 'PartitionChangeRecord'"
            ' AND "offset" > %s AND principal = %s',
            mark,
            "User:broker",
        )
        assert alters[0][0] >= len(failing)

        # The same AlterReplicaState again, same request id: validated, but applied once.
        status, answer = http.post(
            ARS, failed.request, broker_token, headers={"X-Request-ID": failed.request_id}
        )
        assert status == 200 and answer["error_code"] == 0, answer
        wait_for(lambda: pending_reports(stack) == 0, WAIT_S, "the retried report to be taken")
        assert topic_partitions(stack, "orders") == final

        # The broker restarts (a new incarnation, a new epoch): its old epoch is stale now.
        old_epoch = failed.broker_epoch
        assert sim_thread.run(sim.shutdown(broker_id, timeout_s=WAIT_S))
        sim_thread.call(lambda: sim.resume(broker_id))
        assert sim_thread.run(
            sim.wait_for(
                lambda s: s.broker(broker_id).unfenced and s.broker(broker_id).epoch != old_epoch,
                WAIT_S,
            )
        ), sim_thread.call(lambda: sim.broker(broker_id))
        status, answer = http.post(
            ARS, failed.request, broker_token, headers={"X-Request-ID": f"stale-{uuid.uuid4()}"}
        )
        assert status == 200, answer
        assert answer["error_code"] == STALE_BROKER_EPOCH and answer["topics"] == [], answer
        assert pending_reports(stack) == 0
        assert all(p["offline_replicas"] == [] for p in topic_partitions(stack, "orders").values())

        results = sim_thread.run(sim.shutdown_all(timeout_s=WAIT_S))
        assert all(results.values()), results
    finally:
        sim_thread.close()
    verify(stack)


def test_a_report_made_while_no_controller_is_active_is_retried_until_one_is(
    stack: Stack,
) -> None:
    stack.start_controller("controller-a", 3000)
    stack.wait_active("controller-a")
    http = stack.start_web()
    sim_thread = start_simulator(stack, brokers=3, log_dirs=1)
    sim = sim_thread.sim
    try:
        sim_thread.run(sim.start())
        assert sim_thread.run(sim.wait_for(lambda s: s.status().unfenced == 3, WAIT_S))
        created = sim_thread.run(sim.create_topic("payments", 6, 2))
        assert created["error_code"] == 0, created
        holding = {v.partition for v in sim_thread.call(lambda: sim.replicas_in_log_dir(1, 0))}
        assert holding

        stack.kill("controller-a", signal.SIGKILL)
        epoch = sim_thread.call(lambda: sim.broker(1).epoch)
        probe = {"broker_id": 1, "broker_epoch": epoch, "new_state": 1, "topics": []}
        wait_for(
            lambda: http.post(ARS, probe, stack.tokens["broker"])[0] == 503,
            WAIT_S,
            "the lease to lapse (AlterReplicaState answers 503 NOT_CONTROLLER)",
        )

        future = sim_thread.submit(sim.fail_log_dir(1, 0, timeout_s=90))
        wait_for(
            lambda: sim_thread.call(
                lambda: any("NOT_CONTROLLER" in k for k in sim.counters.errors_by_kind)
            ),
            WAIT_S,
            "the simulator to be told NOT_CONTROLLER",
        )
        assert not future.done()
        stack.start_controller("controller-b", 3001)
        result: LogDirResult = future.result(timeout=120)
        assert result.ok, result
        assert result.attempts >= 2
        assert {p for _, p in result.done} == holding
        parts = topic_partitions(stack, "payments")
        for i in holding:
            assert parts[i]["offline_replicas"] == [1] and 1 not in parts[i]["isr_nodes"]
            assert parts[i]["leader_id"] in parts[i]["isr_nodes"]
        assert stack.lease()[0] == "controller-b"
    finally:
        sim_thread.close()
    verify(stack)


# --- embedded: one gunicorn process is the controller (no PostgreSQL, Redis or Celery) --------


def test_simulator_fails_and_repairs_a_log_dir_embedded(server: EmbeddedServer) -> None:
    async def partitions(admin: httpx.AsyncClient, name: str) -> dict[int, dict[str, Any]]:
        response = await admin.get(f"/api/v1/topics/{name}")
        response.raise_for_status()
        return {p["partition_index"]: p for p in response.json()["partitions"]}

    async def scenario() -> None:
        admin = httpx.AsyncClient(
            base_url=server.url,
            headers={"Authorization": f"Bearer {server.admin_token}"},
            timeout=10,
        )
        sim = BrokerSimulator(
            server.url,
            server.broker_token,
            internal_url=server.internal_url,
            brokers=3,
            first_id=200,
            log_dirs=2,
            heartbeat_interval_ms=300,
            metadata_wait_ms=2000,
            connect_timeout_s=10,
            admin_token=server.admin_token,
        )
        await sim.start()
        try:
            assert await sim.wait_for(lambda s: s.status().unfenced == 3, WAIT_S), sim.status()
            created = await sim.create_topic("sim-orders", 8, 3)
            assert created["error_code"] == 0, created
            assert sim.status().partitions >= 8
            dir_index = 0 if sim.replicas_in_log_dir(200, 0) else 1
            failing = {v.partition for v in sim.replicas_in_log_dir(200, dir_index)}
            assert failing

            failed = await sim.fail_log_dir(200, dir_index, timeout_s=WAIT_S)
            assert failed.ok and {p for _, p in failed.done} == failing, failed
            view = await partitions(admin, "sim-orders")
            for i, partition in view.items():
                offline = [200] if i in failing else []
                assert partition["offline_replicas"] == offline, partition
                assert (200 in partition["isr_nodes"]) is (i not in failing), partition
                assert partition["leader_id"] in partition["isr_nodes"], partition
            assert sim.status().offline_replicas == len(failing)
            assert sim.status().failed_log_dirs == 1

            # Failing it again reports again (a no-op for the controller: already offline).
            again = await sim.fail_log_dir(200, dir_index, timeout_s=WAIT_S)
            assert again.ok and again.request_id != failed.request_id, again

            repaired = await sim.repair_log_dir(200, dir_index, timeout_s=WAIT_S)
            assert repaired.ok and {p for _, p in repaired.done} == failing, repaired
            view = await partitions(admin, "sim-orders")
            for partition in view.values():
                assert partition["offline_replicas"] == [], partition
                assert sorted(partition["isr_nodes"]) == [200, 201, 202], partition
            assert sim.status().offline_replicas == 0 and sim.status().failed_log_dirs == 0

            # Nothing to do: a repair of a healthy directory changes nothing.
            idle = await sim.repair_log_dir(200, dir_index, timeout_s=WAIT_S)
            assert idle.ok and idle.partitions == [] and idle.attempts == 0, idle
            with pytest.raises(ValueError):
                await sim.fail_log_dir(200, 2)

            assert all((await sim.shutdown_all(timeout_s=WAIT_S)).values())
        finally:
            await sim.close()
            await admin.aclose()

    asyncio.run(asyncio.wait_for(scenario(), timeout=180))
    result = server.manage("verify_metadata")
    assert result.returncode == 0, result.stderr


def test_cli_creates_a_topic_then_fails_and_repairs_a_log_dir(server: EmbeddedServer) -> None:
    result = subprocess.run(
        [
            PYTHON,
            "manage.py",
            "simulate_brokers",
            "--url",
            server.url,
            "--internal-url",
            server.internal_url,
            "--brokers",
            "3",
            "--first-id",
            "300",
            "--log-dirs",
            "1",
            "--heartbeat-ms",
            "300",
            "--topic",
            "cli-orders",
            "--partitions",
            "6",
            "--replication-factor",
            "2",
            "--control",
            "stdin",
            "--status-every",
            "1",
        ],
        cwd=ROOT,
        env={
            **server.env,
            "CP_BROKER_TOKEN": server.broker_token,
            "CP_ADMIN_TOKEN": server.admin_token,
        },
        input="fail-dir 300\nstatus\nrepair-dir 300 0\nfail-dir 300 7\nquit\n",
        capture_output=True,
        text=True,
        timeout=120,
    )
    out = result.stdout
    assert result.returncode == 0, out + result.stderr
    assert "Topic cli-orders created: 6 partitions, replication factor 2" in out, out
    reported = re.search(
        r"broker 300: log dir 0 failed: (\d+)/(\d+) replicas reported offline", out
    )
    assert reported and reported.group(1) == reported.group(2) != "0", out
    assert "the metadata shows them offline" in out, out
    assert "broker 300: fail-dir 0 done" in out, out
    assert re.search(r"broker 300: log dir 0 repaired: (\d+)/\1 replicas back in the ISR", out), out
    assert "broker 300: repair-dir 0 done" in out, out
    assert "broker 300 has log dirs 0..0, not '7'" in out, out
    assert re.search(r"\d+ topics, \d+ partitions, \d+ offline replicas", out), out
    response = httpx.get(
        f"{server.url}/api/v1/topics/cli-orders",
        headers={"Authorization": f"Bearer {server.admin_token}"},
        timeout=10,
    )
    assert response.status_code == 200
    assert all(p["offline_replicas"] == [] for p in response.json()["partitions"])
    verify_result = server.manage("verify_metadata")
    assert verify_result.returncode == 0, verify_result.stderr
