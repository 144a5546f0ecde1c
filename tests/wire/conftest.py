"""The wire listener in a thread of the test process, on free ports: PLAINTEXT (User:ANONYMOUS)
and SASL_PLAINTEXT (SASL/PLAIN: a principal's name and token) for clients, and CONTROLLER
(SASL_PLAINTEXT, the role brokers reach). Its handlers run on the
listener's own threads, so the tests that use it see committed rows only (transactional_db)."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator

import pytest

from wire.listeners import CONTROLLER
from wire.runner import ThreadedListener
from wire.server import Limits, Listener, WireServer


@dataclasses.dataclass(frozen=True)
class RunningListener:
    host: str
    port: int  # PLAINTEXT
    sasl_port: int  # SASL_PLAINTEXT
    server: WireServer
    controller_port: int  # CONTROLLER: SASL_PLAINTEXT, the controller's role

    @property
    def bootstrap(self) -> str:
        return f"{self.host}:{self.port}"

    @property
    def sasl_bootstrap(self) -> str:
        return f"{self.host}:{self.sasl_port}"


def start_listener(
    limits: Limits | None = None, *, port_per_node: bool = False
) -> tuple[ThreadedListener, RunningListener]:
    server = WireServer(
        [
            Listener("PLAINTEXT", "127.0.0.1", 0),
            Listener("SASL_PLAINTEXT", "127.0.0.1", 0),
            Listener("SASL_PLAINTEXT", "127.0.0.1", 0, name="CONTROLLER", role=CONTROLLER),
        ],
        limits=limits or Limits(authentication_timeout_s=5, idle_timeout_s=60, threads=4),
        port_per_node=port_per_node,
    )
    runner = ThreadedListener(server)
    plain, sasl, controller = runner.start()
    return runner, RunningListener("127.0.0.1", plain.port, sasl.port, server, controller.port)


@pytest.fixture
def wire_listener(transactional_db: None) -> Iterator[RunningListener]:
    runner, running = start_listener()
    try:
        yield running
    finally:
        runner.stop()


@pytest.fixture
def wire_listener_port_per_node(transactional_db: None) -> Iterator[RunningListener]:
    """The listener with a port per node id (`serve_kafka --port-per-node`)."""
    runner, running = start_listener(port_per_node=True)
    try:
        yield running
    finally:
        runner.stop()
