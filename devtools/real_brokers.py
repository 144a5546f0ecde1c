"""Stock Kafka brokers under a stack (devtools.stack): the controller listener a `serve_kafka`
serves them, and the brokers that follow it. Shared by the tests, benchmarks and the campaign
that run real brokers under a distributed control plane."""

from __future__ import annotations

import contextlib
import socket
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path

from devtools.stack import PYTHON, Stack, free_port, wait_for
from stock_kafka.broker import KafkaBroker

DEFAULT_CONTROLLER_ID = 3000  # the quorum's one voter, as the brokers know it


def start_controller_listener(
    stack: Stack, name: str = "serve_kafka", *, client_ports: Mapping[str, int] | None = None
) -> int:
    """`serve_kafka` with one CONTROLLER listener (SASL_PLAINTEXT) on a free port: the port,
    once it listens. `client_ports`: client listeners beside it in the same process, as a
    deployment serves them (security protocol -> port: PLAINTEXT, SASL_PLAINTEXT)."""
    port = free_port()
    clients = [
        argument
        for protocol, client_port in (client_ports or {}).items()
        for argument in ("--listener", f"{protocol}://127.0.0.1:{client_port}")
    ]
    stack.spawn(
        name,
        [
            PYTHON,
            "manage.py",
            "serve_kafka",
            "--listener",
            f"CONTROLLER://127.0.0.1:{port}",
            *clients,
            "--listener-security-protocol-map",
            "CONTROLLER:SASL_PLAINTEXT",
        ],
    )

    def listening() -> bool:
        with contextlib.suppress(OSError):
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return True
        return False

    wait_for(listening, 60, f"{name} to listen")
    return port


def cluster_id_of(stack: Stack) -> str:
    return str(stack.sql("SELECT cluster_id FROM cp_cluster WHERE id = 1")[0][0])


def brokers_under(
    stack: Stack,
    port: int,
    work: Path,
    node_ids: Iterable[int],
    *,
    controller_id: int = DEFAULT_CONTROLLER_ID,
    principal: str = "broker",
    prefix: str = "broker",
    **options: object,
) -> list[KafkaBroker]:
    """One KafkaBroker per node id following the stack's controller listener on `port`, as
    `principal` (a broker principal of the stack); `options` go to KafkaBroker (heap,
    overrides, log_levels, log_dir_count, client_users)."""
    cluster_id = cluster_id_of(stack)
    given = options.pop("overrides", None)
    overrides = {**token_key_properties(stack), **(given if isinstance(given, Mapping) else {})}
    return [
        KafkaBroker(
            node_id=node,
            cluster_id=cluster_id,
            controller=f"127.0.0.1:{port}",
            controller_id=controller_id,
            principal=principal,
            token=stack.tokens[principal],
            work_dir=work / f"{prefix}-{node}",
            overrides=overrides,
            **options,  # type: ignore[arg-type]
        )
        for node in node_ids
    ]


def token_key_properties(stack: Stack) -> dict[str, str]:
    """The stack's delegation-token key as a broker's static `delegation.token.secret.key`:
    Kafka wants the same key on every broker and controller (a broker answers
    DescribeDelegationToken and checks token logins with its own)."""
    key = stack.token_secret_key
    return {"delegation.token.secret.key": key} if key else {}


@contextlib.contextmanager
def brokers_running(
    brokers: list[KafkaBroker], stop_timeout: float = 20
) -> Iterator[list[KafkaBroker]]:
    """Every broker started (in order), then stopped however the block ends."""
    try:
        for broker in brokers:
            broker.start()
        yield brokers
    finally:
        for broker in brokers:
            broker.stop(timeout=stop_timeout)
