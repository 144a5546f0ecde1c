"""The fault campaign's history recorder (devtools.history) for real: two web nodes, a
controller and simulated brokers on PostgreSQL and Redis; two client threads write and read topic
configs, ACLs and client quotas through both web nodes for a few seconds, then through web node A
killed (kill -9) and started again, and the history they recorded is linearizable
(devtools.linearizability)."""

from __future__ import annotations

import signal
import time
from collections import Counter

import pytest

from devtools.history import HistoryClients
from devtools.linearizability import OK
from devtools.stack import PYTHON, Http, Stack, wait_for

pytestmark = pytest.mark.integration

BROKERS = 3
RECORD_S = 5.0


def start_cluster(stack: Stack) -> list[Http]:
    web_a = stack.start_web("web-a", workers=1, threads=8)
    web_b = stack.start_web("web-b", workers=1, threads=8)
    stack.start_controller("controller-1", 3001)
    stack.wait_active("controller-1", 60)
    argv = [PYTHON, "manage.py", "simulate_brokers", "--internal-url", web_b.internal]
    argv += ["--url", web_b.base, "--token", stack.tokens["broker"], "--brokers", str(BROKERS)]
    argv += ["--racks", "3", "--control", "none"]
    stack.spawn("simulator", argv)

    def unfenced() -> bool:
        status, cluster = web_a.get("/api/v1/cluster", stack.tokens["admin"])
        return status == 200 and cluster["broker_states"]["UNFENCED"] == BROKERS

    wait_for(unfenced, 90, "every broker unfenced")
    return [web_a, web_b]


def test_recorded_history_covers_every_key_kind_and_is_linearizable(stack: Stack) -> None:
    nodes = start_cluster(stack)
    clients = HistoryClients(
        lambda: nodes,
        stack.tokens["admin"],
        threads=2,
        give_up_s=30,
        seed=20,
    )
    clients.start()
    try:
        time.sleep(RECORD_S)
        # In-flight calls to A lose their connection: writes are retried on B with their id.
        stack.kill("web-a", signal.SIGKILL)
        time.sleep(1)
        nodes[0] = stack.start_web("web-a", workers=1, threads=8)
        time.sleep(2)
    finally:
        clients.stop()
    history = clients.history()
    ok = Counter(f"{op.key.split(':', 1)[0]} {op.kind}" for op in history if op.outcome == OK)
    print(clients.report())
    for family, writes in (
        ("config", ["write"]),
        ("acls", ["add", "remove"]),
        ("quotas", ["add", "remove"]),
    ):
        assert ok[f"{family} read"] > 0, ok
        assert sum(ok[f"{family} {kind}"] for kind in writes) > 0, ok
    result = clients.check()
    print(result.describe())
    assert result.linearizable, result.describe()
    assert result.operations_checked >= sum(ok.values())  # and any unknown write a read saw
    assert len(result.history_lengths) == 2 * 2 + 2  # 2 topics x 2 configs, the ACLs, the quotas
