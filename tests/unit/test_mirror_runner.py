"""A mirror node's runner (a connector or a task on its own thread) runs the latest config it was
given, even when the config changes while the runner is still setting up from the one before.

A flow's task is reconfigured twice in quick succession whenever it starts on a new leader (its
first config, then the one the new leader's connector persists) or the filter changes: a config
lost there leaves the task replicating the old topics until some later change.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Mapping
from typing import Any

from controlplane.controller.mirror.config import Flow
from mirror.node.connectors import Runner
from mirror.node.providers import Providers

WAIT_S = 10.0


class FakeWorker:
    """The runner's view of its flow worker: only what a runner asks of it."""

    def __init__(self) -> None:
        self.flow = Flow("A", "B")
        self.worker_id = "127.0.0.1/A__B"
        self.providers = Providers({}, environ={})

    def task_configs_of(self, connector: str) -> list[dict[str, str]] | None:
        return None

    def request_task_reconfiguration(self, connector: str, configs: list[dict[str, str]]) -> bool:
        return True

    def report(self, **fields: Any) -> None:
        pass


class SlowFirstSetup(Runner):
    """Its first setup waits until the test has reconfigured it (the race, made certain)."""

    kind = "task"

    def __init__(self, worker: FakeWorker, config: dict[str, str]) -> None:
        super().__init__(worker, "MirrorSourceConnector-0", config, paused=False)
        self.in_first_setup = threading.Event()
        self.may_finish_first_setup = threading.Event()
        self.set_up: list[str] = []
        self.ticked_with: list[str] = []
        self.fail_setups = 0

    def setup(self, values: Mapping[str, str]) -> None:
        if not self.set_up and not self.in_first_setup.is_set():
            self.in_first_setup.set()
            assert self.may_finish_first_setup.wait(WAIT_S)
        if self.fail_setups:
            self.fail_setups -= 1
            raise ValueError("setup refused")
        self.set_up.append(values["topics"])

    def tick(self) -> float:
        self.ticked_with.append(self.set_up[-1])
        return 0.01


def wait(predicate: Any) -> None:
    deadline = time.monotonic() + WAIT_S
    while not predicate():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.005)


def test_a_config_given_while_the_runner_sets_up_is_the_one_it_runs() -> None:
    runner = SlowFirstSetup(FakeWorker(), {"topics": "orders"})
    runner.start()
    try:
        assert runner.in_first_setup.wait(WAIT_S)
        runner.reconfigure({"topics": "orders, invoices"})  # while setup reads the first config
        runner.may_finish_first_setup.set()
        wait(lambda: runner.ticked_with and runner.ticked_with[-1] == "orders, invoices")
        assert runner.set_up == ["orders", "orders, invoices"]
    finally:
        runner.stop()


def test_the_same_config_again_sets_up_nothing_and_a_failed_setup_is_tried_again() -> None:
    runner = SlowFirstSetup(FakeWorker(), {"topics": "orders"})
    runner.may_finish_first_setup.set()
    runner.start()
    try:
        wait(lambda: runner.ticked_with)
        runner.reconfigure({"topics": "orders"})
        ticks = len(runner.ticked_with)
        wait(lambda: len(runner.ticked_with) > ticks + 3)
        assert runner.set_up == ["orders"]

        runner.fail_setups = 1
        runner.reconfigure({"topics": "payments"})
        wait(lambda: runner.set_up[-1] == "payments")
        assert runner.set_up == ["orders", "payments"]
        wait(lambda: runner.ticked_with[-1] == "payments")
    finally:
        runner.stop()
